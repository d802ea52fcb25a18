/**
 * The hash chain itself, whatever holds it: how the next entry is built on the last one, and how a
 * stored entry is checked before anything is chained onto it. The file (./file-store.ts) and the
 * PostgreSQL table (./pg-store.ts) both use these, so an entry hashes the same in either.
 */
import { AuditEntrySchema, computeEntryHash, GENESIS_HASH, type AuditEntry } from './schema';

export type AuditDraft = Omit<AuditEntry, 'seq' | 'prevHash' | 'hash'>;

export interface ChainHead {
  seq: number;
  hash: string;
}

export const EMPTY_CHAIN: ChainHead = { seq: 0, hash: GENESIS_HASH };

/** Where entries are chained: appends one entry after the current head, one writer at a time. */
export interface AuditChainStore {
  /** For messages: the file's path, or the table. */
  readonly where: string;
  append(draft: AuditDraft): Promise<AuditEntry>;
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

const FIELD_ORDER = [
  'seq', 'at', 'kind', 'actor', 'server', 'tool', 'outcome', 'detail', 'workflowId', 'runId', 'activityId',
  'attempt', 'toolCallId', 'argsDigest', 'args', 'prevHash',
] as const;

/**
 * The entry after `head`. Keys in a fixed order, so people reading a line see seq first and the chain
 * last; order does not affect the hash (canonical JSON sorts keys); unknown keys are kept, at the end.
 */
export function nextEntry(draft: AuditDraft, head: ChainHead): AuditEntry {
  const source: Record<string, unknown> = { seq: head.seq + 1, ...draft, prevHash: head.hash };
  const ordered: Record<string, unknown> = {};
  for (const key of [...FIELD_ORDER, ...Object.keys(source)]) {
    if (source[key] !== undefined && !(key in ordered)) ordered[key] = source[key];
  }
  const body = ordered as Omit<AuditEntry, 'hash'>;
  return { ...body, hash: computeEntryHash(body) };
}

/**
 * The head a stored last entry (its JSON text) stands for. Throws `damaged_tail` when it is not an
 * intact entry: extending a broken chain would bury the evidence under new, valid-looking entries.
 */
export function headOf(text: string, where: string): ChainHead {
  const damaged = (reason: string): AuditLogError =>
    new AuditLogError('damaged_tail', `audit log ${where} has a damaged last entry (${reason}); refusing to append. Run audit-verify on it.`);
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
  if (computeEntryHash(raw as Record<string, unknown>) !== parsed.data.hash) throw damaged('hash mismatch: entry was modified');
  return { seq: parsed.data.seq, hash: parsed.data.hash };
}
