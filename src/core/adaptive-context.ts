/**
 * Adaptive context (seed 000 §9.5 strategy 3, issue 28 §2; docs/decisions/0036): the turn starts with
 * its small role context, and the model gets two host tools to list and read the MCP resources its
 * caller may read, fetching more only when it needs it. Pure: the policy's resource rules, the tools as
 * the catalog and the model see them, and what their answers say. No I/O, no clocks.
 */
import type { Policy } from '../shared/policy';
import type { CatalogTool, ToolRef } from '../shared/tool-types';
import type { UserContext } from '../shared/user';
import { HOST_SERVER } from './tool-search';

export interface AdaptiveContextSettings {
  /** The model gets the host's resource tools (the role context is still read first). */
  enabled: boolean;
  /** How many resources one listing shows at most. */
  maxListed: number;
  /** How many characters one read returns at most (the turn's maxToolResultChars still applies). */
  maxResourceChars: number;
}

export const DEFAULT_ADAPTIVE_CONTEXT: AdaptiveContextSettings = { enabled: false, maxListed: 50, maxResourceChars: 8_000 };

/** The host's resource tools as the turn's catalog carries them: read-only, so they run as local activities. */
export const LIST_RESOURCES_REF: ToolRef = { name: 'host__list_resources', server: HOST_SERVER, tool: 'list_resources', readOnly: true };
export const READ_RESOURCE_REF: ToolRef = { name: 'host__read_resource', server: HOST_SERVER, tool: 'read_resource', readOnly: true };
export const RESOURCE_TOOL_REFS: readonly ToolRef[] = [LIST_RESOURCES_REF, READ_RESOURCE_REF];

export const RESOURCE_TOOL_SPECS: readonly CatalogTool[] = [
  {
    name: LIST_RESOURCES_REF.name,
    server: HOST_SERVER,
    tool: LIST_RESOURCES_REF.tool,
    description: 'Lists the resources (documents, records, reports) you may read for this user, with their server and URI. Read one with host__read_resource when you need it.',
    inputSchema: { type: 'object', properties: { server: { type: 'string', description: 'Only this server\'s resources (optional).' } } },
  },
  {
    name: READ_RESOURCE_REF.name,
    server: HOST_SERVER,
    tool: READ_RESOURCE_REF.tool,
    description: 'Reads one resource listed by host__list_resources. Say why you need it: the user\'s trace shows it.',
    inputSchema: {
      type: 'object',
      properties: {
        server: { type: 'string', description: 'The server that holds the resource.' },
        uri: { type: 'string', description: 'The resource\'s URI, as listed.' },
        reason: { type: 'string', description: 'Why this resource is needed to answer, in a few words.' },
      },
      required: ['server', 'uri', 'reason'],
    },
  },
];

/** Whether `tool` is one of the host's resource tools. */
export function isResourceTool(server: string, tool: string): boolean {
  return server === HOST_SERVER && RESOURCE_TOOL_REFS.some((r) => r.tool === tool);
}

/**
 * What a caller may read on demand: per server name (or `"*"`), `"*"` or URI patterns (an exact URI, or a
 * prefix ending in `*`). Taken from the role's rule in the policy (`resources` beside `tools`); a server
 * whose rule has no `resources` gives none. Carried to the host tool's activity, which has no policy.
 */
export type ReadableResources = Record<string, '*' | string[]>;

export function readableResources(policy: Policy, user: UserContext): ReadableResources {
  const rule = Object.hasOwn(policy.roles, user.role) ? policy.roles[user.role] : undefined;
  const readable: ReadableResources = {};
  for (const [server, serverRule] of Object.entries(rule?.servers ?? {})) {
    if (serverRule.resources !== undefined) readable[server] = serverRule.resources;
  }
  return readable;
}

function matchesUri(pattern: string, uri: string): boolean {
  if (pattern === '*') return true;
  if (pattern.endsWith('*')) return uri.startsWith(pattern.slice(0, -1));
  return pattern === uri;
}

/** May a caller with `readable` read `uri` of `server`? A server's own entry first, then `"*"`. */
export function mayReadResource(readable: ReadableResources | undefined, server: string, uri: string): boolean {
  if (!readable || server === HOST_SERVER) return false;
  for (const key of [server, '*']) {
    const rule = Object.hasOwn(readable, key) ? readable[key] : undefined;
    if (rule === '*' || rule?.some((p) => matchesUri(p, uri))) return true;
  }
  return false;
}

/** Whether the caller may read anything at all on `server` (whose resources are worth listing). */
export function mayReadServer(readable: ReadableResources | undefined, server: string): boolean {
  return !!readable && server !== HOST_SERVER && (Object.hasOwn(readable, server) || Object.hasOwn(readable, '*'));
}

/** One resource as a server lists it. */
export interface ListedResource {
  server: string;
  uri: string;
  name?: string;
  description?: string;
  mimeType?: string;
}

/** The listing the model reads: one line per resource, at most `max` of them, and a note when more were left out. */
export function renderListing(resources: readonly ListedResource[], max: number, unavailable: readonly string[]): string {
  if (resources.length === 0) {
    return unavailable.length > 0 ? `No resource could be listed (${unavailable.join(', ')} unavailable).` : 'There are no resources you may read.';
  }
  const shown = resources.slice(0, max).map((r) => `- ${r.server} ${r.uri}${r.name ? `: ${r.name}` : ''}${r.description ? ` (${r.description})` : ''}`);
  const more = resources.length > max ? [`(${resources.length - max} more not shown: list one server at a time)`] : [];
  const down = unavailable.length > 0 ? [`(not listed: ${unavailable.join(', ')} unavailable)`] : [];
  return [`${resources.length} resource${resources.length > 1 ? 's' : ''} you may read with host__read_resource:`, ...shown, ...more, ...down].join('\n');
}

/** The arguments of a read call, checked: the model writes them, so they are data to validate. */
export function readArguments(args: Record<string, unknown>): { server: string; uri: string; reason: string } | { error: string } {
  const { server, uri, reason } = args;
  if (typeof server !== 'string' || server.length === 0 || typeof uri !== 'string' || uri.length === 0) {
    return { error: 'host__read_resource needs "server" and "uri" (strings), as host__list_resources lists them.' };
  }
  return { server, uri, reason: typeof reason === 'string' && reason.trim() ? reason.trim().slice(0, 200) : 'not given' };
}

/**
 * The turn's `context_chosen` notice for one read the model asked for (as decision 0032's notice for the
 * role and intent context): what it read, why (the model's `reason`), and whether it could. Undefined
 * for any other call.
 */
export function resourceReadNotice(tool: ToolRef, args: Record<string, unknown>, outcome: { isError: boolean }, toolCallId: string): Record<string, unknown> | undefined {
  if (tool.server !== HOST_SERVER || tool.tool !== READ_RESOURCE_REF.tool) return undefined;
  const read = readArguments(args);
  if ('error' in read) return undefined;
  const because = `model: ${read.reason}`;
  return {
    code: 'context_chosen',
    message: `Context: ${read.uri} from ${read.server} (${because})`.slice(0, 400),
    toolCallId,
    pieces: [{ kind: 'resource', server: read.server, ref: read.uri, because, read: !outcome.isError }],
  };
}
