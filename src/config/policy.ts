/**
 * The policy document and the verified caller as they enter the host (policy file, JWT claims):
 * validated here, at the edge, so the pure core (src/core/policy.ts) only takes decisions on typed,
 * plain values. The types are written out in src/shared; the schemas are checked against them.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { ConfigError } from './index';
import type { Policy } from '../shared/policy';
import { describeIssues, jsonErrorPosition } from '../shared/issues';
import type { UserContext } from '../shared/user';

/** Role and tenant names, as carried in the JWT (`role`, `tenant_id`). */
export const NAME_PATTERN = /^[a-zA-Z0-9_.-]{1,64}$/;
const NAME_RULE = 'must match ^[a-zA-Z0-9_.-]{1,64}$';
/** OAuth 2.0 scope-token characters (RFC 6749 §3.3): printable ASCII except space, `"` and `\`. */
const SCOPE_PATTERN = /^[\x21\x23-\x5b\x5d-\x7e]{1,128}$/;
/** Server names as policy keys; MCP config names are stricter, so this never rejects a real one. */
const SERVER_PATTERN = /^[a-zA-Z0-9_.-]{1,64}$/;
/** A tool name or prefix with at most one `*`, at the end; `/` is allowed (only the first one splits a ref). */
const TOOL_PATTERN = /^(\*|[^\s*]{1,128}\*?)$/;
/** Keys that would read or write an object's prototype instead of an own entry. */
const RESERVED_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

const notReserved = (s: string) => !RESERVED_KEYS.has(s);

const ScopeSchema = z
  .string({ error: 'must be a string' })
  .regex(SCOPE_PATTERN, 'must be 1-128 printable ASCII characters without spaces, quotes or backslashes');

export const UserContextSchema: z.ZodType<UserContext> = z.strictObject({
  /** The JWT `sub`. */
  id: z.string({ error: 'must be a string' }).min(1, 'must not be empty').max(256, 'must be at most 256 characters'),
  role: z.string({ error: 'must be a string' }).regex(NAME_PATTERN, NAME_RULE),
  /** The JWT `tenant_id`. */
  tenant: z.string({ error: 'must be a string' }).regex(NAME_PATTERN, NAME_RULE),
  scopes: z.array(ScopeSchema, { error: 'must be an array of scope strings' }).max(256, 'must hold at most 256 scopes'),
});
const RoleNameSchema = z
  .string()
  .regex(NAME_PATTERN, `role names ${NAME_RULE}`)
  .refine(notReserved, 'is a reserved name');

const ServerKeySchema = z
  .string()
  .refine((s) => s === '*' || (SERVER_PATTERN.test(s) && notReserved(s)), 'must be a server name (^[a-zA-Z0-9_.-]{1,64}$) or "*"');

const ToolPatternSchema = z
  .string({ error: 'must be a string' })
  .regex(TOOL_PATTERN, 'must be a tool name, "*", or a prefix ending in "*" (no spaces; "*" only at the end)');

/** `<server>/<tool>`: server name or `*`, then a tool pattern. */
const ToolRefPatternSchema = z.string({ error: 'must be a string' }).refine((s) => {
  const slash = s.indexOf('/');
  if (slash < 0) return false;
  const server = s.slice(0, slash);
  return (server === '*' || SERVER_PATTERN.test(server)) && TOOL_PATTERN.test(s.slice(slash + 1));
}, 'must be "<server>/<tool>" (e.g. "payments/refund_payment", "payments/*"; "*" only as the server or at the end of the tool)');

const ServerRuleSchema = z.strictObject(
  {
    tools: z.union([z.literal('*'), z.array(ToolPatternSchema).max(1000)], {
      error: (issue) => (issue.code === 'invalid_union' ? 'must be "*" or an array of tool names' : undefined),
    }),
    /** Resources the role may read on demand (adaptive context): `"*"`, or URIs and prefixes ending in `*`. */
    resources: z
      .union([z.literal('*'), z.array(z.string().min(1).max(2_000).regex(/^[^*]*\*?$/, 'a URI, or a prefix ending in "*" ("*" only at the end)')).max(1000)], {
        error: (issue) => (issue.code === 'invalid_union' ? 'must be "*" or an array of resource URIs' : undefined),
      })
      .optional(),
  },
  { error: 'must be an object { "tools": "*" | ["tool", ...], "resources"?: "*" | ["uri", ...] }' },
);

const RoleRuleSchema = z.strictObject(
  { servers: z.record(ServerKeySchema, ServerRuleSchema, { error: 'must be an object mapping server names (or "*") to rules' }) },
  { error: 'must be an object { "servers": { ... } }' },
);

export const PolicySchema = z.strictObject(
  {
    roles: z.record(RoleNameSchema, RoleRuleSchema, { error: 'must be an object mapping role names to rules' }),
    toolScopes: z
      .record(ToolRefPatternSchema, z.array(ScopeSchema, { error: 'must be an array of scopes' }).max(64), {
        error: 'must be an object mapping "<server>/<tool>" to arrays of scopes',
      })
      .default({}),
    superScope: ScopeSchema.optional(),
    approval: z
      .strictObject(
        {
          tools: z.array(ToolRefPatternSchema, { error: 'must be an array of "<server>/<tool>"' }).default([]),
          timeoutMs: z
            .number({ error: 'must be a number of milliseconds' })
            .int('must be an integer')
            .min(1_000, 'must be at least 1000 (1 second)')
            .max(604_800_000, 'must be at most 604800000 (7 days)')
            .default(300_000),
          approverRoles: z.array(RoleNameSchema, { error: 'must be an array of role names' }).default([]),
        },
        { error: 'must be an object { "tools", "timeoutMs", "approverRoles" }' },
      )
      .optional(),
    sampling: z
      .strictObject(
        {
          servers: z.array(z.string().min(1).max(64), { error: 'must be an array of server names or "*"' }).max(256),
          maxTokensPerRequest: z.number({ error: 'must be a number of tokens' }).int('must be an integer').min(1).max(1_000_000).default(1_000),
          maxTokensPerTurn: z.number({ error: 'must be a number of tokens' }).int('must be an integer').min(1).max(100_000_000).default(10_000),
          approval: z.boolean({ error: 'must be true or false' }).optional(),
        },
        { error: 'must be an object { "servers", "maxTokensPerRequest", "maxTokensPerTurn", "approval" }' },
      )
      .optional(),
    elicitation: z
      .strictObject(
        {
          servers: z.array(z.string().min(1).max(64), { error: 'must be an array of server names or "*"' }).max(256),
          roles: z.array(RoleNameSchema, { error: 'must be an array of role names' }).max(256).optional(),
        },
        { error: 'must be an object { "servers", "roles" }' },
      )
      .optional(),
  },
  { error: 'a policy must be a JSON object { "roles", "toolScopes", "superScope", "approval", "elicitation", "sampling" }' },
);
export class PolicyError extends Error {
  override name = 'PolicyError';
  constructor(
    readonly source: string,
    readonly issues: string[],
  ) {
    super(`${source} is invalid: ${issues.join('; ')}`);
  }
}

/** Validates a parsed policy document; the error names every offending field and the source. */
export function parsePolicy(json: unknown, source = 'policy'): Policy {
  const result = PolicySchema.safeParse(json);
  if (!result.success) throw new PolicyError(source, describeIssues(result.error.issues));
  return result.data;
}

// The schema's output must stay the shared Policy type (a compile-time check, no runtime cost).
const _policyShape: z.ZodType<Policy, z.input<typeof PolicySchema>> = PolicySchema;

/** Reads and validates the tool policy file; a `ConfigError` names the file and every bad field. */
export function loadPolicyFile(file: string): Policy {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(`cannot read policy file ${file}: ${err instanceof Error ? err.message : String(err)}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(`policy file ${file} is not valid JSON${jsonErrorPosition(text, err)}`);
  }
  try {
    return parsePolicy(json, `policy file ${file}`);
  } catch (err) {
    if (err instanceof PolicyError) throw new ConfigError(err.message);
    throw err;
  }
}
