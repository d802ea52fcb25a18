/**
 * The host's own tools, one dispatch for all of them: tool search (docs/decisions/0032) and the
 * adaptive-context tools that list and read the resources the caller may read (docs/decisions/0036).
 * The turn plans, checks, records and runs them as any other tool (server `host`, read-only); the
 * tool-call activity hands them here instead of to an MCP server.
 *
 * Policy decides what the resource tools reach: the workflow, which holds the policy, sends the
 * caller's readable resources with each call (`readable`); without them nothing is readable. Reads
 * go through the same hub as the turn's role context (the caller's `_meta`, the per-caller cache with
 * its TTL, the circuit breaker), are audited, and are cut to a bound before they enter the history.
 */
import { Context } from '@temporalio/activity';
import {
  DEFAULT_ADAPTIVE_CONTEXT,
  LIST_RESOURCES_REF,
  mayReadResource,
  mayReadServer,
  readArguments,
  READ_RESOURCE_REF,
  RESOURCE_TOOL_REFS,
  RESOURCE_TOOL_SPECS,
  renderListing,
  type AdaptiveContextSettings,
  type ListedResource,
  type ReadableResources,
} from '../core/adaptive-context';
import { SEARCH_TOOL_REF, SEARCH_TOOL_SPEC } from '../core/tool-search';
import { boundToolOutcome } from '../mcp/render';
import type { AuditRequest } from '../shared/audit';
import type { Catalog, CatalogTool, ToolOutcome, ToolRef } from '../shared/tool-types';
import type { UserContext } from '../shared/user';
import type { ActivityDeps } from './deps';
import type { ToolSearch } from './tool-search';

/** What a host tool's call carries (the tool-call activity's input, in part). */
export interface HostToolCall {
  tool: string;
  arguments: Record<string, unknown>;
  user?: UserContext;
  /** The caller's readable resources, from the policy (adaptive context); absent: none. */
  readable?: ReadableResources;
  maxResultChars?: number;
}

/** Appends an audit entry about this call (the activity adds who, which tool, which attempt). */
export type HostToolAudit = (entry: Pick<AuditRequest, 'kind' | 'args' | 'outcome' | 'detail'>) => Promise<void>;

export interface HostToolHelpers {
  search: ToolSearch;
  /** The caller's context for servers' `_meta`. */
  userMeta(user: UserContext): Record<string, unknown>;
  scrub(text: string): string;
}

const SPECS = new Map<string, CatalogTool>([SEARCH_TOOL_SPEC, ...RESOURCE_TOOL_SPECS].map((t) => [t.name, t] as const));

/** The host tool named `name` as the model sees it, if it is one. */
export function hostToolSpec(name: string): CatalogTool | undefined {
  return SPECS.get(name);
}

/** A catalog's tools by name, with the host's tools beside them (what an LLM step's tool names resolve against). */
export function withHostToolSpecs(byName: ReadonlyMap<string, CatalogTool>): Map<string, CatalogTool> {
  return new Map([...byName, ...SPECS]);
}

export function createHostTools(deps: Pick<ActivityDeps, 'hub' | 'adaptiveContext' | 'maxToolResultChars'>, helpers: HostToolHelpers) {
  const settings = (): AdaptiveContextSettings => deps.adaptiveContext?.() ?? DEFAULT_ADAPTIVE_CONTEXT;

  async function listResources(call: HostToolCall, catalog: Catalog): Promise<ToolOutcome> {
    const only = typeof call.arguments['server'] === 'string' ? call.arguments['server'] : undefined;
    const servers = catalog.servers.map((s) => s.server).filter((s) => (only === undefined || s === only) && mayReadServer(call.readable, s));
    const signal = Context.current().cancellationSignal;
    const meta = call.user ? helpers.userMeta(call.user) : undefined;
    const listed: ListedResource[] = [];
    const unavailable: string[] = [];
    await Promise.all(
      servers.map(async (server) => {
        try {
          const entries = (await deps.hub.listResources?.(server, { signal, ...(meta ? { meta } : {}) })) ?? [];
          listed.push(...entries.filter((r) => mayReadResource(call.readable, server, r.uri)).map((r) => ({ server, ...r })));
        } catch {
          unavailable.push(server);
        }
      }),
    );
    // Servers answer in any order: list them in catalog order, each server's resources in its own order.
    listed.sort((a, b) => servers.indexOf(a.server) - servers.indexOf(b.server));
    unavailable.sort((a, b) => servers.indexOf(a) - servers.indexOf(b));
    const max = settings().maxListed;
    return { isError: false, text: renderListing(listed, max, unavailable), structuredContent: { resources: listed.slice(0, max).map((r) => ({ server: r.server, uri: r.uri })) } };
  }

  async function readResource(call: HostToolCall, audit: HostToolAudit): Promise<ToolOutcome> {
    const args = readArguments(call.arguments);
    if ('error' in args) return { isError: true, text: args.error };
    const who = call.user ? `role "${call.user.role}"` : 'this caller';
    if (!mayReadResource(call.readable, args.server, args.uri)) {
      const detail = `${who} may not read ${args.uri} of ${args.server}`;
      await audit({ kind: 'denial', args: call.arguments, outcome: 'denied', detail });
      return { isError: true, text: `Denied by policy: ${detail}. Read only resources host__list_resources lists.` };
    }
    await audit({ kind: 'tool_call', args: call.arguments });
    const meta = call.user ? helpers.userMeta(call.user) : undefined;
    try {
      const text = await deps.hub.readResource(args.server, args.uri, { signal: Context.current().cancellationSignal, ...(meta ? { meta } : {}) });
      await audit({ kind: 'tool_result', outcome: 'ok', detail: `${text.length} characters` });
      // A resource of megabytes costs the history this bound, like any tool result.
      const max = Math.min(settings().maxResourceChars, call.maxResultChars ?? deps.maxToolResultChars?.() ?? Infinity);
      return boundToolOutcome({ isError: false, text: `${args.uri} from ${args.server}:\n${text}` }, max);
    } catch (err) {
      const message = helpers.scrub(err instanceof Error ? err.message : String(err));
      await audit({ kind: 'tool_result', outcome: 'error', detail: message.slice(0, 200) });
      return { isError: true, text: `Could not read ${args.uri} from ${args.server}: ${message}` };
    }
  }

  return {
    /** The host's tools a catalog carries: search when it is too large to offer whole, the resource tools when enabled. */
    refs(catalog: Catalog): ToolRef[] {
      return [
        ...(catalog.tools.length > helpers.search.settings().threshold ? [SEARCH_TOOL_REF] : []),
        ...(settings().enabled ? RESOURCE_TOOL_REFS : []),
      ];
    },

    /** Answers one call of a host tool (the tool-call activity's `server` is `host`). */
    async answer(call: HostToolCall, catalog: Catalog, audit: HostToolAudit): Promise<ToolOutcome> {
      const byName = new Map(catalog.tools.map((t) => [t.name, t] as const));
      if (call.tool === SEARCH_TOOL_REF.tool) return helpers.search.answer(call.tool, call.arguments, byName);
      // Turned off by a config reload since the model was offered them: say so rather than read.
      if (!settings().enabled) return { isError: true, text: 'Reading resources on demand is turned off on this host.' };
      if (call.tool === LIST_RESOURCES_REF.tool) return await listResources(call, catalog);
      if (call.tool === READ_RESOURCE_REF.tool) return await readResource(call, audit);
      return { isError: true, text: `The host has no tool ${call.tool}.` };
    },
  };
}
