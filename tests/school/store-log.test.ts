/**
 * The store's log (examples/servers/school/wal.ts, decision 0047): a write appends only what it
 * changed, readers catch up line by line, the log is folded into a new snapshot once it outgrows it,
 * and what a crash can leave (a line cut short, the log of a replaced snapshot) is never read as data.
 */
import { appendFileSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { produce } from 'immer';
import { readStore, SchoolStore, type SchoolData, type User } from '../../examples/servers/school/store';
import { apply, diff, type Op } from '../../examples/servers/school/wal';
import { tempDir } from './helpers';

const tmp = tempDir('school-log-');
afterAll(() => tmp.remove());

const now = new Date().toISOString();
const student = (i: number): User => ({ id: `u-log${i}`, tenantId: 'demo', name: `Log ${i}`, role: 'student', createdAt: now });
const addUser = (store: SchoolStore, i: number) => store.transact((data) => ({ value: undefined, next: produce(data, (d) => void d.users.push(student(i))) }));
const logLines = (file: string): Array<{ g: string; seq: number; ops: Op[] }> =>
  readFileSync(`${file}.wal`, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as { g: string; seq: number; ops: Op[] });

test('a write appends one line with only what it changed; the snapshot stays; other readers catch up from the log', async () => {
  const file = tmp.file('append/school.json');
  const writer = new SchoolStore(file);
  const reader = new SchoolStore(file);
  await writer.ensure();
  const snapshot = readFileSync(file, 'utf8');
  const first = await reader.read();
  await addUser(writer, 1);
  await writer.transact((data) => ({
    value: undefined,
    next: produce(data, (d) => {
      const invoice = d.invoices.find((i) => i.id === 'INV-1001');
      if (invoice) invoice.status = 'paid';
    }),
  }));
  expect(readFileSync(file, 'utf8')).toBe(snapshot);
  const lines = logLines(file);
  expect(lines.map((l) => l.seq)).toEqual([1, 2]);
  expect(lines[0]?.ops).toEqual([['a', 'users', first.users.length, student(1)]]);
  expect(lines[1]?.ops).toEqual([['a', 'invoices', first.invoices.findIndex((i) => i.id === 'INV-1001'), expect.objectContaining({ id: 'INV-1001', status: 'paid' })]]);
  const after = await reader.read();
  expect(after.users.at(-1)).toEqual(student(1));
  expect(after.invoices.find((i) => i.id === 'INV-1001')?.status).toBe('paid');
  // What did not change is the object read before: shared, not parsed again.
  expect(after.classes).toBe(first.classes);
  expect(Object.isFrozen(after.users.at(-1))).toBe(true);
  expect(readStore(file)).toEqual(after);
  // A transaction that changes nothing writes nothing.
  await writer.transact((data) => ({ value: undefined, next: produce(data, () => undefined) }));
  expect(logLines(file)).toHaveLength(2);
});

test('the log is folded into a new snapshot once it outgrows it; readers on either side of the fold agree', async () => {
  const file = tmp.file('fold/school.json');
  const writer = new SchoolStore(file, () => undefined, 2_000);
  const reader = new SchoolStore(file);
  await writer.ensure();
  const snapshotBytes = statSync(file).size;
  const oldId = (JSON.parse(readFileSync(file, 'utf8')) as { walId: string }).walId;
  await reader.read();
  let folded = false;
  for (let i = 0; i < 200 && !folded; i++) {
    await addUser(writer, i);
    folded = (JSON.parse(readFileSync(file, 'utf8')) as { walId: string }).walId !== oldId;
  }
  expect(folded).toBe(true);
  // It waited for the log to pass the snapshot's size, not just the threshold.
  expect(statSync(file).size).toBeGreaterThan(snapshotBytes);
  const users = readStore(file).users.filter((u) => u.id.startsWith('u-log'));
  expect((await reader.read()).users.filter((u) => u.id.startsWith('u-log'))).toEqual(users);
  // A new log after the fold, numbered from 1 under the new snapshot's id.
  await addUser(writer, 1_000);
  const newId = (JSON.parse(readFileSync(file, 'utf8')) as { walId: string }).walId;
  expect(logLines(file).map((l) => [l.g, l.seq])).toEqual([[newId, 1]]);
  expect((await reader.read()).users.at(-1)?.id).toBe('u-log1000');
});

test('a line cut short by a crash is not read, and the next writer cuts it off before appending', async () => {
  const file = tmp.file('torn/school.json');
  const store = new SchoolStore(file);
  await store.ensure();
  await addUser(store, 1);
  const whole = readFileSync(`${file}.wal`, 'utf8');
  const id = (JSON.parse(readFileSync(file, 'utf8')) as { walId: string }).walId;
  appendFileSync(`${file}.wal`, `{"g":"${id}","seq":2,"ops":[["a","users",99,{"id":"u-half`);
  const reader = new SchoolStore(file);
  expect((await reader.read()).users.some((u) => u.id === 'u-half')).toBe(false);
  expect(readStore(file).users.at(-1)?.id).toBe('u-log1');
  await addUser(new SchoolStore(file), 2);
  const lines = logLines(file);
  expect(readFileSync(`${file}.wal`, 'utf8').startsWith(whole)).toBe(true);
  expect(lines.map((l) => l.seq)).toEqual([1, 2]);
  expect((await reader.read()).users.slice(-2).map((u) => u.id)).toEqual(['u-log1', 'u-log2']);
});

test("a log that is not the snapshot's own (the snapshot replaced by hand) is ignored, then replaced at the next write", async () => {
  const file = tmp.file('stale/school.json');
  const store = new SchoolStore(file);
  await store.ensure();
  await addUser(store, 1);
  // By hand: the data as it was before the log, without the log's id.
  const { users, ...rest } = readStore(file);
  writeFileSync(file, JSON.stringify({ ...rest, users: users.filter((u) => u.id !== 'u-log1') }));
  expect(readStore(file).users.some((u) => u.id === 'u-log1')).toBe(false);
  expect((await store.read()).users.some((u) => u.id === 'u-log1')).toBe(false);
  // A snapshot without an id gets one at the next write (a new snapshot), and a log of its own after that.
  await addUser(store, 2);
  await addUser(store, 3);
  const id = (JSON.parse(readFileSync(file, 'utf8')) as { walId?: string }).walId;
  expect(id).toEqual(expect.any(String));
  expect(logLines(file).map((l) => [l.g, l.seq])).toEqual([[id, 1]]);
  expect(readStore(file).users.filter((u) => u.id.startsWith('u-log')).map((u) => u.id)).toEqual(['u-log2', 'u-log3']);
});

test('a damaged log is reported, never read as data', async () => {
  const file = tmp.file('damaged/school.json');
  const store = new SchoolStore(file);
  await store.ensure();
  await addUser(store, 1);
  writeFileSync(`${file}.wal`, 'not json\n');
  await expect(new SchoolStore(file).read()).rejects.toThrow(/not JSON/);
  const id = (JSON.parse(readFileSync(file, 'utf8')) as { walId: string }).walId;
  writeFileSync(`${file}.wal`, `${JSON.stringify({ g: id, seq: 2, ops: [] })}\n`);
  expect(() => readStore(file)).toThrow(/line 2 follows line 0/);
});

test('diff and apply: by reference, maps and arrays, cuts and replacements round-trip', () => {
  const base = Object.freeze({ a: [1, 2, 3], m: { x: 1, y: 2 }, t: 'one', same: [9] }) as unknown as SchoolData;
  const next = { a: [1, 5], m: { x: 1, z: 3 }, t: 'two', same: (base as unknown as { same: number[] }).same } as unknown as SchoolData;
  const ops = diff(base, next);
  expect(ops).toEqual([['a', 'a', 1, 5], ['n', 'a', 2], ['m', 'm', 'z', 3], ['d', 'm', 'y'], ['t', 't', 'two']]);
  const applied = apply(base, ops, Object.freeze);
  expect(applied).toEqual(next);
  expect((applied as unknown as { same: number[] }).same).toBe((base as unknown as { same: number[] }).same);
  expect(Object.isFrozen(applied)).toBe(true);
  // A copy (nothing shared) goes as the whole array, the shorter line.
  const copy = { ...base, a: Array.from({ length: 40 }, (_, i) => i) } as unknown as SchoolData;
  expect(diff(base, copy)).toEqual([['t', 'a', (copy as unknown as { a: number[] }).a]]);
});
