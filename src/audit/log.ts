import { mkdir, open, type FileHandle } from 'node:fs/promises';
import * as path from 'node:path';
import type { AuditRequest } from '../shared/audit';
import { describeIssues } from '../shared/issues';
import { canonicalJson, sha256Hex } from './canonical';
import { APPEND_LOCK_RETRIES, lockAuditFile, type HeldLock } from './lock';
import {
  DEFAULT_REDACTION,
  parseRedactionRules,
  redact,
  redactText,
  type RedactOptions,
  type RedactionRules,
} from './redact';
import { AuditEntrySchema, computeEntryHash, GENESIS_HASH, MAX_DETAIL_CHARS, type AuditEntry } from './schema';

/**
 * What a caller supplies: the request of src/shared/audit.ts, optionally with its time. `args` are
 * the raw tool arguments; they are redacted here, and only the redacted copy and its digest are ever
 * written. All redaction of the trail happens in this module.
 */
export type AuditInput = AuditRequest & {
  /** Defaults to now. */
  at?: string | Date;
};

/** Where the workflow and activities send audit requests; the AuditLog is one. */
export interface AuditSink {
  append(entry: AuditInput): Promise<unknown>;
}

export interface AuditLogOptions {
  /** Defaults to DEFAULT_REDACTION. */
  redaction?: RedactionRules;
  /** Turns redaction tokens into HMACs; see src/audit/redact.ts for when that matters. */
  redactionKey?: string | Uint8Array;
  /** Whether the redacted arguments are written next to their digest (default true). */
  storeArgs?: boolean;
}

export type AuditLogErrorCode = 'invalid_entry' | 'damaged_tail' | 'locked' | 'lock_compromised';

export class AuditLogError extends Error {
  constructor(
    readonly code: AuditLogErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'AuditLogError';
  }
}

/**
 * The `argsDigest` an entry gets for these raw arguments: sha256 hex of the canonical JSON of their
 * redacted copy. Lets a caller (an approval screen, a support tool) find a call's entries without
 * the log ever holding the unredacted values.
 */
export function argsDigest(
  args: Record<string, unknown>,
  rules: RedactionRules = DEFAULT_REDACTION,
  opts: RedactOptions = {},
): string {
  return sha256Hex(canonicalJson(redact(args, rules, opts)));
}

/** The fields a caller controls, validated before the lock is taken so the lock is held briefly. */
const DraftSchema = AuditEntrySchema.omit({ seq: true, prevHash: true, hash: true });

const TAIL_CHUNK_BYTES = 4096;
const MAX_TAIL_CHUNK_BYTES = 1 << 20;
const NEWLINE = 0x0a;

/**
 * An append-only, hash-chained JSON Lines audit log (one entry per line; see verify.ts for checks).
 *
 * Several processes may append to the same file: each append holds a proper-lockfile lock
 * (`<file>.lock`) while it reads the last entry and writes the next one, and within one process
 * appends to the same file are queued, so lock retries are only spent on other processes.
 *
 * An append whose tail line is damaged (truncated, edited, not JSON) is refused rather than chained
 * onto: extending a broken chain would bury the evidence under new, valid-looking entries.
 */
export class AuditLog implements AuditSink {
  readonly file: string;
  private readonly rules: RedactionRules;
  private readonly redactOpts: RedactOptions;
  private readonly storeArgs: boolean;

  constructor(file: string, opts: AuditLogOptions = {}) {
    this.file = path.resolve(file);
    // Validated once here so a bad rules object fails at start-up, not on the first tool call.
    this.rules = opts.redaction ? parseRedactionRules(opts.redaction) : DEFAULT_REDACTION;
    this.redactOpts = opts.redactionKey === undefined ? {} : { key: opts.redactionKey };
    this.storeArgs = opts.storeArgs ?? true;
  }

  async append(input: AuditInput): Promise<AuditEntry> {
    const draft = this.prepare(input);
    return serialize(this.file, () => this.appendLocked(draft));
  }

  private prepare(input: AuditInput): Omit<AuditEntry, 'seq' | 'prevHash' | 'hash'> {
    const { at, args: rawArgs, detail, ...rest } = input;
    // Requests arrive as JSON from workflow payloads: only an object of arguments is recorded.
    const args = rawArgs !== null && typeof rawArgs === 'object' && !Array.isArray(rawArgs) ? rawArgs : undefined;
    const redactedArgs = args === undefined ? undefined : redact(args, this.rules, this.redactOpts);
    const candidate = {
      ...rest,
      at: at === undefined ? new Date().toISOString() : at instanceof Date ? at.toISOString() : at,
      argsDigest: redactedArgs === undefined ? undefined : sha256Hex(canonicalJson(redactedArgs)),
      args: this.storeArgs ? redactedArgs : undefined,
      // Redact before truncating: a cut-off address would no longer match the e-mail pattern.
      detail: detail === undefined ? undefined : truncate(redactText(detail, this.rules, this.redactOpts), MAX_DETAIL_CHARS),
    };
    const result = DraftSchema.safeParse(candidate);
    if (!result.success) {
      // zod messages name paths and expected types, never the offending values.
      throw new AuditLogError('invalid_entry', `invalid audit entry: ${describeIssues(result.error.issues, '(entry)').join('; ')}`);
    }
    // The candidate's args, not zod's copy: zod rebuilds records by assignment, which turns an own
    // "__proto__" key (JSON.parse makes those) into a prototype and drops it from the digested args.
    // The args are already our own copy; the actor is copied (by zod) so a caller mutating its object
    // while the append waits for the lock cannot change what is written.
    return { ...candidate, actor: result.data.actor } as Omit<AuditEntry, 'seq' | 'prevHash' | 'hash'>;
  }

  private async appendLocked(draft: Omit<AuditEntry, 'seq' | 'prevHash' | 'hash'>): Promise<AuditEntry> {
    await mkdir(path.dirname(this.file), { recursive: true });
    // proper-lockfile resolves the file's real path, so the file must exist before it is locked.
    await (await open(this.file, 'a')).close();

    let lock: HeldLock;
    try {
      lock = await lockAuditFile(this.file, APPEND_LOCK_RETRIES);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ELOCKED') {
        throw new AuditLogError('locked', `audit log ${this.file} stayed locked by another process; gave up waiting`);
      }
      throw err;
    }

    try {
      const fh = await open(this.file, 'a+');
      try {
        const tail = await readTail(fh, this.file);
        const body = orderFields({ seq: tail.seq + 1, ...draft, prevHash: tail.hash });
        const entry: AuditEntry = { ...body, hash: computeEntryHash(body) };
        // Checked as late as possible: past this point another process may hold the lock too, and two
        // writers would fork the chain.
        if (lock.compromised) {
          throw new AuditLogError(
            'lock_compromised',
            `lost the lock on audit log ${this.file} (${lock.compromised.message}); entry not written`,
          );
        }
        await fh.appendFile(`${JSON.stringify(entry)}\n`, 'utf8');
        await fh.sync();
        return entry;
      } finally {
        await fh.close();
      }
    } finally {
      // A failed release (the lock was compromised or already removed as stale) must not turn a
      // written entry into an error: the caller would retry and log the event twice.
      await lock.release().catch(() => undefined);
    }
  }
}

const FIELD_ORDER = [
  'seq', 'at', 'kind', 'actor', 'server', 'tool', 'outcome', 'detail', 'workflowId', 'runId', 'activityId',
  'attempt', 'toolCallId', 'argsDigest', 'args', 'prevHash',
] as const;

/**
 * Fixed key order for the line on disk, so people reading the file see seq first and the chain
 * last. Order does not affect the hash (canonical JSON sorts keys); unknown keys are kept, at the end.
 */
function orderFields(e: Omit<AuditEntry, 'hash'>): Omit<AuditEntry, 'hash'> {
  const source = e as Record<string, unknown>;
  const ordered: Record<string, unknown> = {};
  for (const key of [...FIELD_ORDER, ...Object.keys(source)]) {
    if (source[key] !== undefined && !(key in ordered)) ordered[key] = source[key];
  }
  return ordered as Omit<AuditEntry, 'hash'>;
}

function truncate(text: string, max: number): string {
  if (text.length <= max) return text;
  let cut = text.slice(0, max - 1);
  // Do not leave half of a surrogate pair behind.
  const last = cut.charCodeAt(cut.length - 1);
  if (last >= 0xd800 && last <= 0xdbff) cut = cut.slice(0, -1);
  return `${cut}…`;
}

// ------------------------------------------------------------------ tail

async function readFully(fh: FileHandle, buf: Buffer, position: number): Promise<void> {
  let done = 0;
  while (done < buf.length) {
    const { bytesRead } = await fh.read(buf, done, buf.length - done, position + done);
    if (bytesRead === 0) throw new Error(`unexpected end of file at byte ${position + done}`);
    done += bytesRead;
  }
}

/**
 * The seq and hash of the last entry, reading only the end of the file: a chunk of a few KB,
 * doubled (up to 1 MiB per read) until the start of the last line is found.
 */
async function readTail(fh: FileHandle, file: string): Promise<{ seq: number; hash: string }> {
  const { size } = await fh.stat();
  if (size === 0) return { seq: 0, hash: GENESIS_HASH };

  const damaged = (reason: string): AuditLogError =>
    new AuditLogError(
      'damaged_tail',
      `audit log ${file} has a damaged last line (${reason}); refusing to append. Run audit-verify on it.`,
    );

  const lastByte = Buffer.alloc(1);
  await readFully(fh, lastByte, size - 1);
  if (lastByte[0] !== NEWLINE) throw damaged('not newline-terminated: an interrupted write or a truncation');

  const parts: Buffer[] = [];
  let pos = size - 1;
  let chunk = TAIL_CHUNK_BYTES;
  while (pos > 0) {
    const len = Math.min(chunk, pos);
    const buf = Buffer.alloc(len);
    await readFully(fh, buf, pos - len);
    const nl = buf.lastIndexOf(NEWLINE);
    if (nl >= 0) {
      parts.unshift(buf.subarray(nl + 1));
      break;
    }
    parts.unshift(buf);
    pos -= len;
    chunk = Math.min(chunk * 2, MAX_TAIL_CHUNK_BYTES);
  }
  const text = Buffer.concat(parts).toString('utf8');
  if (text.length === 0) throw damaged('empty line');

  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw damaged('not valid JSON');
  }
  const parsed = AuditEntrySchema.safeParse(raw);
  if (!parsed.success) throw damaged('not a valid audit entry');
  // Hash the raw object, as the verifier does, so both agree on what "the entry" is.
  if (computeEntryHash(raw as Record<string, unknown>) !== parsed.data.hash) {
    throw damaged('hash mismatch: entry was modified');
  }
  return { seq: parsed.data.seq, hash: parsed.data.hash };
}

// ------------------------------------------------------------------ in-process queue

const queues = new Map<string, Promise<void>>();

function serialize<T>(key: string, task: () => Promise<T>): Promise<T> {
  const previous = queues.get(key) ?? Promise.resolve();
  const run = previous.then(task);
  const settled = run.then(
    () => undefined,
    () => undefined,
  );
  queues.set(key, settled);
  void settled.then(() => {
    if (queues.get(key) === settled) queues.delete(key);
  });
  return run;
}
