/**
 * The school platform's one persistent store, shared by the five example servers (admin, payments,
 * comms, student, teacher), each running in its own process.
 *
 * - One JSON file and its log (`--data FILE`, else env SCHOOL_DATA_FILE, else `.data/school.json` under the
 *   working directory). A file that does not exist is created and seeded with demo data; an existing
 *   one is kept, so state survives restarts.
 * - Every read-modify-write runs inside `transact()`: an in-process queue plus a cross-process lock
 *   (proper-lockfile: a `FILE.lock` directory, taken with mkdir, refreshed while held, considered
 *   stale 10 s after its holder stopped refreshing it, e.g. because it was SIGKILLed).
 * - A write appends what the transaction changed, one line, to the log beside the file (`FILE.wal`,
 *   wal.ts; decision 0047), and syncs it; a reader applies the lines it has not read yet. Once the log
 *   outgrows the file, the next write folds both into a new file (temp file in the same directory,
 *   fsync, rename) and starts a new log. A crash leaves the previous file and at most one line cut
 *   short, which nobody reads. Readers never need the lock.
 * - Every record carries `tenantId`; the servers only ever filter on the caller's tenant.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, open, rename, stat, unlink } from 'node:fs/promises';
import * as path from 'node:path';
import * as lockfile from 'proper-lockfile';
import { createSeedData } from './seed';
import { appendLine, completeLines, diff, logLine, readLogAfter, replay, type LogPosition } from './wal';
import type { SchoolData } from './records';

export type * from './records';

const COLLECTIONS = [
  'users',
  'classes',
  'enrolments',
  'grades',
  'timetable',
  'homework',
  'submissions',
  'attendance',
  'invoices',
  'transactions',
  'outbox',
] as const;

export { createSeedData, SEED } from './seed';

// ------------------------------------------------------------------ file access

/** `--data` wins, then SCHOOL_DATA_FILE, then `.data/school.json`; relative paths are against cwd. */
export function resolveDataFile(flag?: string, env: NodeJS.ProcessEnv = process.env): string {
  return path.resolve(flag || env.SCHOOL_DATA_FILE || '.data/school.json');
}

/** Fills collections an older or hand-edited file lacks, so code can rely on the full shape. */
function normalize(raw: unknown, file: string): SchoolData {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    throw new Error(`${file} does not hold a school store (expected a JSON object)`);
  }
  const data = raw as Partial<SchoolData> & Record<string, unknown>;
  for (const key of COLLECTIONS) {
    if (data[key] === undefined) (data as Record<string, unknown>)[key] = [];
    else if (!Array.isArray(data[key])) throw new Error(`${file}: "${key}" must be an array`);
  }
  if (data.idempotency === undefined || data.idempotency === null) data.idempotency = {};
  data.version = 1;
  return data as SchoolData;
}

function parse(text: string, file: string): { data: SchoolData; walId: string | undefined } {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    // Never "repair" by overwriting: a broken file is someone's data.
    throw new Error(`${file} is not valid JSON (${(error as Error).message}); fix or remove it`);
  }
  // The id of the log that extends this snapshot (none in a file written by hand or before the log).
  let walId: string | undefined;
  if (raw !== null && typeof raw === 'object' && 'walId' in raw) {
    const { walId: id, ...rest } = raw as { walId: unknown };
    walId = typeof id === 'string' ? id : undefined;
    raw = rest;
  }
  return { data: normalize(raw, file), walId };
}

/**
 * Reads the store as it is on disk right now: the snapshot and its log (no lock needed: the snapshot
 * is replaced atomically and the log only grows by whole lines). Throws when the file does not exist;
 * tests use this to inspect what the servers did.
 */
export function readStore(file: string): SchoolData {
  const { data, walId } = parse(readFileSync(file, 'utf8'), file);
  let log: Buffer;
  try {
    log = readFileSync(`${file}.wal`);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return data;
    throw error;
  }
  return replay(data, walId, 0, completeLines(log).lines, (v) => v, `${file}.wal`).data;
}

export interface StoreLogger {
  (message: string): void;
}

/** How long a lock may go without a refresh before others take it over (proper-lockfile `stale`). */
const LOCK_STALE_MS = 10_000;

/** Retry schedule for a held lock: short waits, long enough overall to outlast a stale lock. */
const LOCK_RETRIES = { retries: 400, factor: 1.3, minTimeout: 5, maxTimeout: 60, randomize: true };

/** By default the log is folded into a new snapshot past 256 KiB (and past the snapshot's size). */
const COMPACT_AT_BYTES = 256 * 1024;

/** One queue per file per process, so two store objects on one file in one process also serialize. */
const queues = new Map<string, Promise<unknown>>();

export interface TransactionOutcome<T> {
  value: T;
  /**
   * The data to write; leave out to write nothing (a pure read, or a replayed idempotent call). Make
   * it with immer's `produce` from the data given, so the records it did not touch are the same
   * objects and the log line holds only the ones it did.
   */
  next?: SchoolData;
}

/** What this process last read: the snapshot (which version of the file), its log, and how far into it. */
interface Seen extends LogPosition {
  version: string;
  snapshotBytes: number;
  /** The log on disk extends another snapshot: ignored, and replaced at the next write. */
  stale: boolean;
  data: Readonly<SchoolData>;
}

export class SchoolStore {
  readonly file: string;
  readonly wal: string;
  private seen?: Seen;

  constructor(
    file: string,
    private readonly log: StoreLogger = () => undefined,
    /** The log is folded into a new snapshot once it is larger than this and than the snapshot. */
    private readonly compactAtBytes = COMPACT_AT_BYTES,
  ) {
    this.file = path.resolve(file);
    this.wal = `${this.file}.wal`;
  }

  /** Creates and seeds the file when it does not exist yet. Safe to call from many processes at once. */
  async ensure(): Promise<void> {
    if (existsSync(this.file)) return;
    await this.transact(() => ({ value: undefined }));
  }

  /**
   * The current data, read without the lock: the snapshot parsed when it changed (a compaction or a
   * seed replaces it, with a new inode), then the log lines not read yet. Frozen, since every reader
   * shares it; a read with nothing new costs two stats.
   */
  async read(): Promise<Readonly<SchoolData>> {
    try {
      return (await this.current()).data;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    await this.ensure();
    return (await this.current()).data;
  }

  private async current(): Promise<Seen> {
    for (let attempt = 1; ; attempt++) {
      const st = await stat(this.file);
      const base = this.seen?.version === versionOf(st) ? this.seen : await this.loadSnapshot();
      const caught = await this.tail(base);
      if (caught) return (this.seen = caught);
      // The log was replaced under us (a compaction between our two reads): from the snapshot again.
      this.seen = undefined;
      if (attempt >= 20) throw new Error(`${this.file}: the store kept changing under every read`);
    }
  }

  private async loadSnapshot(): Promise<Seen> {
    // One open file: its stat and its content are the same version, whatever is renamed over it meanwhile.
    const handle = await open(this.file, 'r');
    try {
      const st = await handle.stat();
      const { data, walId } = parse(await handle.readFile('utf8'), this.file);
      return { version: versionOf(st), snapshotBytes: st.size, walId, seq: 0, offset: 0, stale: false, data: deepFreeze(data) };
    } finally {
      await handle.close();
    }
  }

  /** `seen` with the log's new complete lines applied; undefined when the log is not the one it read. */
  private async tail(seen: Seen): Promise<Seen | undefined> {
    const read = await readLogAfter(this.wal, seen);
    if (!read) return undefined;
    if (!read.exists) return { ...seen, stale: false };
    if (read.lines.length === 0) return seen;
    const next = replay(seen.data, seen.walId, seen.seq, read.lines, deepFreeze, this.wal);
    if (next.stale) return { ...seen, stale: true };
    return { ...seen, data: next.data, seq: next.seq, offset: seen.offset + read.bytes };
  }

  /**
   * Runs `fn` on the freshest data with the file locked against every other writer, in this process
   * and in others, then writes what `next` changed (if given) before releasing the lock: one line
   * appended to the log, or, once the log outgrows the snapshot, a new snapshot. `fn` must be
   * synchronous: nothing else can happen between its read and its write. The data it gets is frozen;
   * if it throws, nothing is written.
   */
  transact<T>(fn: (data: Readonly<SchoolData>) => TransactionOutcome<T>): Promise<T> {
    const previous = queues.get(this.file) ?? Promise.resolve();
    const run = previous.then(
      () => this.locked(fn),
      () => this.locked(fn),
    );
    const settled = run.catch(() => undefined);
    queues.set(this.file, settled);
    void settled.then(() => {
      if (queues.get(this.file) === settled) queues.delete(this.file);
    });
    return run;
  }

  private async locked<T>(fn: (data: Readonly<SchoolData>) => TransactionOutcome<T>): Promise<T> {
    await mkdir(path.dirname(this.file), { recursive: true });
    let compromised: Error | undefined;
    const release = await lockfile.lock(this.file, {
      realpath: false, // the data file may not exist yet: we lock its name
      stale: LOCK_STALE_MS,
      retries: LOCK_RETRIES,
      onCompromised: (error) => {
        // The default throws from a timer (and kills the process); refuse to write instead.
        compromised = error;
        this.log(`store lock compromised: ${error.message}`);
      },
    });
    try {
      let seen: Seen | undefined;
      try {
        seen = await this.current();
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      }
      const data = seen?.data ?? deepFreeze(createSeedData());
      const outcome = fn(data);
      const next = outcome.next ?? (seen ? undefined : data);
      if (next) {
        if (compromised) throw new Error(`store lock lost before writing (${compromised.message}); nothing was written`);
        if (!seen) {
          await this.snapshot(next);
          this.log(`seeded a new store at ${this.file}`);
        } else await this.write(seen, next);
      }
      return outcome.value;
    } finally {
      await release().catch((error: Error) => this.log(`store unlock failed: ${error.message}`));
    }
  }

  /** Appends what `next` changed to the log, or folds everything into a new snapshot when the log has outgrown it. */
  private async write(seen: Seen, next: SchoolData): Promise<void> {
    const ops = diff(seen.data, next);
    if (ops.length === 0) return;
    const line = Buffer.from(logLine({ g: seen.walId ?? '', seq: seen.seq + 1, ops }));
    if (seen.walId === undefined || seen.offset + line.length > Math.max(this.compactAtBytes, seen.snapshotBytes)) {
      await this.snapshot(next);
      return;
    }
    // A log of another snapshot goes; text past the last complete line is a write a crash cut short.
    await appendLine(this.wal, line, seen.stale ? 0 : seen.offset, seen.stale);
    this.seen = { ...seen, seq: seen.seq + 1, offset: (seen.stale ? 0 : seen.offset) + line.length, stale: false, data: deepFreeze(next) };
  }

  /** A new snapshot of `data` with a new log id (temp file in the same directory, flushed, renamed over the old); the old log goes. */
  private async snapshot(data: SchoolData): Promise<void> {
    const walId = randomBytes(6).toString('hex');
    const tmp = `${this.file}.${process.pid}.${randomUUID()}.tmp`;
    try {
      const handle = await open(tmp, 'w');
      try {
        await handle.writeFile(`${JSON.stringify({ ...data, walId }, null, 2)}\n`, 'utf8');
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(tmp, this.file);
    } catch (error) {
      await unlink(tmp).catch(() => undefined);
      throw error;
    }
    // After the rename: a reader of the new snapshot ignores the old log (another id) until it goes.
    await unlink(this.wal).catch(() => undefined);
    const st = await stat(this.file);
    this.seen = { version: versionOf(st), snapshotBytes: st.size, walId, seq: 0, offset: 0, stale: false, data: deepFreeze(data) };
  }
}

const versionOf = (st: { dev: number; ino: number; size: number; ctimeMs: number }): string => `${st.dev}:${st.ino}:${st.size}:${st.ctimeMs}`;

/** Freezes a parsed JSON value through and through: a reader that mutates the shared copy throws. */
function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value as Record<string, unknown>)) deepFreeze(v);
  }
  return value;
}

// ------------------------------------------------------------------ ids

/** A short random id with a prefix, unique among `taken`. */
export function newId(prefix: string, taken: ReadonlyArray<{ id: string }>, upper = false): string {
  for (;;) {
    const raw = randomBytes(5).toString('hex');
    const id = `${prefix}${upper ? raw.toUpperCase() : raw}`;
    if (!taken.some((r) => r.id === id)) return id;
  }
}

/** The next sequential invoice id (INV-1003, …), unique across tenants. */
export function nextInvoiceId(invoices: ReadonlyArray<{ id: string }>): string {
  let max = 1000;
  for (const invoice of invoices) {
    const match = /^INV-(\d+)$/.exec(invoice.id);
    if (match?.[1]) max = Math.max(max, Number(match[1]));
  }
  return `INV-${max + 1}`;
}
