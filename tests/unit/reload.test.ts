import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { reloadableFile, type ReloadableFile } from '../../src/config/reload';

const ROOT = path.resolve(__dirname, '../..');

/** Hot reload of a real file: edits apply, a bad edit keeps the last good version and says why. */
let dir: string;
const open: ReloadableFile<unknown>[] = [];

beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'dmh-reload-'));
});
afterEach(() => {
  for (const f of open.splice(0)) f.close();
  rmSync(dir, { recursive: true, force: true });
});

function capture() {
  const lines: Array<{ level: 'info' | 'warn'; msg: string; obj: Record<string, unknown> }> = [];
  return {
    lines,
    logger: {
      info: (obj: object, msg: string) => lines.push({ level: 'info', msg, obj: obj as Record<string, unknown> }),
      warn: (obj: object, msg: string) => lines.push({ level: 'warn', msg, obj: obj as Record<string, unknown> }),
    },
  };
}

/** A loader that accepts `{"limit": <positive number>}` and says what is wrong otherwise. */
function loadLimit(file: string): { limit: number } {
  const raw = JSON.parse(readFileSync(file, 'utf8')) as { limit?: unknown };
  if (typeof raw.limit !== 'number' || raw.limit <= 0) throw new Error(`${path.basename(file)}: limit: must be a positive number`);
  return { limit: raw.limit };
}

function track<T>(f: ReloadableFile<T>): ReloadableFile<T> {
  open.push(f as ReloadableFile<unknown>);
  return f;
}

async function until(what: string, predicate: () => boolean, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test('loads at once and throws for a file that does not load, as a start must fail', () => {
  const file = path.join(dir, 'limits.json');
  writeFileSync(file, '{"limit": 0}');
  expect(() => reloadableFile({ file, what: 'limits', load: loadLimit, logger: capture().logger, pollMs: 0 })).toThrow(/limit: must be a positive number/);
});

test('an edit applies; the same content again is no change; a bad edit keeps the last good version and says why', async () => {
  const file = path.join(dir, 'limits.json');
  writeFileSync(file, '{"limit": 1}');
  const log = capture();
  const applied: Array<[number, number]> = [];
  const f = track(
    reloadableFile({ file, what: 'limits', load: loadLimit, apply: (next, prev) => void applied.push([prev.limit, next.limit]), logger: log.logger, pollMs: 0 }),
  );
  expect(f.current()).toEqual({ limit: 1 });

  writeFileSync(file, '{"limit": 2}');
  expect(await f.reload()).toEqual({ kind: 'changed', value: { limit: 2 }, previous: { limit: 1 } });
  expect(f.current()).toEqual({ limit: 2 });
  expect(log.lines.at(-1)).toMatchObject({ level: 'info', msg: 'limits reloaded' });

  writeFileSync(file, '{ "limit" : 2 }\n');
  expect(await f.reload()).toEqual({ kind: 'unchanged' });

  writeFileSync(file, '{"limit": -5}');
  const rejected = await f.reload();
  expect(rejected).toEqual({ kind: 'rejected', reason: 'limits.json: limit: must be a positive number' });
  expect(f.current()).toEqual({ limit: 2 });
  expect(log.lines.at(-1)).toMatchObject({ level: 'warn', msg: 'limits not reloaded: the last good version stays in force', obj: { reason: 'limits.json: limit: must be a positive number' } });

  rmSync(file);
  expect((await f.reload()).kind).toBe('rejected');
  expect(f.current()).toEqual({ limit: 2 });
  expect(applied).toEqual([[1, 2]]);
});

test('a failing apply keeps the old value in force', async () => {
  const file = path.join(dir, 'limits.json');
  writeFileSync(file, '{"limit": 1}');
  const log = capture();
  const f = track(
    reloadableFile({
      file,
      what: 'limits',
      load: loadLimit,
      apply: (next) => {
        if (next.limit > 10) throw new Error('limit above what this process supports');
      },
      logger: log.logger,
      pollMs: 0,
    }),
  );
  writeFileSync(file, '{"limit": 11}');
  expect(await f.reload()).toEqual({ kind: 'rejected', reason: 'limit above what this process supports' });
  expect(f.current()).toEqual({ limit: 1 });
  expect(log.lines.at(-1)?.msg).toBe('limits not applied: the last good version stays in force');
});

test('polling sees an edit saved by rename (as editors and mounted volumes do) without being asked', async () => {
  const file = path.join(dir, 'limits.json');
  writeFileSync(file, '{"limit": 1}');
  const f = track(reloadableFile({ file, what: 'limits', load: loadLimit, logger: capture().logger, pollMs: 25 }));
  const temp = path.join(dir, '.limits.json.tmp');
  writeFileSync(temp, '{"limit": 3}');
  renameSync(temp, file);
  await until('the edit to apply', () => f.current().limit === 3);
});

test('SIGHUP reloads every file given, in a real process', async () => {
  const a = path.join(dir, 'a.json');
  const b = path.join(dir, 'b.json');
  writeFileSync(a, '{"limit": 1}');
  writeFileSync(b, '{"limit": 1}');
  // A process of its own: jest's sandboxed `process` does not receive signals.
  const script = `
    const { readFileSync } = require('node:fs');
    const { reloadableFile, reloadOnSighup } = require(${JSON.stringify(path.join(ROOT, 'dist/src/config/reload.js'))});
    const load = (f) => JSON.parse(readFileSync(f, 'utf8'));
    const quiet = { info() {}, warn() {} };
    const files = [${JSON.stringify(a)}, ${JSON.stringify(b)}].map((file) => reloadableFile({ file, what: file, load, logger: quiet, pollMs: 0 }));
    reloadOnSighup(files);
    const show = () => process.stdout.write(JSON.stringify(files.map((f) => f.current().limit)) + '\\n');
    show();
    setInterval(show, 20);
  `;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  try {
    await until('the child to start', () => out.includes('[1,1]'));
    writeFileSync(a, '{"limit": 4}');
    writeFileSync(b, '{"limit": 5}');
    // Without a signal nothing changes (polling is off).
    await new Promise((r) => setTimeout(r, 100));
    expect(out).not.toContain('[4,5]');
    child.kill('SIGHUP');
    await until('both files to reload', () => out.includes('[4,5]'));
    expect(child.exitCode).toBeNull();
  } finally {
    child.kill('SIGKILL');
  }
});
