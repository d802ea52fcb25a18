/**
 * Who may call which MCP tool. Pure (zod and shared types only, no Node built-ins, no I/O): the turn
 * workflow imports it and checks every tool call against the policy carried in its input, so the
 * same policy and user must give the same decision on every replay.
 *
 * Deny by default: a role absent from the policy, or a server or tool its rules do not name, gets
 * nothing. Three independent checks, all of which must pass:
 *
 * 1. role rules (`roles`): the user's role must list the server (or `"*"`) and the tool;
 * 2. scopes (`toolScopes`): the user must hold every scope of every entry matching the tool, unless
 *    they hold `superScope`, which passes every scope check (never a role check);
 * 3. approval (`approval.tools`): an allowed tool may still need a human to approve each call.
 *
 * Patterns: a role's server key is a server name or `"*"` (any server); a tool entry is a tool name,
 * `"*"`, or a prefix ending in `*` (`get_*`). `toolScopes` keys and `approval.tools` entries are
 * `<server>/<tool>` with the same tool patterns, and `*` alone as the server part means any server
 * (`payments/*`, `payments/refund_payment`).
 */
import { z } from 'zod';
import type { CatalogTool } from '../shared/tool-types';

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

export const UserContextSchema = z.strictObject({
  /** The JWT `sub`. */
  id: z.string({ error: 'must be a string' }).min(1, 'must not be empty').max(256, 'must be at most 256 characters'),
  role: z.string({ error: 'must be a string' }).regex(NAME_PATTERN, NAME_RULE),
  /** The JWT `tenant_id`. */
  tenant: z.string({ error: 'must be a string' }).regex(NAME_PATTERN, NAME_RULE),
  scopes: z.array(ScopeSchema, { error: 'must be an array of scope strings' }).max(256, 'must hold at most 256 scopes'),
});
/** The verified caller. Travels in workflow input and history: plain JSON, never the token itself. */
export type UserContext = z.infer<typeof UserContextSchema>;

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
  },
  { error: 'must be an object { "tools": "*" | ["tool", ...] }' },
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
  },
  { error: 'a policy must be a JSON object { "roles", "toolScopes", "superScope", "approval" }' },
);
/** A validated policy, defaults applied. Carried in workflow input: plain JSON. */
export type Policy = z.output<typeof PolicySchema>;

export class PolicyError extends Error {
  override name = 'PolicyError';
  constructor(
    readonly source: string,
    readonly issues: string[],
  ) {
    super(`${source} is invalid: ${issues.join('; ')}`);
  }
}

/** `roles.teacher.servers.comms.tools[0]`, `toolScopes["payments/*"]`. */
function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else if (typeof key === 'string' && /^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) out += out ? `.${key}` : key;
    else out += `[${JSON.stringify(String(key))}]`;
  }
  return out || '(root)';
}

function describeIssue(issue: z.core.$ZodIssue): string {
  // An unknown key is reported on its parent; name the key itself.
  if (issue.code === 'unrecognized_keys') {
    return issue.keys.map((k) => `${formatPath([...issue.path, k])}: unknown field`).join('; ');
  }
  // A bad record key: zod reports it on the key's path, with the key schema's issues nested.
  if (issue.code === 'invalid_key') {
    const inner = issue.issues[0]?.message ?? issue.message;
    return `${formatPath(issue.path)}: invalid key: ${inner}`;
  }
  return `${formatPath(issue.path)}: ${issue.message}`;
}

/** Validates a parsed policy document; the error names every offending field and the source. */
export function parsePolicy(json: unknown, source = 'policy'): Policy {
  const result = PolicySchema.safeParse(json);
  if (!result.success) throw new PolicyError(source, result.error.issues.map(describeIssue));
  return result.data;
}

export type ToolDecision = { allowed: true; needsApproval: boolean } | { allowed: false; reason: string };

function ownValue<T>(record: Record<string, T>, key: string): T | undefined {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}

function matchesName(pattern: string, name: string): boolean {
  if (pattern === '*') return true;
  if (pattern.endsWith('*')) return name.startsWith(pattern.slice(0, -1));
  return pattern === name;
}

function matchesRef(pattern: string, server: string, tool: string): boolean {
  const slash = pattern.indexOf('/');
  if (slash < 0) return false;
  const serverPattern = pattern.slice(0, slash);
  return (serverPattern === '*' || serverPattern === server) && matchesName(pattern.slice(slash + 1), tool);
}

function roleAllows(policy: Policy, role: string, server: string, tool: string): boolean {
  const rule = ownValue(policy.roles, role);
  if (!rule) return false;
  for (const key of [server, '*']) {
    const serverRule = ownValue(rule.servers, key);
    if (!serverRule) continue;
    if (serverRule.tools === '*' || serverRule.tools.some((p) => matchesName(p, tool))) return true;
  }
  return false;
}

/** Every scope the tool needs: the union of all matching `toolScopes` entries, in policy order. */
export function requiredScopes(policy: Policy, server: string, tool: string): string[] {
  const required = new Set<string>();
  for (const [pattern, scopes] of Object.entries(policy.toolScopes)) {
    if (matchesRef(pattern, server, tool)) for (const s of scopes) required.add(s);
  }
  return [...required];
}

/**
 * May `user` call `server`/`tool`? The reason of a denial is short and safe to show the model and to
 * write to the audit log (it names the role, the tool and missing scopes, nothing else).
 */
export function decideTool(policy: Policy, user: UserContext, server: string, tool: string): ToolDecision {
  const ref = `${server}/${tool}`;
  if (!ownValue(policy.roles, user.role)) return { allowed: false, reason: `role "${user.role}" has no tool access` };
  if (!roleAllows(policy, user.role, server, tool)) return { allowed: false, reason: `role "${user.role}" may not use ${ref}` };

  const isSuper = policy.superScope !== undefined && user.scopes.includes(policy.superScope);
  if (!isSuper) {
    const missing = requiredScopes(policy, server, tool).filter((s) => !user.scopes.includes(s));
    if (missing.length > 0) {
      return { allowed: false, reason: `missing scope${missing.length > 1 ? 's' : ''} ${missing.join(', ')} for ${ref}` };
    }
  }
  const needsApproval = policy.approval?.tools.some((p) => matchesRef(p, server, tool)) ?? false;
  return { allowed: true, needsApproval };
}

/** The tools `user` may call; the LLM is never shown the others. Order is preserved. */
export function filterCatalog(policy: Policy, user: UserContext, tools: CatalogTool[]): CatalogTool[] {
  return tools.filter((t) => decideTool(policy, user, t.server, t.tool).allowed);
}

/**
 * May `user` approve or reject a pending tool call of a session owned by `ownerId`? The owner may,
 * and so may any role in `approval.approverRoles`. The caller checks the tenant matches.
 */
export function canApprove(policy: Policy, user: UserContext, ownerId: string): boolean {
  if (user.id === ownerId) return true;
  return policy.approval?.approverRoles.includes(user.role) ?? false;
}
