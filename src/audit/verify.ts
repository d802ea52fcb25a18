import { open, stat } from 'node:fs/promises';
import { lockAuditFile } from './lock';
import { AuditEntrySchema, computeEntryHash, GENESIS_HASH } from './schema';
import { describeIssues } from '../shared/issues';

export interface AuditBreak {
  /** 1-based line number in the file (for a PostgreSQL chain: the position of the row, in seq order). */
  line: number;
  /** The seq the broken line claims, when it has one. */
  seq?: number;
  reason: string;
}

export type AuditVerifyResult =
  | { ok: true; entries: number; headHash: string; missing?: true }
  | { ok: false; entries: number; firstBad: AuditBreak };

// A corrupted file may have no newline at all; do not buffer gigabytes looking for one.
const MAX_LINE_BYTES = 64 * 1024 * 1024;
const NEWLINE = 0x0a;

export interface ChainState {
  seq: number;
  hash: string;
}

/**
 * Streams an audit log and checks every line: JSON, schema, dense seq from 1, prevHash equal to the
 * previous entry's hash, and the hash recomputed from the entry. Stops at the first break, since
 * every later line is unverifiable once the chain is cut. `entries` counts the lines verified before it.
 *
 * A missing file is valid (nothing was logged yet) and flagged `missing`; an empty one is valid too.
 * The chain proves that no entry before the head was changed; detecting a rewritten or truncated
 * tail needs the head hash recorded somewhere else (the CLI prints it for that purpose).
 */
export async function verifyAuditLog(file: string): Promise<AuditVerifyResult> {
  const size = await snapshotSize(file);
  if (size === undefined) return { ok: true, entries: 0, headHash: GENESIS_HASH, missing: true };
  if (size === 0) return { ok: true, entries: 0, headHash: GENESIS_HASH };
  const fh = await open(file, 'r');

  const state: ChainState = { seq: 0, hash: GENESIS_HASH };
  let line = 0;
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  // Every line before the bad one was verified.
  const fail = (bad: AuditBreak): AuditVerifyResult => ({ ok: false, entries: bad.line - 1, firstBad: bad });

  // autoClose off: the finally block below owns the handle, on every path.
  const stream = fh.createReadStream({ start: 0, end: size - 1, highWaterMark: 64 * 1024, autoClose: false });
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      let start = 0;
      for (let nl = chunk.indexOf(NEWLINE, start); nl !== -1; nl = chunk.indexOf(NEWLINE, start)) {
        const piece = chunk.subarray(start, nl);
        const bytes = pending.length > 0 ? Buffer.concat([...pending, piece]) : piece;
        pending = [];
        pendingBytes = 0;
        start = nl + 1;
        line += 1;
        const bad = checkLine(bytes.toString('utf8'), line, state);
        if (bad) return fail(bad);
      }
      if (start < chunk.length) {
        pending.push(chunk.subarray(start));
        pendingBytes += chunk.length - start;
        if (pendingBytes > MAX_LINE_BYTES) {
          return fail({ line: line + 1, reason: `line is longer than ${MAX_LINE_BYTES} bytes: not an audit entry` });
        }
      }
    }
  } finally {
    stream.destroy();
    await fh.close().catch(() => undefined);
  }

  if (pending.length > 0) {
    // Appends always end with a newline, so a last line without one was cut short (or is a partial
    // write from a crash). Report it even when what is left happens to parse.
    line += 1;
    const bad = checkLine(Buffer.concat(pending).toString('utf8'), line, state);
    const note = 'last line is not newline-terminated: truncated or an interrupted write';
    return fail(bad ? { ...bad, reason: `${bad.reason} (${note})` } : { line, seq: state.seq, reason: note });
  }
  return { ok: true, entries: line, headHash: state.hash };
}

// Verifiers wait briefly, then go ahead without the lock: see snapshotSize.
const VERIFY_LOCK_RETRIES = { retries: 10, factor: 1.5, minTimeout: 5, maxTimeout: 200, randomize: true };

/**
 * The length of the file with no append half-written, or undefined when it does not exist. Appends
 * hold the lock from before their write to after their fsync, so the size read under the lock ends
 * on a complete line; only bytes up to it are verified, and appends arriving meanwhile are left for
 * the next run. The lock is held for one stat, so appenders barely notice. Without write access to
 * the directory (a copied log, a read-only mount) there is no lock to take, and an append in flight
 * may then show as an unterminated last line.
 */
async function snapshotSize(file: string): Promise<number | undefined> {
  const lock = await lockAuditFile(file, VERIFY_LOCK_RETRIES).catch(() => undefined);
  try {
    return (await stat(file)).size;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  } finally {
    await lock?.release().catch(() => undefined);
  }
}

/** Checks one line against the chain so far; advances `state` and returns undefined when it is good. */
export function checkLine(text: string, line: number, state: ChainState): AuditBreak | undefined {
  if (text.trim() === '') return { line, reason: 'not valid JSON (empty line)' };
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return { line, reason: 'not valid JSON' };
  }
  const claimed = typeof raw === 'object' && raw !== null ? (raw as Record<string, unknown>).seq : undefined;
  const at = (reason: string): AuditBreak =>
    typeof claimed === 'number' && Number.isSafeInteger(claimed) ? { line, seq: claimed, reason } : { line, reason };

  const parsed = AuditEntrySchema.safeParse(raw);
  if (!parsed.success) {
    return at(`not a valid audit entry: ${describeIssues(parsed.error.issues.slice(0, 1), '')[0] ?? 'schema mismatch'}`);
  }
  const entry = parsed.data;

  const expected = state.seq + 1;
  if (entry.seq !== expected) {
    if (state.seq === 0) return at(`seq ${entry.seq} is the first entry, expected 1: entries deleted from the start`);
    if (entry.seq > expected) return at(`seq ${entry.seq} follows ${state.seq}: entries deleted or reordered`);
    return at(`seq ${entry.seq} follows ${state.seq}: entries reordered or duplicated`);
  }
  if (entry.prevHash !== state.hash) {
    if (state.seq === 0) return at('prevHash of the first entry is not the genesis value: entries removed from the start');
    return at(
      `prevHash does not match entry ${state.seq}: entries reordered or removed, or entry ${state.seq} was rewritten`,
    );
  }
  // Hash what is on disk (the raw object), not the schema's output, so nothing can hide in a
  // difference between the two.
  if (computeEntryHash(raw as Record<string, unknown>) !== entry.hash) return at('hash mismatch: entry was modified');

  state.seq = entry.seq;
  state.hash = entry.hash;
  return undefined;
}
