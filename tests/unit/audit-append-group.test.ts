/**
 * How the file store keeps appends cheap without giving up the chain (decision 0035): appends asked
 * for together share one lock and one write, and the head this process wrote last is used only while
 * the file is exactly as it left it; anything another writer did in between is read from the file.
 * (Two real processes appending to one file: tests/unit/audit-log.test.ts.)
 */
import fs from 'node:fs';
import { appendFileSync, existsSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import * as lock from '../../src/audit/lock';
import { AuditLog, type AuditInput } from '../../src/audit/log';
import { AuditLogError, nextEntry } from '../../src/audit/chain';
import type { AuditEntry } from '../../src/audit/schema';
import { verifyAuditLog } from '../../src/audit/verify';

jest.setTimeout(60_000);

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'audit-group-'));
});
afterEach(() => {
  jest.restoreAllMocks();
  rmSync(dir, { recursive: true, force: true });
});

const actor = { id: 'u-1', role: 'teacher', tenant: 'school-a' };
const input = (i: number): AuditInput => ({ kind: 'tool_call', actor, server: 'notes', tool: 'add_note', args: { i }, workflowId: 'turn-1', toolCallId: `c${i}` });

function entriesOf(file: string): AuditEntry[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as AuditEntry);
}

it('appends asked for together take the lock once, each chained on the one before, in the order asked', async () => {
  const file = path.join(dir, 'audit.jsonl');
  const log = new AuditLog(file);
  await log.append(input(0));
  const locks = jest.spyOn(lock, 'lockAuditFile');

  const written = await Promise.all(Array.from({ length: 20 }, (_, i) => log.append(input(i + 1))));

  expect(locks).toHaveBeenCalledTimes(1);
  expect(written.map((e) => e.seq)).toEqual(Array.from({ length: 20 }, (_, i) => i + 2));
  expect(written.map((e) => e.args?.i)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
  for (let i = 1; i < written.length; i++) expect(written[i]?.prevHash).toBe(written[i - 1]?.hash);
  expect(entriesOf(file)).toEqual([expect.objectContaining({ seq: 1 }), ...written]);
  await expect(verifyAuditLog(file)).resolves.toMatchObject({ ok: true, entries: 21, headHash: written[19]?.hash });
  expect(existsSync(`${file}.lock`)).toBe(false);
});

it('chains onto what another writer appended since this process last wrote', async () => {
  const file = path.join(dir, 'audit.jsonl');
  const log = new AuditLog(file);
  const mine = await log.append(input(1));
  // Another worker's entry, appended as its process would (under its own lock, after reading the head).
  const { seq: _s, prevHash: _p, hash: _h, ...draft } = { ...mine, actor: { id: 'other', role: 'worker', tenant: 't' } };
  const theirs = nextEntry(draft, { seq: mine.seq, hash: mine.hash });
  appendFileSync(file, `${JSON.stringify(theirs)}\n`);

  const next = await log.append(input(2));
  expect(next).toMatchObject({ seq: 3, prevHash: theirs.hash });
  await expect(verifyAuditLog(file)).resolves.toMatchObject({ ok: true, entries: 3 });
});

it('re-reads a file replaced since its last write: a same-size forgery of the last entry is refused', async () => {
  const file = path.join(dir, 'audit.jsonl');
  const log = new AuditLog(file);
  await log.append(input(1));
  await log.append(input(2));
  // The same bytes but one (the size does not change): the last entry's outcome-free args, edited.
  const text = readFileSync(file, 'utf8');
  const forged = text.replace(/"args":\{"i":2\}(?=[^\n]*\n$)/, '"args":{"i":7}');
  expect(forged).not.toBe(text);
  expect(forged.length).toBe(text.length);
  writeFileSync(path.join(dir, 'forged'), forged);
  renameSync(path.join(dir, 'forged'), file);

  const err = (await log.append(input(3)).catch((e: unknown) => e)) as AuditLogError;
  expect(err).toBeInstanceOf(AuditLogError);
  expect(err.code).toBe('damaged_tail');
  expect(err.message).toMatch(/hash mismatch/);
  expect(readFileSync(file, 'utf8')).toBe(forged);
  expect(existsSync(`${file}.lock`)).toBe(false);
});

it('a group on a damaged tail fails as a whole, writes nothing, and the next append reads the file afresh', async () => {
  const file = path.join(dir, 'audit.jsonl');
  const log = new AuditLog(file);
  const first = await log.append(input(1));
  const intact = readFileSync(file, 'utf8');
  appendFileSync(file, 'garbage\n');

  const results = await Promise.allSettled([log.append(input(2)), log.append(input(3))]);
  for (const r of results) {
    expect(r.status).toBe('rejected');
    expect((r as PromiseRejectedResult).reason).toMatchObject({ code: 'damaged_tail' });
  }
  expect(readFileSync(file, 'utf8')).toBe(`${intact}garbage\n`);

  // Repaired (by whoever investigated): appends resume on the intact head.
  writeFileSync(file, intact);
  await expect(log.append(input(4))).resolves.toMatchObject({ seq: 2, prevHash: first.hash });
  await expect(verifyAuditLog(file)).resolves.toMatchObject({ ok: true, entries: 2 });
});

it('recreates a directory removed between appends', async () => {
  const file = path.join(dir, 'nested/audit.jsonl');
  const log = new AuditLog(file);
  await log.append(input(1));
  rmSync(path.join(dir, 'nested'), { recursive: true, force: true });

  await expect(log.append(input(2))).resolves.toMatchObject({ seq: 1 });
  await expect(verifyAuditLog(file)).resolves.toMatchObject({ ok: true, entries: 1 });
});

it('syncs in place while syncs are quick; after a slow one, the next go to the thread pool, where appends arriving meanwhile share a write', async () => {
  const file = path.join(dir, 'audit.jsonl');
  const log = new AuditLog(file);
  // The store times its syncs with performance.now: a clock that moves only when a sync is made slow,
  // so what counts as quick does not depend on how busy the machine is.
  let clock = 0;
  jest.spyOn(performance, 'now').mockImplementation(() => clock);
  const syncNow = fs.fdatasyncSync;
  const inPlace = jest.spyOn(fs, 'fdatasyncSync');
  const inPool = jest.spyOn(fs, 'fdatasync');
  await log.append(input(1));
  expect([inPlace.mock.calls.length, inPool.mock.calls.length]).toEqual([1, 0]);

  // A disk that took its time: this sync still happens in place, the next ones do not.
  inPlace.mockImplementationOnce((fd) => {
    syncNow(fd);
    clock += 5;
  });
  await log.append(input(2));
  const locks = jest.spyOn(lock, 'lockAuditFile');
  const first = log.append(input(3));
  // Asked while the first write's sync may still be in the pool: written together after it.
  await new Promise((r) => setImmediate(r));
  const later = [log.append(input(4)), log.append(input(5))];
  await Promise.all([first, ...later]);
  expect(inPlace).toHaveBeenCalledTimes(2);
  expect(inPool).toHaveBeenCalledTimes(2);
  expect(locks).toHaveBeenCalledTimes(2);
  await expect(verifyAuditLog(file)).resolves.toMatchObject({ ok: true, entries: 5 });
});
