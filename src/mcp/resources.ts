/**
 * Context a turn asks for, through the pool: resources read (and subscribed to, so a cache of them
 * hears when they change) and prompts, rendered as text for the LLM.
 */
import { inMcpSpan } from '../telemetry/mcp-spans';
import { cacheHintOf } from './cache-hints';
import { mcpOperation } from './operation';
import type { Connections } from './connections';
import { RefusedError, type Connection, type Slot } from './pool-state';
import { McpPermanentError, describeCause, safeReason } from './failures';
import { renderContent, renderResourceContents } from './render';
import type { HintedRead } from './resource-cache';

export interface ContextRequestOptions {
  signal?: AbortSignal;
  meta?: Record<string, unknown>;
}

export interface ResourceContext {
  connections: Connections;
  /** Whoever wants `notifications/resources/updated`; without one, nothing is subscribed to. */
  onResourceUpdated?: (server: string, uri: string) => void;
}

/** A request's `_meta`: the caller's fields and the trace context of its span; absent when both are empty. */
const metaParam = (meta: Record<string, unknown> | undefined, trace: Record<string, string>): { _meta?: Record<string, unknown> } =>
  meta || Object.keys(trace).length ? { _meta: { ...meta, ...trace } } : {};

/** The resource as text, with the server's caching hint where its revision has them (MCP 2026-07-28). */
export async function readResource(ctx: ResourceContext, slot: Slot, uri: string, opts: ContextRequestOptions): Promise<HintedRead> {
  const timeout = slot.cfg.timeouts.callMs;
  return await permanentOnRefusal(
    slot,
    ctx.connections.withConnection(slot, opts.signal, timeout, async (conn) => {
      // A span per request sent (below the resilient hub's cache: a cached read sends none), its
      // context in `_meta` (traceparent) for the server's own traces, as for tools/call.
      const result = await inMcpSpan(mcpOperation(slot, conn, { method: 'resources/read', resourceUri: uri }), (trace) =>
        conn.session.readResource({ uri, ...metaParam(opts.meta, trace) }, { ...(opts.signal ? { signal: opts.signal } : {}), timeout }),
      );
      subscribe(ctx, slot, conn, uri);
      const text = result.contents.map((c) => renderResourceContents(c)).join('\n');
      const cache = cacheHintOf(result, conn.session.protocolVersion?.());
      return { text, ...(cache ? { cache } : {}) };
    }),
  );
}

/** Pages of `resources/list` one listing reads at most (a server that keeps paging is cut there). */
const MAX_RESOURCE_PAGES = 10;

/**
 * The resources a server lists for the caller (`opts.meta`), every page up to MAX_RESOURCE_PAGES. A
 * server without the resources capability has none.
 */
export async function listResources(ctx: ResourceContext, slot: Slot, opts: ContextRequestOptions): Promise<ListedResourceEntry[]> {
  const timeout = slot.cfg.timeouts.callMs;
  return await permanentOnRefusal(
    slot,
    ctx.connections.withConnection(slot, opts.signal, timeout, async (conn) => {
      if (!conn.session.serverCapabilities()?.resources) return [];
      const listed: ListedResourceEntry[] = [];
      const seen = new Set<string>();
      let cursor: string | undefined;
      for (let page = 0; page < MAX_RESOURCE_PAGES; page++) {
        const result = await inMcpSpan(mcpOperation(slot, conn, { method: 'resources/list' }), (trace) =>
          conn.session.listResources({ ...(cursor !== undefined ? { cursor } : {}), ...metaParam(opts.meta, trace) }, { ...(opts.signal ? { signal: opts.signal } : {}), timeout }),
        );
        for (const r of result.resources) {
          listed.push({ uri: r.uri, name: r.title ?? r.name, ...(r.description ? { description: r.description } : {}), ...(r.mimeType ? { mimeType: r.mimeType } : {}) });
        }
        cursor = result.nextCursor;
        if (cursor === undefined || seen.has(cursor)) break;
        seen.add(cursor);
      }
      return listed;
    }),
  );
}

/** One resource as a server lists it (the protocol's fields the host shows the model). */
export interface ListedResourceEntry {
  uri: string;
  name: string;
  description?: string;
  mimeType?: string;
}

export async function getPrompt(
  ctx: ResourceContext,
  slot: Slot,
  name: string,
  args: Record<string, string> | undefined,
  opts: ContextRequestOptions,
): Promise<string> {
  const timeout = slot.cfg.timeouts.callMs;
  return await permanentOnRefusal(
    slot,
    ctx.connections.withConnection(slot, opts.signal, timeout, async (conn) => {
      const result = await inMcpSpan(mcpOperation(slot, conn, { method: 'prompts/get', prompt: name }), (trace) =>
        conn.session.getPrompt(
          { name, ...(args ? { arguments: args } : {}), ...metaParam(opts.meta, trace) },
          { ...(opts.signal ? { signal: opts.signal } : {}), timeout },
        ),
      );
      return result.messages.map((m) => `${m.role}: ${renderContent([m.content])}`).join('\n\n');
    }),
  );
}

/**
 * Asks the server to say when a resource we read changes (once per connection, where the server
 * supports subscriptions). Best effort: without it the cache's TTL still applies.
 */
function subscribe(ctx: ResourceContext, slot: Slot, conn: Connection, uri: string): void {
  if (!ctx.onResourceUpdated || conn.subscribed.has(uri) || !conn.session.serverCapabilities()?.resources?.subscribe) return;
  conn.subscribed.add(uri);
  conn.session.subscribeResource(uri).catch((error: unknown) => {
    conn.subscribed.delete(uri);
    ctx.connections.logger.debug({ server: slot.cfg.name, uri, error: safeReason(describeCause(error), slot.secrets) }, 'could not subscribe to a resource');
  });
}

async function permanentOnRefusal<T>(slot: Slot, work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (error) {
    if (error instanceof RefusedError) throw new McpPermanentError(slot.cfg.name, error.reason);
    throw error;
  }
}
