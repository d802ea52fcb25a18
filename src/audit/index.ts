export { canonicalJson, CanonicalJsonError, sha256Hex } from './canonical';
export {
  AuditActorSchema,
  AuditEntrySchema,
  computeEntryHash,
  GENESIS_HASH,
  MAX_DETAIL_CHARS,
} from './schema';
export type { AuditActor, AuditEntry, AuditKind, AuditOutcome } from './schema';
export { argsDigest, AuditLog } from './log';
export type { AuditInput, AuditLogOptions, AuditSink } from './log';
export { AuditLogError } from './chain';
export type { AuditChainStore, AuditLogErrorCode } from './chain';
export { FileAuditStore } from './file-store';
export {
  DEFAULT_REDACTION,
  EMAIL_PATTERN,
  loadRedactionRules,
  parseRedactionRules,
  redact,
  redactText,
  redactionToken,
  RedactionError,
  RedactionRulesError,
  RedactionRulesSchema,
} from './redact';
export type { RedactionPattern, RedactionRules, RedactOptions } from './redact';
export { verifyAuditLog } from './verify';
export type { AuditBreak, AuditVerifyResult } from './verify';
