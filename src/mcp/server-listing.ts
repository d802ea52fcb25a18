/**
 * One server's listing for the catalog and the status report (catalog.ts builds the catalog from
 * them): its tools, cached per connection until the server says they changed (or its caching hint
 * says they are stale: decision 0039), and its state.
 */
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { speaksHints, type CacheHint } from './cache-hints';
import { listAllTools, type ServerListing } from './catalog';
import { PROBE_TIMEOUT_MS, type Connections, type UseOptions } from './connections';
import { RefusedError, type Connection, type HubLogger, type Slot } from './pool-state';
import { McpFailure, describeCause, safeReason } from './failures';
import { AuthorizationRequiredError } from './oauth';
import type { TransportKind } from './transports';
import { callerContext } from './user-token';

export interface ListingContext {
  connections: Connections;
  /** The slot the listing uses (a per-user server's: the caller's). */
  slotFor(base: Slot): Slot;
  transportOf(slot: Slot): TransportKind;
  /** The clock a listing's `ttlMs` is measured on (default Date.now). */
  now?: () => number;
}

/**
 * The server's tools and state; a failure is reported in the status, never thrown. A `background`
 * inspection (the health reports) does not try a failing server again before its back-off has passed.
 */
export async function inspect(ctx: ListingContext, base: Slot, use: UseOptions = {}): Promise<ServerListing> {
  const server = base.cfg.name;
  if (base.cfg.disabled) {
    return { server, tools: [], status: { server, transport: ctx.transportOf(base), state: 'disabled', toolCount: 0 } };
  }
  let slot = base;
  try {
    slot = ctx.slotFor(base);
    const tools = await ctx.connections.withConnection(slot, undefined, slot.cfg.timeouts.listMs, async (conn) => {
      // A cached tool list says nothing about an HTTP server that went away since: ping it, so a
      // dead server is reported unavailable before the model plans around its tools. (A stdio
      // child's death closes its transport, which drops the connection already.)
      // (A listing past its `ttlMs` is listed again instead, which says as much.)
      if (use.probe !== false && heldTools(conn, ctx.now) && conn.kind !== 'stdio') await conn.session.ping(Math.min(slot.cfg.timeouts.listMs, PROBE_TIMEOUT_MS));
      return await listTools(ctx.connections.logger, slot, conn, ctx.now);
    }, use);
    return { server, tools, status: { server, transport: ctx.transportOf(slot), state: 'connected', toolCount: tools.length } };
  } catch (error) {
    if (error instanceof AuthorizationRequiredError) {
      const status = { server, transport: ctx.transportOf(slot), state: 'unavailable' as const, toolCount: 0 };
      return { server, tools: [], status: { ...status, error: 'needs authorization', authorizationUrl: error.authorizationUrl } };
    }
    const reason = (
      error instanceof McpFailure || error instanceof RefusedError
        ? error.reason
        : safeReason(describeCause(error), slot.secrets)
    ).replace(/^unavailable: /, ''); // the state already says so
    return {
      server,
      tools: [],
      status: { server, transport: ctx.transportOf(slot), state: 'unavailable', toolCount: 0, error: reason },
    };
  }
}

/** Whether the request being made now carries the caller's own token to this server (`forwardUserToken`). */
function callersOwnToken(slot: Slot): boolean {
  return slot.cfg.kind === 'http' && slot.cfg.forwardUserToken && callerContext.getStore()?.token !== undefined;
}

/** The connection's listing while it is fresh; one past its `ttlMs` is dropped. */
function heldTools(conn: Connection, now: () => number = Date.now): Promise<Tool[]> | undefined {
  if (conn.tools && conn.toolsExpireAt !== undefined && now() >= conn.toolsExpireAt) conn.tools = undefined;
  return conn.tools;
}

/**
 * The connection's tool listing: cached until `tools/list_changed` (and, when the server's caching
 * hint gives it a positive `ttlMs`, no longer than that: decision 0039), never kept when it failed. A
 * listing a 2026-07-28 server made for the caller's own forwarded token is that caller's: it is not
 * kept on the shared connection, nor shared while under way.
 */
export function listTools(logger: HubLogger, slot: Slot, conn: Connection, now: () => number = Date.now): Promise<Tool[]> {
  const held = heldTools(conn, now);
  if (held) return held;
  if (callersOwnToken(slot) && speaksHints(conn.session.protocolVersion?.())) return fetchAllTools(logger, slot, conn).then((l) => l.tools);
  const generation = conn.toolsGeneration ?? 0;
  const fetched = fetchAllTools(logger, slot, conn);
  const listing = fetched.then((l) => l.tools);
  conn.tools = listing;
  conn.toolsExpireAt = undefined;
  fetched.then(
    ({ cache }) => {
      if (conn.tools !== listing) return;
      if ((conn.toolsGeneration ?? 0) !== generation) conn.tools = undefined;
      else if (cache && cache.ttlMs > 0) conn.toolsExpireAt = now() + cache.ttlMs;
    },
    () => {
      if (conn.tools === listing) conn.tools = undefined;
    },
  );
  return listing;
}

async function fetchAllTools(logger: HubLogger, slot: Slot, conn: Connection): Promise<{ tools: Tool[]; cache?: CacheHint }> {
  const { tools, truncated, cache } = await listAllTools(conn.session, slot.cfg.timeouts.listMs);
  if (truncated) logger.warn({ server: slot.cfg.name }, 'tool listing truncated: too many pages');
  return { tools, ...(cache ? { cache } : {}) };
}
