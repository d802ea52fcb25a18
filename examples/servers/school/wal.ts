/**
 * The store's change log (decision 0047): what each transaction changed, one JSON line per
 * transaction, appended to `FILE.wal` beside the snapshot `FILE`. A write costs its own changes, not
 * the whole store, and a reader catches up by reading only the lines it has not seen.
 *
 * - Each line is `{"g": id, "seq": n, "ops": [...]}`: `id` names the snapshot the log extends (its
 *   `walId`), n counts from 1. A log of another snapshot (left by a crash during compaction, or beside a
 *   snapshot replaced by hand) is ignored, and the next writer starts a new one. A reader whose next
 *   line is not its log's next one starts over from the snapshot.
 * - Text after the last newline is a write cut short by a crash: never read, and cut off by the next
 *   writer before it appends.
 *
 * Changes are found by reference (`diff`): a transaction's new data shares every record it did not
 * touch with the data it started from (immer's `produce` does that), so only touched records compare
 * unequal and go into the line.
 */
import { open, unlink } from 'node:fs/promises';

/** One change to a top-level field: an array element set (index = length appends), an array cut to a length, a map entry set or deleted, or the field replaced. */
export type Op =
  | ['a', string, number, unknown]
  | ['n', string, number]
  | ['m', string, string, unknown]
  | ['d', string, string]
  | ['t', string, unknown];

export interface LogLine {
  /** The log's id: the `walId` of the snapshot it extends. */
  g: string;
  seq: number;
  ops: Op[];
}

type Data = Record<string, unknown>;

const isMap = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** What turns `base` into `next`, field by field; unchanged references are skipped without a look inside. */
export function diff(before: object, after: object): Op[] {
  const [base, next] = [before as Data, after as Data];
  const ops: Op[] = [];
  for (const key of Object.keys(next)) {
    const [was, now] = [base[key], next[key]];
    if (was === now) continue;
    if (Array.isArray(was) && Array.isArray(now)) {
      const changed: Op[] = [];
      for (let i = 0; i < now.length; i++) if (now[i] !== was[i]) changed.push(['a', key, i, now[i]]);
      if (now.length < was.length) changed.push(['n', key, now.length]);
      // Mostly new (a copy, not a change): the whole array is the shorter line.
      if (changed.length > Math.max(8, now.length / 2)) ops.push(['t', key, now]);
      else ops.push(...changed);
    } else if (isMap(was) && isMap(now)) {
      for (const k of Object.keys(now)) if (now[k] !== was[k]) ops.push(['m', key, k, now[k]]);
      for (const k of Object.keys(was)) if (!(k in now)) ops.push(['d', key, k]);
    } else {
      ops.push(['t', key, now]);
    }
  }
  for (const key of Object.keys(base)) if (!(key in next)) ops.push(['t', key, undefined]);
  return ops;
}

/** `data` with `ops` applied: a new object, sharing what the ops did not touch; new parts frozen when `freeze`. */
export function apply<T extends object>(data: T, ops: readonly Op[], freeze: <V>(v: V) => V): T {
  const out: Data = { ...(data as Data) };
  const copied = new Set<string>();
  const own = <V>(key: string, copy: (v: V) => V): V => {
    if (!copied.has(key)) {
      out[key] = copy(out[key] as V);
      copied.add(key);
    }
    return out[key] as V;
  };
  for (const op of ops) {
    switch (op[0]) {
      case 'a': {
        const arr = own<unknown[]>(op[1], (v) => (Array.isArray(v) ? [...v] : []));
        arr[op[2]] = freeze(op[3]);
        break;
      }
      case 'n':
        own<unknown[]>(op[1], (v) => (Array.isArray(v) ? [...v] : [])).length = op[2];
        break;
      case 'm':
        own<Data>(op[1], (v) => (isMap(v) ? { ...v } : {}))[op[2]] = freeze(op[3]);
        break;
      case 'd':
        delete own<Data>(op[1], (v) => (isMap(v) ? { ...v } : {}))[op[2]];
        break;
      case 't':
        if (op[2] === undefined) delete out[op[1]];
        else out[op[1]] = freeze(op[2]);
        copied.delete(op[1]);
        break;
    }
  }
  for (const key of copied) freeze(out[key]);
  return freeze(out) as unknown as T;
}

export const logLine = (line: LogLine): string => `${JSON.stringify(line)}\n`;

/**
 * The complete lines at the start of `chunk` (log bytes from a line's start), parsed, and how many
 * bytes they take. Bytes after the last newline are a write cut short (or still under way): left.
 */
export function completeLines(chunk: Buffer): { lines: LogLine[]; bytes: number } {
  const bytes = chunk.lastIndexOf(10) + 1;
  if (bytes === 0) return { lines: [], bytes: 0 };
  return { lines: chunk.subarray(0, bytes - 1).toString('utf8').split('\n').map((row) => JSON.parse(row) as LogLine), bytes };
}

/**
 * `data` (the snapshot of log `walId`) with the log's `lines` applied in order. Lines of another log
 * are none of its own (`stale`: the whole log is of another snapshot); a gap in the numbering is damage.
 */
export function replay<T extends object>(data: T, walId: string | undefined, seq: number, lines: readonly LogLine[], freeze: <V>(v: V) => V, where: string): { data: T; seq: number; stale: boolean } {
  let out = data;
  let at = seq;
  for (const line of lines) {
    if (line.g !== walId) {
      if (at === 0 && line === lines[0]) return { data, seq, stale: true };
      throw new Error(`${where}: a line of log ${String(line.g)} after lines of log ${String(walId)}`);
    }
    if (line.seq !== at + 1) throw new Error(`${where}: line ${line.seq} follows line ${at}`);
    out = apply(out, line.ops, freeze);
    at = line.seq;
  }
  return { data: out, seq: at, stale: false };
}

/** Where a reader is in a log: the snapshot's log id, the last line it applied, and the bytes of complete lines it read. */
export interface LogPosition {
  walId: string | undefined;
  seq: number;
  offset: number;
}

/**
 * The complete lines of the log file `wal` past `at`: `exists: false` when there is no log (nothing
 * written since the snapshot), undefined when the log is not the one `at` read (replaced since: shorter,
 * or its next line is not the next one of the same log).
 */
export async function readLogAfter(wal: string, at: LogPosition): Promise<{ lines: LogLine[]; bytes: number; exists: boolean } | undefined> {
  let handle;
  try {
    handle = await open(wal, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    return at.offset === 0 ? { lines: [], bytes: 0, exists: false } : undefined;
  }
  try {
    const { size } = await handle.stat();
    if (size < at.offset) return undefined;
    const chunk = Buffer.alloc(size - at.offset);
    if (chunk.length > 0) await handle.read(chunk, 0, chunk.length, at.offset);
    let read: ReturnType<typeof completeLines>;
    try {
      read = completeLines(chunk);
    } catch (error) {
      // From the log's start, a line that does not parse is damage; further in, a log replaced under us.
      if (at.offset === 0) throw new Error(`${wal} holds a line that is not JSON (${(error as Error).message}); fix or remove it`);
      return undefined;
    }
    const first = read.lines[0];
    if (at.offset > 0 && first && (first.g !== at.walId || first.seq !== at.seq + 1)) return undefined;
    return { ...read, exists: true };
  } finally {
    await handle.close();
  }
}

/**
 * Appends `line` to the log file `wal` after its first `keep` bytes (anything past them is a write a
 * crash cut short) and syncs it; `replace` drops the log there first (one of another snapshot).
 */
export async function appendLine(wal: string, line: Buffer, keep: number, replace: boolean): Promise<void> {
  if (replace) await unlink(wal).catch(() => undefined);
  const handle = await open(wal, 'a');
  try {
    const { size } = await handle.stat();
    if (size > keep) await handle.truncate(keep);
    await handle.write(line);
    await handle.sync();
  } finally {
    await handle.close();
  }
}
