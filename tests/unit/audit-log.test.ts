/**
 * The audit log against real files and real processes: chaining, tamper detection at the right line,
 * damaged tails, stale locks, concurrent appends from two child processes, and the CLI's exit codes.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  closeSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  truncateSync,
  utimesSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import * as ts from 'typescript';
import { canonicalJson, sha256Hex } from '../../src/audit/canonical';
import { argsDigest, AuditLog, type AuditInput } from '../../src/audit/log';
import { AuditLogError } from '../../src/audit/chain';
import { redactionToken } from '../../src/audit/redact';
import { computeEntryHash, GENESIS_HASH, type AuditEntry } from '../../src/audit/schema';
import { verifyAuditLog } from '../../src/audit/verify';

jest.setTimeout(60_000);

const REPO_ROOT = path.resolve(__dirname, '../..');

// ------------------------------------------------------------------ helpers

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'audit-log-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const actor = { id: 'u-teacher-1', role: 'teacher', tenant: 'school-a' };

function input(i: number, extra: Partial<AuditInput> = {}): AuditInput {
  return {
    kind: i % 2 === 1 ? 'tool_call' : 'tool_result',
    actor,
    server: 'admin',
    tool: 'find_user',
    args: { name: `student-${i}`, email: `s${i}@school.example` },
    outcome: i % 2 === 1 ? undefined : 'ok',
    workflowId: 'turn-s1-k1',
    runId: 'run-1',
    activityId: String(i),
    attempt: 1,
    toolCallId: `call-${i}`,
    ...extra,
  };
}

async function writeLog(count: number, file = path.join(dir, 'audit.jsonl')): Promise<{ file: string; entries: AuditEntry[] }> {
  const log = new AuditLog(file);
  const entries: AuditEntry[] = [];
  for (let i = 1; i <= count; i++) entries.push(await log.append(input(i)));
  return { file, entries };
}

function readLines(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  expect(text.endsWith('\n')).toBe(true);
  return text.slice(0, -1).split('\n');
}

function writeLines(file: string, lines: string[]): void {
  writeFileSync(file, lines.map((l) => `${l}\n`).join(''));
}

function rehash(entry: Record<string, unknown>): Record<string, unknown> {
  return { ...entry, hash: computeEntryHash(entry) };
}

function lineAt(lines: string[], index: number): string {
  const line = lines[index];
  if (line === undefined) throw new Error(`no line ${index + 1}`);
  return line;
}

// ------------------------------------------------------------------ chain

describe('AuditLog.append', () => {
  it('writes a dense, hash-chained JSON Lines log that verifies', async () => {
    const { file, entries } = await writeLog(5);
    const lines = readLines(file);
    expect(lines).toHaveLength(5);
    let prev = GENESIS_HASH;
    lines.forEach((line, i) => {
      const e = JSON.parse(line) as AuditEntry;
      expect(e).toEqual(entries[i]);
      expect(e.seq).toBe(i + 1);
      expect(e.prevHash).toBe(prev);
      expect(e.hash).toBe(computeEntryHash(e));
      expect(Object.keys(e)[0]).toBe('seq');
      expect(Object.keys(e).at(-1)).toBe('hash');
      prev = e.hash;
    });
    await expect(verifyAuditLog(file)).resolves.toEqual({ ok: true, entries: 5, headHash: entries[4]?.hash });
  });

  it('fills `at`, redacts args, digests the redacted args and never writes the secrets', async () => {
    const file = path.join(dir, 'nested/dirs/audit.jsonl');
    const log = new AuditLog(file);
    const before = Date.now();
    const args = { student: 'Bob', card: { cardNumber: '4111111111111111', cvv: '737' }, note: 'receipt to bob@family.example' };
    const entry = await log.append({
      kind: 'tool_call',
      actor,
      server: 'payments',
      tool: 'process_payment',
      args,
      detail: 'charging card for bob@family.example',
    });
    expect(Date.parse(entry.at)).toBeGreaterThanOrEqual(before - 1);
    expect(entry.args).toEqual({
      student: 'Bob',
      card: { cardNumber: redactionToken('4111111111111111'), cvv: redactionToken('737') },
      note: `receipt to ${redactionToken('bob@family.example')}`,
    });
    expect(entry.argsDigest).toBe(argsDigest(args));
    expect(entry.detail).toBe(`charging card for ${redactionToken('bob@family.example')}`);
    // Without the entry's hex digests, which hold any three digits (such as the CVV's) once in a while.
    const text = readFileSync(file, 'utf8').replace(/"(hash|prevHash|argsDigest)":"[0-9a-f]{64}"/g, '');
    for (const secret of ['4111111111111111', '737', 'bob@family.example']) expect(text).not.toContain(secret);
  });

  it('stores exactly the arguments it digested, even an own "__proto__" key', async () => {
    const file = path.join(dir, 'a.jsonl');
    const args = JSON.parse('{"__proto__": {"password": "p"}, "ok": 1}') as Record<string, unknown>;
    const entry = await new AuditLog(file).append({ ...input(1), args });
    expect(Object.keys(entry.args ?? {})).toEqual(['__proto__', 'ok']);
    expect(entry.argsDigest).toBe(sha256Hex(canonicalJson(entry.args)));
    expect(readFileSync(file, 'utf8')).toContain(`"args":{"__proto__":{"password":"${redactionToken('p')}"},"ok":1}`);
    await expect(verifyAuditLog(file)).resolves.toMatchObject({ ok: true, entries: 1 });
  });

  it('can keep only the digest of the arguments', async () => {
    const log = new AuditLog(path.join(dir, 'a.jsonl'), { storeArgs: false });
    const entry = await log.append(input(1));
    expect(entry.args).toBeUndefined();
    expect(entry.argsDigest).toBe(argsDigest(input(1).args ?? {}));
  });

  it('truncates long detail to 500 characters after redacting it', async () => {
    const log = new AuditLog(path.join(dir, 'a.jsonl'));
    const entry = await log.append({ kind: 'denial', actor, outcome: 'denied', detail: `${'x'.repeat(495)} mail@x.io ${'y'.repeat(600)}` });
    expect(entry.detail).toHaveLength(500);
    expect(entry.detail?.endsWith('…')).toBe(true);
    expect(entry.detail).not.toContain('mail@x');
  });

  it('accepts an explicit time', async () => {
    const log = new AuditLog(path.join(dir, 'a.jsonl'));
    expect((await log.append({ ...input(1), at: new Date(Date.UTC(2026, 0, 2)) })).at).toBe('2026-01-02T00:00:00.000Z');
    expect((await log.append({ ...input(2), at: '2026-01-02T03:04:05+02:00' })).at).toBe('2026-01-02T03:04:05+02:00');
  });

  it('rejects invalid input without writing it and without echoing values', async () => {
    const file = path.join(dir, 'a.jsonl');
    const log = new AuditLog(file);
    const bad = { ...input(1), kind: 'bogus', args: { password: 'hunter2-secret' } } as unknown as AuditInput;
    const err = (await log.append(bad).catch((e: unknown) => e)) as AuditLogError;
    expect(err).toBeInstanceOf(AuditLogError);
    expect(err.code).toBe('invalid_entry');
    expect(err.message).toMatch(/^invalid audit entry: kind: /);
    expect(err.message).not.toContain('hunter2');
    await expect(log.append({ ...input(1), at: 'yesterday' })).rejects.toThrow(/at: /);
    await expect(log.append({ ...input(1), actor: { ...actor, id: '' } })).rejects.toThrow(/actor\.id: /);
    expect(existsSync(file) ? readFileSync(file, 'utf8') : '').toBe('');
    // The log still works afterwards.
    expect((await log.append(input(1))).seq).toBe(1);
  });

  it('continues the chain across instances and leaves no lock behind', async () => {
    const { file, entries } = await writeLog(2);
    const again = await new AuditLog(file).append(input(3));
    expect(again.seq).toBe(3);
    expect(again.prevHash).toBe(entries[1]?.hash);
    expect(readdirSync(dir)).toEqual(['audit.jsonl']);
  });

  it('serializes concurrent appends within one process, across instances', async () => {
    const file = path.join(dir, 'a.jsonl');
    const a = new AuditLog(file);
    const b = new AuditLog(file);
    const results = await Promise.all(Array.from({ length: 30 }, (_, i) => (i % 2 ? a : b).append(input(i + 1))));
    expect(results.map((e) => e.seq).sort((x, y) => x - y)).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
    await expect(verifyAuditLog(file)).resolves.toMatchObject({ ok: true, entries: 30 });
  });

  it('finds the last entry when it is far larger than the first tail read', async () => {
    const file = path.join(dir, 'a.jsonl');
    const log = new AuditLog(file);
    await log.append(input(1));
    const big = await log.append({ ...input(2), args: { essay: 'lorem ipsum '.repeat(30_000) } });
    const next = await log.append(input(3));
    expect(next.seq).toBe(3);
    expect(next.prevHash).toBe(big.hash);
    await expect(verifyAuditLog(file)).resolves.toMatchObject({ ok: true, entries: 3 });
  });

  it('reads only the tail: appends to a 4 GiB (sparse) file whose start is not even JSON', async () => {
    const { file, entries } = await writeLog(1);
    const last = readFileSync(file);
    const fd = openSync(file, 'w');
    try {
      writeSync(fd, Buffer.concat([Buffer.from('\n'), last]), 0, last.length + 1, 4 * 2 ** 30);
    } finally {
      closeSync(fd);
    }
    // Only meaningful where holes are supported (ext4, xfs, apfs, tmpfs...); elsewhere the test
    // would just be writing 4 GiB of zeros.
    if (statSync(file).blocks * 512 > 64 * 1024 * 1024) {
      console.warn('skipping: the file system does not support sparse files');
      return;
    }
    // A whole-file read fails outright here (Node buffers stop at 2 GiB); the tail read does not.
    const next = await new AuditLog(file).append(input(2));
    expect(next.seq).toBe(2);
    expect(next.prevHash).toBe(entries[0]?.hash);
  });

  it('takes over a stale lock left by a crashed process', async () => {
    const { file } = await writeLog(1);
    const lockDir = `${file}.lock`;
    mkdirSync(lockDir);
    const old = new Date(Date.now() - 60_000);
    utimesSync(lockDir, old, old);
    const started = Date.now();
    expect((await new AuditLog(file).append(input(2))).seq).toBe(2);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(existsSync(lockDir)).toBe(false);
  });

  describe('refuses to extend a damaged tail', () => {
    it.each([
      ['a truncated last line', (file: string) => truncateSync(file, statSync(file).size - 10), /not newline-terminated/],
      ['a missing final newline', (file: string) => truncateSync(file, statSync(file).size - 1), /not newline-terminated/],
      ['a garbage last line', (file: string) => appendFileSync(file, 'garbage\n'), /not valid JSON/],
      ['an empty last line', (file: string) => appendFileSync(file, '\n'), /empty line/],
      [
        'an edited last entry',
        (file: string) => {
          const lines = readLines(file);
          writeLines(file, [...lines.slice(0, -1), lineAt(lines, lines.length - 1).replace('"ok"', '"error"')]);
        },
        /hash mismatch/,
      ],
    ])('%s', async (_name, damage, reason) => {
      const { file } = await writeLog(2);
      damage(file);
      const before = readFileSync(file);
      const err = (await new AuditLog(file).append(input(3)).catch((e: unknown) => e)) as AuditLogError;
      expect(err).toBeInstanceOf(AuditLogError);
      expect(err.code).toBe('damaged_tail');
      expect(err.message).toMatch(reason);
      expect(readFileSync(file)).toEqual(before);
      expect(existsSync(`${file}.lock`)).toBe(false);
    });
  });
});

// ------------------------------------------------------------------ tampering

describe('verifyAuditLog', () => {
  it('accepts a missing file (and says so) and an empty one', async () => {
    await expect(verifyAuditLog(path.join(dir, 'none.jsonl'))).resolves.toEqual({ ok: true, entries: 0, headHash: GENESIS_HASH, missing: true });
    writeFileSync(path.join(dir, 'empty.jsonl'), '');
    await expect(verifyAuditLog(path.join(dir, 'empty.jsonl'))).resolves.toEqual({ ok: true, entries: 0, headHash: GENESIS_HASH });
  });

  type Tamper = (lines: string[], entries: AuditEntry[]) => string[];
  const parse = (line: string): Record<string, unknown> => JSON.parse(line) as Record<string, unknown>;

  const cases: Array<[string, Tamper, { line: number; seq?: number; reason: RegExp; entries: number }]> = [
    [
      'a field of entry 3 edited',
      (lines) => lines.map((l, i) => (i === 2 ? JSON.stringify({ ...parse(l), outcome: 'error' }) : l)),
      { line: 3, seq: 3, reason: /^hash mismatch: entry was modified$/, entries: 2 },
    ],
    [
      'entry 3 edited by hand in the text',
      (lines) => lines.map((l, i) => (i === 2 ? l.replace('student-3', 'student-9') : l)),
      { line: 3, seq: 3, reason: /^hash mismatch: entry was modified$/, entries: 2 },
    ],
    [
      'entry 3 deleted',
      (lines) => lines.filter((_, i) => i !== 2),
      { line: 3, seq: 4, reason: /^seq 4 follows 2: entries deleted/, entries: 2 },
    ],
    [
      'entries 2 and 3 swapped',
      (lines) => [lineAt(lines, 0), lineAt(lines, 2), lineAt(lines, 1), ...lines.slice(3)],
      { line: 2, seq: 3, reason: /^seq 3 follows 1: entries deleted or reordered$/, entries: 1 },
    ],
    [
      'entry 3 edited and its own hash recomputed',
      (lines) => lines.map((l, i) => (i === 2 ? JSON.stringify(rehash({ ...parse(l), outcome: 'error' })) : l)),
      { line: 4, seq: 4, reason: /^prevHash does not match entry 3: entries reordered or removed/, entries: 3 },
    ],
    [
      'a forged entry inserted with a valid hash, chained to entry 2',
      (lines, entries) => {
        const forged = rehash({ ...parse(lineAt(lines, 2)), tool: 'refund_payment', prevHash: entries[1]?.hash });
        return [...lines.slice(0, 2), JSON.stringify(forged), ...lines.slice(2)];
      },
      { line: 4, seq: 3, reason: /^seq 3 follows 3: entries reordered or duplicated$/, entries: 3 },
    ],
    [
      'a forged entry inserted as-is (hash not recomputed)',
      (lines) => [...lines.slice(0, 2), JSON.stringify({ ...parse(lineAt(lines, 2)), tool: 'refund_payment' }), ...lines.slice(2)],
      { line: 3, seq: 3, reason: /^hash mismatch/, entries: 2 },
    ],
    [
      'the file truncated in the middle of line 4',
      (lines) => [...lines.slice(0, 3), lineAt(lines, 3).slice(0, 40)],
      { line: 4, reason: /^not valid JSON \(last line is not newline-terminated: truncated/, entries: 3 },
    ],
    [
      'the first entry deleted',
      (lines) => lines.slice(1),
      { line: 1, seq: 2, reason: /^seq 2 is the first entry, expected 1: entries deleted from the start$/, entries: 0 },
    ],
    [
      'the log re-based: first entry renumbered and rehashed',
      (lines) => [JSON.stringify(rehash({ ...parse(lineAt(lines, 1)), seq: 1 })), ...lines.slice(2)],
      { line: 1, seq: 1, reason: /^prevHash of the first entry is not the genesis value/, entries: 0 },
    ],
    [
      'a garbage line in the middle',
      (lines) => [...lines.slice(0, 2), '{"seq": 3,', ...lines.slice(2)],
      { line: 3, reason: /^not valid JSON$/, entries: 2 },
    ],
    [
      'an empty line in the middle',
      (lines) => [...lines.slice(0, 2), '', ...lines.slice(2)],
      { line: 3, reason: /^not valid JSON \(empty line\)$/, entries: 2 },
    ],
    [
      'an unknown field smuggled into entry 2 with the hash recomputed',
      (lines) => lines.map((l, i) => (i === 1 ? JSON.stringify(rehash({ ...parse(l), approvedBy: 'mallory' })) : l)),
      { line: 2, seq: 2, reason: /^not a valid audit entry: .*approvedBy/, entries: 1 },
    ],
    [
      'a field of entry 2 removed',
      (lines) => lines.map((l, i) => (i === 1 ? JSON.stringify({ ...parse(l), outcome: undefined }) : l)),
      { line: 2, seq: 2, reason: /^hash mismatch/, entries: 1 },
    ],
  ];

  it.each(cases)('detects %s at the right line', async (_name, tamper, expected) => {
    const { file, entries } = await writeLog(5);
    const lines = readLines(file);
    const tampered = tamper(lines, entries);
    const last = tampered.at(-1) ?? '';
    // A tamper that ends mid-line is written without the final newline, as a real truncation is.
    writeFileSync(file, tampered.join('\n') + (last.startsWith('{') && last.endsWith('}') ? '\n' : ''));
    const result = await verifyAuditLog(file);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.firstBad.line).toBe(expected.line);
    expect(result.firstBad.seq).toBe(expected.seq);
    expect(result.firstBad.reason).toMatch(expected.reason);
    expect(result.entries).toBe(expected.entries);
  });

  it('reports a final line without its newline even when it parses', async () => {
    const { file } = await writeLog(3);
    truncateSync(file, statSync(file).size - 1);
    await expect(verifyAuditLog(file)).resolves.toEqual({
      ok: false,
      entries: 2,
      firstBad: { line: 3, seq: 3, reason: 'last line is not newline-terminated: truncated or an interrupted write' },
    });
  });

  it('streams a long log', async () => {
    const { file, entries } = await writeLog(300);
    await expect(verifyAuditLog(file)).resolves.toEqual({ ok: true, entries: 300, headHash: entries[299]?.hash });
  });
});

// ------------------------------------------------------------------ real processes

/**
 * Transpiles src/audit and the CLI into a private directory under node_modules/.cache (so the output
 * still resolves the repo's node_modules): the child processes then run the current sources, not
 * whatever dist/ was built from last, and nothing else in the tree has to compile.
 */
function buildAuditModules(): string {
  const outDir = path.join(REPO_ROOT, 'node_modules/.cache', `audit-test-${process.pid}-${randomBytes(4).toString('hex')}`);
  const sources = [
    ...readdirSync(path.join(REPO_ROOT, 'src/audit'))
      .filter((f) => f.endsWith('.ts'))
      .map((f) => path.join('src/audit', f)),
    // The pure modules the audit code uses (request shape, issue rendering).
    ...readdirSync(path.join(REPO_ROOT, 'src/shared'))
      .filter((f) => f.endsWith('.ts'))
      .map((f) => path.join('src/shared', f)),
    // The PostgreSQL store's transaction helpers.
    ...readdirSync(path.join(REPO_ROOT, 'src/pg'))
      .filter((f) => f.endsWith('.ts'))
      .map((f) => path.join('src/pg', f)),
    'src/cli/audit-verify.ts',
  ];
  for (const rel of sources) {
    const { outputText, diagnostics } = ts.transpileModule(readFileSync(path.join(REPO_ROOT, rel), 'utf8'), {
      fileName: rel,
      reportDiagnostics: true,
      compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true },
    });
    if (diagnostics && diagnostics.length > 0) {
      throw new Error(`cannot transpile ${rel}: ${ts.flattenDiagnosticMessageText(diagnostics[0]?.messageText ?? '', '\n')}`);
    }
    const target = path.join(outDir, rel.replace(/\.ts$/, '.js'));
    mkdirSync(path.dirname(target), { recursive: true });
    writeFileSync(target, outputText);
  }
  return outDir;
}

interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(args: string[], env: NodeJS.ProcessEnv = {}): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: REPO_ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 45_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

describe('with real processes', () => {
  let outDir: string;
  beforeAll(() => {
    outDir = buildAuditModules();
  });
  afterAll(() => rmSync(outDir, { recursive: true, force: true }));

  // Both children wait for the same instant so their 50 appends really overlap.
  const APPENDER = `
    const { AuditLog } = require(process.env.AUDIT_MODULE);
    const log = new AuditLog(process.env.AUDIT_FILE);
    const who = process.env.AUDIT_WHO;
    setTimeout(async () => {
      try {
        for (let i = 1; i <= Number(process.env.AUDIT_COUNT || 50); i++) {
          await log.append({ kind: 'tool_call', actor: { id: who, role: 'worker', tenant: 't' }, tool: 'echo', args: { i, email: who + '@x.io' } });
        }
      } catch (err) {
        console.error(err && err.message);
        process.exit(1);
      }
    }, Math.max(0, Number(process.env.AUDIT_START_AT) - Date.now()));
  `;

  it('two processes appending 50 entries each produce 100 dense, chained entries', async () => {
    const file = path.join(dir, 'shared/audit.jsonl');
    const env = { AUDIT_MODULE: path.join(outDir, 'src/audit/index.js'), AUDIT_FILE: file, AUDIT_START_AT: String(Date.now() + 1_000) };
    const [a, b] = await Promise.all([
      run(['-e', APPENDER], { ...env, AUDIT_WHO: 'worker-a' }),
      run(['-e', APPENDER], { ...env, AUDIT_WHO: 'worker-b' }),
    ]);
    expect(a).toMatchObject({ code: 0, stderr: '' });
    expect(b).toMatchObject({ code: 0, stderr: '' });

    const entries = readLines(file).map((l) => JSON.parse(l) as AuditEntry);
    expect(entries.map((e) => e.seq)).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
    for (const who of ['worker-a', 'worker-b']) {
      // Each process's own entries are in its own order: no append was lost or duplicated.
      expect(entries.filter((e) => e.actor.id === who).map((e) => e.args?.i)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    }
    await expect(verifyAuditLog(file)).resolves.toEqual({ ok: true, entries: 100, headHash: entries[99]?.hash });
    expect(existsSync(`${file}.lock`)).toBe(false);
  });

  it('verifies a log while another process appends to it, without false alarms', async () => {
    const file = path.join(dir, 'live.jsonl');
    const appender = run(['-e', APPENDER], {
      AUDIT_MODULE: path.join(outDir, 'src/audit/index.js'),
      AUDIT_FILE: file,
      AUDIT_WHO: 'worker-a',
      AUDIT_COUNT: '300',
      AUDIT_START_AT: '0',
    });
    let done = false;
    void appender.finally(() => {
      done = true;
    });
    const seen: number[] = [];
    while (!done) {
      const result = await verifyAuditLog(file);
      if (!result.ok) throw new Error(`verify failed during appends: ${JSON.stringify(result.firstBad)}`);
      seen.push(result.entries);
    }
    expect(await appender).toMatchObject({ code: 0, stderr: '' });
    expect(seen).toEqual([...seen].sort((a, b) => a - b));
    expect(seen.length).toBeGreaterThan(1);
    await expect(verifyAuditLog(file)).resolves.toMatchObject({ ok: true, entries: 300 });
  });

  describe('audit-verify CLI', () => {
    const cli = (): string => path.join(outDir, 'src/cli/audit-verify.js');

    it('prints OK with the head hash and exits 0 for an intact log', async () => {
      const { file, entries } = await writeLog(4);
      const res = await run([cli(), file]);
      expect(res).toEqual({ code: 0, stdout: `OK: 4 entries, head ${entries[3]?.hash}\n`, stderr: '' });
    });

    it('exits 0 for a missing file and says it does not exist', async () => {
      const file = path.join(dir, 'none.jsonl');
      const res = await run([cli(), file]);
      expect(res.code).toBe(0);
      expect(res.stdout).toBe(`OK: 0 entries, head ${GENESIS_HASH} (${file} does not exist)\n`);
    });

    it('prints BROKEN with line, seq and reason and exits 1 for a tampered log', async () => {
      const { file } = await writeLog(4);
      const lines = readLines(file);
      writeLines(file, lines.map((l, i) => (i === 2 ? l.replace('student-3', 'student-7') : l)));
      const res = await run([cli(), file]);
      expect(res).toEqual({ code: 1, stdout: 'BROKEN at line 3 (seq 3): hash mismatch: entry was modified\n', stderr: '' });
    });

    it('omits the seq when the broken line has none', async () => {
      const { file } = await writeLog(2);
      appendFileSync(file, 'not json\n');
      const res = await run([cli(), file]);
      expect(res).toEqual({ code: 1, stdout: 'BROKEN at line 3: not valid JSON\n', stderr: '' });
    });

    it.each([
      ['no argument', []],
      ['two arguments', ['a.jsonl', 'b.jsonl']],
      ['an unknown option', ['--fast']],
    ])('exits 2 with usage for %s', async (_name, args) => {
      const res = await run([cli(), ...args]);
      expect(res.code).toBe(2);
      expect(res.stdout).toBe('');
      expect(res.stderr).toMatch(/usage: audit-verify <audit-log\.jsonl \| postgres:\/\/\.\.\.>/);
    });

    it('exits 2 when the file cannot be read', async () => {
      const res = await run([cli(), dir]);
      expect(res.code).toBe(2);
      expect(res.stderr).toMatch(/cannot read/);
    });
  });
});
