import { z } from 'zod';
import { AUDIT_KINDS, AUDIT_OUTCOMES } from '../shared/audit';
import { canonicalJson, sha256Hex } from './canonical';

/** prevHash of the first entry. */
export const GENESIS_HASH = '0'.repeat(64);
export const MAX_DETAIL_CHARS = 500;

const Hex64 = z.string().regex(/^[0-9a-f]{64}$/, 'must be 64 lowercase hex characters');
const Text = z.string().min(1);


export const AuditActorSchema = z.strictObject({
  id: Text,
  role: Text,
  tenant: Text,
});

// Strict objects everywhere: an unknown key smuggled into a line must make it invalid, not be
// silently stripped (the hash is computed over what is on disk, but the schema is the first gate).
export const AuditEntrySchema = z.strictObject({
  seq: z.number().int().positive().max(Number.MAX_SAFE_INTEGER),
  at: z.iso.datetime({ offset: true }),
  kind: z.enum(AUDIT_KINDS),
  actor: AuditActorSchema,
  server: Text.optional(),
  tool: Text.optional(),
  /** sha256 hex of the canonical JSON of the redacted arguments. */
  argsDigest: Hex64.optional(),
  /** The redacted arguments. */
  args: z.record(z.string(), z.unknown()).optional(),
  outcome: z.enum(AUDIT_OUTCOMES).optional(),
  detail: z.string().max(MAX_DETAIL_CHARS).optional(),
  workflowId: Text.optional(),
  runId: Text.optional(),
  activityId: Text.optional(),
  attempt: z.number().int().positive().optional(),
  toolCallId: Text.optional(),
  prevHash: Hex64,
  hash: Hex64,
});

export type AuditEntry = z.infer<typeof AuditEntrySchema>;
export type AuditActor = z.infer<typeof AuditActorSchema>;
export type AuditKind = AuditEntry['kind'];
export type AuditOutcome = NonNullable<AuditEntry['outcome']>;

/**
 * hash = sha256(prevHash + "\n" + canonicalJson(entry without hash)). prevHash is inside the hashed
 * body too, so it cannot be changed without changing the hash.
 */
export function computeEntryHash(entry: Omit<AuditEntry, 'hash'> | Record<string, unknown>): string {
  const { hash: _hash, ...body } = entry as Record<string, unknown>;
  const prevHash = body.prevHash;
  if (typeof prevHash !== 'string') throw new TypeError('computeEntryHash: prevHash is missing');
  return sha256Hex(`${prevHash}\n${canonicalJson(body)}`);
}
