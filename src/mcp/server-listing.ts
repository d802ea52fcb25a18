/**
 * One server's listing for the catalog and the status report (catalog.ts builds the catalog from
 * them): its tools, cached per connection until the server says they changed, and its state.
 */
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { listAllTools, type ServerListing } from './catalog';
import { PROBE_TIMEOUT_MS, type Connections } from './connections';
import { RefusedError, type Connection, type HubLogger, type Slot } from './pool-state';
import { McpFailure, describeCause, safeReason } from './failures';
import { AuthorizationRequiredError } from './oauth';
import type { TransportKind } from './transports';

export interface ListingContext {
  connections: Connections;
  /** The slot the listing uses (a per-user server's: the caller's). */
  slotFor(base: Slot): Slot;
  transportOf(slot: Slot): TransportKind;
}

/** The server's tools and state; a failure is reported in the status, never thrown. */
export async function inspect(ctx: ListingContext, base: Slot): Promise<ServerListing> {
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
      if (conn.tools && conn.kind !== 'stdio') await conn.session.ping(Math.min(slot.cfg.timeouts.listMs, PROBE_TIMEOUT_MS));
      return await listTools(ctx.connections.logger, slot, conn);
    });
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

/** The connection's tool listing: cached until `tools/list_changed`, never kept when it failed. */
export function listTools(logger: HubLogger, slot: Slot, conn: Connection): Promise<Tool[]> {
  if (conn.tools) return conn.tools;
  const generation = conn.toolsGeneration ?? 0;
  const listing = fetchAllTools(logger, slot, conn);
  conn.tools = listing;
  listing.then(
    () => {
      if (conn.tools === listing && (conn.toolsGeneration ?? 0) !== generation) conn.tools = undefined;
    },
    () => {
      if (conn.tools === listing) conn.tools = undefined;
    },
  );
  return listing;
}

async function fetchAllTools(logger: HubLogger, slot: Slot, conn: Connection): Promise<Tool[]> {
  const { tools, truncated } = await listAllTools(conn.session, slot.cfg.timeouts.listMs);
  if (truncated) logger.warn({ server: slot.cfg.name }, 'tool listing truncated: too many pages');
  return tools;
}
