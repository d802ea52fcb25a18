/**
 * Who may call which MCP tool. Pure (shared types only, no Node built-ins, no I/O): the turn
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
import type { Policy } from '../shared/policy';
import type { CatalogTool, ToolRef } from '../shared/tool-types';
import type { UserContext } from '../shared/user';
import { isResourceTool } from './adaptive-context';
import { HOST_SERVER, SEARCH_TOOL_REF } from './tool-search';

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
  // The host's tools (search, resources): any role with tool access, since they return only what the role may see.
  if (server === HOST_SERVER) {
    return tool === SEARCH_TOOL_REF.tool || isResourceTool(server, tool) ? { allowed: true, needsApproval: false } : { allowed: false, reason: `the host has no tool ${tool}` };
  }
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
export function filterCatalog<T extends ToolRef = CatalogTool>(policy: Policy, user: UserContext, tools: readonly T[]): T[] {
  return tools.filter((t) => decideTool(policy, user, t.server, t.tool).allowed);
}

/**
 * May `user` approve or reject a pending tool call of a session owned by `ownerId`? The owner may,
 * and so may any role in `approval.approverRoles`. The caller checks the tenant matches.
 */
/**
 * The part of the policy that decides for one role: its own rule, and the scopes, super scope and
 * approval settings every role shares. A turn carries this in its input instead of the whole document
 * (other roles' rules are noise in its history and the Temporal UI); every decision for that role is the
 * same on it as on the whole policy, and approvers are checked against `approval`, which it keeps.
 */
export function policyForRole(policy: Policy, role: string): Policy {
  const rule = ownValue(policy.roles, role);
  return { ...policy, roles: Object.fromEntries(rule ? [[role, rule]] : []) };
}

export function canApprove(policy: Policy, user: UserContext, ownerId: string): boolean {
  if (user.id === ownerId) return true;
  return policy.approval?.approverRoles.includes(user.role) ?? false;
}
