/**
 * The school platform's one persistent store, shared by the five example servers (admin, payments,
 * comms, student, teacher), each running in its own process.
 *
 * - One JSON file (`--data FILE`, else env SCHOOL_DATA_FILE, else `.data/school.json` under the
 *   working directory). A file that does not exist is created and seeded with demo data; an existing
 *   one is kept, so state survives restarts.
 * - Every read-modify-write runs inside `transact()`: an in-process queue plus a cross-process lock
 *   (proper-lockfile: a `FILE.lock` directory, taken with mkdir, refreshed while held, considered
 *   stale 10 s after its holder stopped refreshing it, e.g. because it was SIGKILLed).
 * - Writes are atomic: temp file in the same directory, fsync, rename. A crash mid-write leaves the
 *   previous file, never a truncated one. Readers never need the lock.
 * - Every record carries `tenantId`; the servers only ever filter on the caller's tenant.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, open, readFile, rename, unlink } from 'node:fs/promises';
import * as path from 'node:path';
import * as lockfile from 'proper-lockfile';
import { createSeedData } from './seed';
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

function parse(text: string, file: string): SchoolData {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    // Never "repair" by overwriting: a broken file is someone's data.
    throw new Error(`${file} is not valid JSON (${(error as Error).message}); fix or remove it`);
  }
  return normalize(raw, file);
}

/**
 * Reads the store as it is on disk right now (no lock needed: writers replace the file atomically).
 * Throws when the file does not exist; tests use this to inspect what the servers did.
 */
export function readStore(file: string): SchoolData {
  return parse(readFileSync(file, 'utf8'), file);
}

export interface StoreLogger {
  (message: string): void;
}

/** How long a lock may go without a refresh before others take it over (proper-lockfile `stale`). */
const LOCK_STALE_MS = 10_000;

/** Retry schedule for a held lock: short waits, long enough overall to outlast a stale lock. */
const LOCK_RETRIES = { retries: 400, factor: 1.3, minTimeout: 5, maxTimeout: 60, randomize: true };

/** One queue per file per process, so two store objects on one file in one process also serialize. */
const queues = new Map<string, Promise<unknown>>();

export interface TransactionOutcome<T> {
  value: T;
  /** The data to write; leave out to write nothing (a pure read, or a replayed idempotent call). */
  next?: SchoolData;
}

export class SchoolStore {
  readonly file: string;

  constructor(
    file: string,
    private readonly log: StoreLogger = () => undefined,
  ) {
    this.file = path.resolve(file);
  }

  /** Creates and seeds the file when it does not exist yet. Safe to call from many processes at once. */
  async ensure(): Promise<void> {
    if (existsSync(this.file)) return;
    await this.transact(() => ({ value: undefined }));
  }

  /** The data as last parsed, and which version of the file it came from (inode, size, change time). */
  private cached?: { version: string; data: Readonly<SchoolData> };

  /**
   * The current data, read without the lock. Parsed again only when the file changed since the last
   * read (writers replace it, so a new version has a new inode); otherwise the copy parsed then, frozen,
   * since every reader shares it. A read-only call thus costs a stat, not a parse of the whole store.
   */
  async read(): Promise<Readonly<SchoolData>> {
    try {
      return await this.readCurrent();
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    await this.ensure();
    return await this.readCurrent();
  }

  private async readCurrent(): Promise<Readonly<SchoolData>> {
    // One open file: its stat and its content are the same version, whatever is renamed over it meanwhile.
    const handle = await open(this.file, 'r');
    try {
      const st = await handle.stat();
      const version = `${st.dev}:${st.ino}:${st.size}:${st.ctimeMs}`;
      if (this.cached?.version === version) return this.cached.data;
      const data = deepFreeze(parse(await handle.readFile('utf8'), this.file));
      this.cached = { version, data };
      return data;
    } finally {
      await handle.close();
    }
  }

  /**
   * Runs `fn` on the freshest data with the file locked against every other writer, in this process
   * and in others, then writes `next` (if given) atomically before releasing the lock. `fn` must be
   * synchronous: nothing else can happen between its read and its write. If `fn` throws, nothing is
   * written.
   */
  transact<T>(fn: (data: SchoolData) => TransactionOutcome<T>): Promise<T> {
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

  private async locked<T>(fn: (data: SchoolData) => TransactionOutcome<T>): Promise<T> {
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
      let data: SchoolData;
      let seeded = false;
      try {
        data = parse(await readFile(this.file, 'utf8'), this.file);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
        data = createSeedData();
        seeded = true;
      }
      const outcome = fn(data);
      const toWrite = outcome.next ?? (seeded ? data : undefined);
      if (toWrite) {
        if (compromised) throw new Error(`store lock lost before writing (${compromised.message}); nothing was written`);
        await this.writeAtomically(toWrite);
        if (seeded) this.log(`seeded a new store at ${this.file}`);
      }
      return outcome.value;
    } finally {
      await release().catch((error: Error) => this.log(`store unlock failed: ${error.message}`));
    }
  }

  /** Temp file in the same directory, flushed to disk, then renamed over the old file. */
  private async writeAtomically(data: SchoolData): Promise<void> {
    const tmp = `${this.file}.${process.pid}.${randomUUID()}.tmp`;
    try {
      const handle = await open(tmp, 'w');
      try {
        await handle.writeFile(`${JSON.stringify(data, null, 2)}\n`, 'utf8');
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(tmp, this.file);
    } catch (error) {
      await unlink(tmp).catch(() => undefined);
      throw error;
    }
  }
}

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
