/**
 * The three files a deployment writes by hand (MCP servers, host config, policy) name each other's
 * servers. A name that does not match is not an error in any one file, but it silently does nothing (a
 * rule for a server that is not there) or costs every turn a `context_unavailable` notice (context read
 * from a server that is not there). This says, at start, exactly which names do not match.
 */
import type { Policy } from '../shared/policy';
import type { HostConfig } from './host-schema';

export interface CrossCheckInput {
  /** The configured MCP server names (disabled ones included: they are there, only switched off). */
  servers: readonly string[];
  host: Pick<HostConfig, 'context' | 'contextByRole'> & Partial<Pick<HostConfig, 'intents'>>;
  policy: Policy;
  /** Labels for messages, usually the file paths. */
  hostSource: string;
  policySource: string;
}

/** One line per mismatch, naming the file, the field and the missing server. */
export function crossCheck(input: CrossCheckInput): string[] {
  const known = new Set(input.servers);
  const problems: string[] = [];
  const missing = (server: string) => server !== '*' && !known.has(server);
  const serverOf = (ref: string) => ref.split('/')[0] ?? ref;
  const hint = `configured servers: ${input.servers.length ? input.servers.join(', ') : 'none'}`;

  const contexts: Array<[string, HostConfig['context']]> = [
    ['context', input.host.context],
    ...Object.entries(input.host.contextByRole).map(([role, spec]): [string, HostConfig['context']] => [`contextByRole.${role}`, spec]),
    ...(input.host.intents ?? []).map((rule, i): [string, HostConfig['context']] => [`intents[${i}] (${rule.name})`, rule]),
  ];
  for (const [where, spec] of contexts) {
    spec.resources.forEach((r, i) => {
      if (missing(r.server)) problems.push(`${input.hostSource}: ${where}.resources[${i}]: server "${r.server}" (${r.uri}) is not configured (${hint})`);
    });
    spec.prompts.forEach((p, i) => {
      if (missing(p.server)) problems.push(`${input.hostSource}: ${where}.prompts[${i}]: server "${p.server}" (prompt ${p.name}) is not configured (${hint})`);
    });
  }

  for (const [role, rule] of Object.entries(input.policy.roles)) {
    for (const server of Object.keys(rule.servers)) {
      if (missing(server)) problems.push(`${input.policySource}: roles.${role}.servers.${server}: no such server is configured (${hint})`);
    }
  }
  for (const pattern of Object.keys(input.policy.toolScopes)) {
    if (missing(serverOf(pattern))) problems.push(`${input.policySource}: toolScopes["${pattern}"]: server "${serverOf(pattern)}" is not configured (${hint})`);
  }
  for (const pattern of input.policy.approval?.tools ?? []) {
    if (missing(serverOf(pattern))) problems.push(`${input.policySource}: approval.tools: "${pattern}": server "${serverOf(pattern)}" is not configured (${hint})`);
  }
  return problems;
}
