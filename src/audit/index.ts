export { canonicalJson, CanonicalJsonError, sha256Hex } from './canonical';
export {
  AuditActorSchema,
  AuditEntrySchema,
  computeEntryHash,
  GENESIS_HASH,
  MAX_DETAIL_CHARS,
} from './schema';
export type { AuditActor, AuditEntry, AuditKind, AuditOutcome } from './schema';
export { argsDigest, AuditLog, AuditLogError } from './log';
export type { AuditInput, AuditLogErrorCode, AuditLogOptions, AuditSink } from './log';
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
