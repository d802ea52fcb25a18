/**
 * The worker's pool of MCP connections: one long-lived client per configured server (per user, for a
 * server with user OAuth), opened on first use and replaced on the next use after it dies. This file
 * is the pool's face (McpHub, McpContextSource) and its table of servers; the work is done by its
 * neighbours, one job each:
 *
 * - connections.ts: the connections' life (connect, fail fast, retire, reconnect, close); pool-state.ts:
 *   the slot and connection records they share;
 * - session.ts: what the pool asks of one connection; session-v1.ts: that on the v1 SDK;
 * - tool-calls.ts: tool calls and MCP tasks; resources.ts: resources, subscriptions and prompts;
 * - server-listing.ts and catalog.ts: each server's tools and state, and the catalog built from them;
 * - server-requests.ts: a server's questions, routed to the call they belong to;
 * - transports.ts builds the transports, failures.ts classifies errors, render.ts turns content into
 *   text for the LLM, and src/security/secrets.ts says what must never appear in a message.
 */
import { isDeepStrictEqual } from 'node:util';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { Catalog, ServerStatus, ToolOutcome } from '../shared/tool-types';
import { serverSecrets } from '../security/secrets';
import { buildCatalog } from './catalog';
import type { McpConfig, McpServerConfig } from './config';
import { Connections } from './connections';
import type { McpContextSource } from './context-source';
import { McpPermanentError, describeCause, safeReason } from './failures';
import { authFetchFor, isPerUser, type OAuthSupport } from './oauth';
import { noop, type HubLogger, type Slot } from './pool-state';
import type { HintedRead } from './resource-cache';
import { getPrompt, listResources, readResource, type ContextRequestOptions, type ListedResourceEntry, type ResourceContext } from './resources';
import { inspect, type ListingContext } from './server-listing';
import type { ElicitationHandler, SamplingHandler } from './server-requests';
import { callTool, type ToolCallContext } from './tool-calls';
import type { TransportKind } from './transports';
import type { CallToolRequest, CatalogOptions, McpHub } from './types';
import { callerContext } from './user-token';

export type { HubLogger } from './pool-state';

export interface McpServerHubOptions {
  logger?: HubLogger;
  clientInfo?: { name: string; version: string };
  /** Token store and callback for servers with `auth: { type: "oauth" }`; without it they are unusable. */
  oauth?: OAuthSupport;
  /**
   * Answers a server's `elicitation/create` (form mode; the SDK fills in the schema's defaults the
   * answer leaves out). Without it the host declares no elicitation capability.
   */
  elicit?: ElicitationHandler;
  /** Answers a server's `sampling/createMessage` with the host's model. Without it the host declares no sampling. */
  sample?: SamplingHandler;
  /**
   * A resource this pool read (and subscribed to, where the server supports subscriptions) changed
   * (`notifications/resources/updated`): a cache of it is stale now.
   */
  onResourceUpdated?: (server: string, uri: string) => void;
  /** The clock of connect failures, back-offs and listings' `ttlMs` (default Date.now; tests). */
  now?: () => number;
}

/** Whose connection a request without a caller (a listing at worker start) uses on a per-user server. */
export const HOST_PRINCIPAL = 'host';

const silentLogger: HubLogger = { debug: noop, info: noop, warn: noop, error: noop };

/** What a config reload did to the servers (by name). */
export interface ReconfigureSummary {
  added: string[];
  removed: string[];
  changed: string[];
}

/** A server's settings apart from its roots (which change without a reconnect). */
function withoutRoots(cfg: McpServerConfig): McpServerConfig {
  const { roots: _roots, ...rest } = cfg;
  return rest as McpServerConfig;
}

const newSlot = (cfg: McpServerConfig): Slot => ({ cfg, secrets: serverSecrets(cfg), stderrTail: [] });

export class McpServerHub implements McpHub, McpContextSource {
  private readonly slots = new Map<string, Slot>();
  private readonly logger: HubLogger;
  private readonly oauth: OAuthSupport | undefined;
  private readonly connections: Connections;
  private readonly calls: ToolCallContext;
  private readonly listing: ListingContext;
  private readonly context: ResourceContext;
  private closing?: Promise<void>;

  constructor(config: McpConfig, opts: McpServerHubOptions = {}) {
    this.logger = opts.logger ?? silentLogger;
    this.oauth = opts.oauth;
    this.connections = new Connections({
      logger: this.logger,
      clientInfo: opts.clientInfo ?? { name: 'durable-mcp-host', version: '0.0.0' },
      capabilities: {
        // Every server may ask for its roots; one without `roots` in the config gets none.
        roots: { listChanged: true },
        // URL mode too: a server may send the user to a page of its own (src/mcp/elicitation.ts).
        ...(opts.elicit ? { elicitation: { form: { applyDefaults: true }, url: {} } } : {}),
        ...(opts.sample ? { sampling: {} } : {}),
      },
      ...(opts.elicit ? { elicit: opts.elicit } : {}),
      ...(opts.sample ? { sample: opts.sample } : {}),
      ...(opts.onResourceUpdated ? { onResourceUpdated: opts.onResourceUpdated } : {}),
      ...(opts.now ? { now: opts.now } : {}),
    });
    this.calls = { connections: this.connections, ...(opts.elicit ? { elicit: opts.elicit } : {}) };
    this.listing = {
      connections: this.connections,
      slotFor: (base) => this.callerSlot(base),
      transportOf: (slot) => this.transportOf(slot),
      ...(opts.now ? { now: opts.now } : {}),
    };
    this.context = { connections: this.connections, ...(opts.onResourceUpdated ? { onResourceUpdated: opts.onResourceUpdated } : {}) };
    for (const cfg of Object.values(config.mcpServers)) this.slots.set(cfg.name, newSlot(cfg));
  }

  // ---------------------------------------------------------------- public API

  async catalog(opts: CatalogOptions = {}): Promise<Catalog> {
    const use = opts.probe === false ? { probe: false } : {};
    return buildCatalog(await Promise.all([...this.slots.values()].map((slot) => inspect(this.listing, slot, use))));
  }

  /** The server's configuration as loaded (for decisions such as whether its calls may be repeated). */
  serverConfig(server: string): McpServerConfig | undefined {
    return this.slots.get(server)?.cfg;
  }

  /**
   * Each server's state, for the health reports (asked every WORKER_REPORT_MS): a server whose
   * connects keep failing is tried again only once its back-off has passed (connections.ts
   * `reconnectBackoffMs`), its last failure reported meanwhile. A turn's catalog() tries at once.
   */
  async status(): Promise<ServerStatus[]> {
    const listings = await Promise.all([...this.slots.values()].map((slot) => inspect(this.listing, slot, { background: true })));
    return listings.map((l) => l.status);
  }

  /** Opens every enabled server now (e.g. at worker start) so the first turn does not pay for it. */
  async connectAll(): Promise<ServerStatus[]> {
    return await this.status();
  }

  async callTool(req: CallToolRequest): Promise<ToolOutcome> {
    return await callTool(this.calls, this.usableSlot(req.server), req);
  }

  async listResources(server: string, opts: ContextRequestOptions = {}): Promise<ListedResourceEntry[]> {
    return await listResources(this.context, this.usableSlot(server), opts);
  }

  async readResource(server: string, uri: string, opts: ContextRequestOptions = {}): Promise<string> {
    return (await this.readResourceHinted(server, uri, opts)).text;
  }

  /** The read with the server's caching hint (MCP 2026-07-28), for the resilient hub's cache. */
  async readResourceHinted(server: string, uri: string, opts: ContextRequestOptions = {}): Promise<HintedRead> {
    return await readResource(this.context, this.usableSlot(server), uri, opts);
  }

  async getPrompt(server: string, name: string, args?: Record<string, string>, opts: ContextRequestOptions = {}): Promise<string> {
    return await getPrompt(this.context, this.usableSlot(server), name, args, opts);
  }

  /**
   * Applies a reloaded config. Servers whose settings did not change keep their connection; removed
   * and changed ones stop taking new requests and close once their in-flight requests are done (a
   * changed one reconnects with its new settings on next use).
   */
  reconfigure(config: McpConfig): ReconfigureSummary {
    const summary: ReconfigureSummary = { added: [], removed: [], changed: [] };
    const next = new Map(Object.values(config.mcpServers).map((cfg) => [cfg.name, cfg]));
    for (const [name, slot] of this.slots) {
      const cfg = next.get(name);
      if (cfg && isDeepStrictEqual(cfg, slot.cfg)) continue;
      // Only the roots changed: keep the connections and tell the server (roots/list_changed).
      if (cfg && isDeepStrictEqual(withoutRoots(cfg), withoutRoots(slot.cfg))) {
        this.updateRoots(slot, cfg);
        summary.changed.push(name);
        continue;
      }
      (cfg ? summary.changed : summary.removed).push(name);
      this.dropSlot(slot, cfg ? 'its settings changed in the MCP config' : 'it was removed from the MCP config');
      this.slots.delete(name);
    }
    for (const [name, cfg] of next) {
      if (this.slots.has(name)) continue;
      if (!summary.changed.includes(name)) summary.added.push(name);
      this.slots.set(name, newSlot(cfg));
    }
    return summary;
  }

  /** The stdio child's pid while connected (diagnostics and tests). */
  serverPid(server: string): number | undefined {
    const conn = this.slots.get(server)?.conn;
    return conn?.alive ? conn.pid : undefined;
  }

  close(): Promise<void> {
    this.closing ??= this.connections.closeAll([...this.slots.values()]);
    return this.closing;
  }

  // ---------------------------------------------------------------- slots

  private updateRoots(base: Slot, cfg: McpServerConfig): void {
    for (const slot of [base, ...(base.perUser?.values() ?? [])]) {
      slot.cfg = cfg;
      const conn = slot.conn;
      if (!conn?.alive) continue;
      conn.session.sendRootsListChanged().catch((error: unknown) =>
        this.logger.debug({ server: cfg.name, error: safeReason(describeCause(error), slot.secrets) }, 'could not announce changed roots'),
      );
    }
  }

  private usableSlot(server: string): Slot {
    const slot = this.slots.get(server);
    if (!slot) throw new McpPermanentError(server, 'no such MCP server is configured');
    if (slot.cfg.disabled) throw new McpPermanentError(server, 'server is disabled in the MCP config');
    return this.callerSlot(slot);
  }

  /**
   * The slot a request uses: the server's own, or for a per-user server (user OAuth) the calling
   * user's, so no MCP session and no token is ever shared between users.
   */
  private callerSlot(base: Slot): Slot {
    const cfg = base.cfg;
    if (cfg.kind !== 'http' || !cfg.auth) return base;
    const principal = isPerUser(cfg) ? (callerContext.getStore()?.principal ?? HOST_PRINCIPAL) : HOST_PRINCIPAL;
    if (!isPerUser(cfg)) {
      base.authFetch ??= this.authFetch(base, principal);
      return base;
    }
    base.perUser ??= new Map();
    let slot = base.perUser.get(principal);
    if (!slot) {
      slot = { cfg, secrets: base.secrets, stderrTail: [], principal };
      slot.authFetch = this.authFetch(slot, principal);
      base.perUser.set(principal, slot);
    }
    return slot;
  }

  private authFetch(slot: Slot, principal: string): FetchLike | undefined {
    if (slot.cfg.kind !== 'http') return undefined;
    try {
      return authFetchFor(slot.cfg, principal, this.oauth);
    } catch (error) {
      throw new McpPermanentError(slot.cfg.name, describeCause(error));
    }
  }

  private dropSlot(slot: Slot, reason: string): void {
    slot.replaced = true;
    if (slot.conn) this.connections.retire(slot, slot.conn, reason);
    for (const user of slot.perUser?.values() ?? []) this.dropSlot(user, reason);
  }

  private transportOf(slot: Slot): TransportKind {
    const cfg = slot.cfg;
    if (cfg.kind === 'stdio') return 'stdio';
    if (slot.conn?.alive) return slot.conn.kind;
    if (cfg.transport !== 'auto') return cfg.transport;
    return slot.httpKind ?? 'streamable-http';
  }
}
