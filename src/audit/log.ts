import type { AuditRequest } from '../shared/audit';
import { describeIssues } from '../shared/issues';
import { canonicalJson, sha256Hex } from './canonical';
import { AuditLogError, type AuditChainStore, type AuditDraft } from './chain';
import { FileAuditStore } from './file-store';
import {
  DEFAULT_REDACTION,
  parseRedactionRules,
  redact,
  redactText,
  type RedactOptions,
  type RedactionRules,
} from './redact';
import { AuditEntrySchema, MAX_DETAIL_CHARS, type AuditEntry } from './schema';

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

/** The fields a caller controls, validated before the store's lock is taken so the lock is held briefly. */
const DraftSchema = AuditEntrySchema.omit({ seq: true, prevHash: true, hash: true });

/**
 * An append-only, hash-chained audit log: entries are redacted and validated here, then chained by
 * the store (a JSON Lines file by default, or a PostgreSQL table; see ./chain.ts). verify.ts checks
 * either.
 *
 * An append whose tail is damaged (truncated, edited, not JSON) is refused rather than chained onto:
 * extending a broken chain would bury the evidence under new, valid-looking entries.
 */
export class AuditLog implements AuditSink {
  readonly store: AuditChainStore;
  private readonly rules: RedactionRules;
  private readonly redactOpts: RedactOptions;
  private readonly storeArgs: boolean;

  /** `target`: a file path (the JSON Lines store) or another store. */
  constructor(target: string | AuditChainStore, opts: AuditLogOptions = {}) {
    this.store = typeof target === 'string' ? new FileAuditStore(target) : target;
    // Validated once here so a bad rules object fails at start-up, not on the first tool call.
    this.rules = opts.redaction ? parseRedactionRules(opts.redaction) : DEFAULT_REDACTION;
    this.redactOpts = opts.redactionKey === undefined ? {} : { key: opts.redactionKey };
    this.storeArgs = opts.storeArgs ?? true;
  }

  async append(input: AuditInput): Promise<AuditEntry> {
    return await this.store.append(this.prepare(input));
  }

  private prepare(input: AuditInput): AuditDraft {
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
    return { ...candidate, actor: result.data.actor } as AuditDraft;
  }
}

function truncate(text: string, max: number): string {
  if (text.length <= max) return text;
  let cut = text.slice(0, max - 1);
  // Do not leave half of a surrogate pair behind.
  const last = cut.charCodeAt(cut.length - 1);
  if (last >= 0xd800 && last <= 0xdbff) cut = cut.slice(0, -1);
  return `${cut}…`;
}

