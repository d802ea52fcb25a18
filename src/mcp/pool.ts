/**
 * The worker's pool of MCP connections: one long-lived client per configured server, opened on first
 * use and replaced on the next use after it dies. Concurrent first uses share one connect; a failed
 * connect is never cached (the next use within FAIL_FAST_MS fails fast, later ones try again); a
 * dropped connection finishes its in-flight requests before it is closed.
 *
 * Its neighbours hold the rest: transports.ts builds the transports, failures.ts classifies errors,
 * render.ts turns content into text for the LLM, catalog.ts names and lists the tools,
 * server-requests.ts routes a server's questions to the call they belong to, and
 * src/security/secrets.ts says what must never appear in a message.
 */
import { isDeepStrictEqual } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { RequestOptions } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { FetchLike, Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CallToolResultSchema,
  ListRootsRequestSchema,
  ResourceUpdatedNotificationSchema,
  ErrorCode,
  McpError,
  ToolListChangedNotificationSchema,
  UrlElicitationRequiredError,
  type ClientCapabilities,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import type { Catalog, ServerStatus, ToolOutcome } from '../shared/tool-types';
import { serverSecrets } from '../security/secrets';
import { buildCatalog, listAllTools, type ServerListing } from './catalog';
import { describeServer, type McpConfig, type McpServerConfig } from './config';
import type { McpContextSource } from './context-source';
import {
  McpAbortError,
  McpFailure,
  McpPermanentError,
  McpTransientError,
  classifyRequestError,
  describeCause,
  isConnectionRefused,
  isMissingOptionalStream,
  safeReason,
} from './failures';
import { AuthorizationDeniedError, AuthorizationRequiredError, authFetchFor, isPerUser, type OAuthSupport } from './oauth';
import { renderContent, renderResourceContents, toToolOutcome } from './render';
import { answerServerRequests, CallsInFlight, connectionContext, type ElicitationHandler, type SamplingHandler } from './server-requests';
import { callerContext, type CallerContext } from './user-token';
import { createTransport, openHttpWithFallback, pidOf, sessionIdOf, terminateHttpSession, type TransportKind } from './transports';
import type { CallToolRequest, McpHub, ToolTaskRef } from './types';
import { inClientSpan } from '../telemetry/tracing';

export interface HubLogger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

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
}

/** Whose connection a request without a caller (a listing at worker start) uses on a per-user server. */
export const HOST_PRINCIPAL = 'host';

/** The user must (re)authorize the host with the server; retrying without them cannot help. */
const isAuthorizationError = (error: unknown): error is AuthorizationRequiredError | AuthorizationDeniedError =>
  error instanceof AuthorizationRequiredError || error instanceof AuthorizationDeniedError;

/** Internal: the server refused the request in a way retrying cannot fix. */
class RefusedError extends Error {
  constructor(readonly reason: string) {
    super(reason);
  }
}

class ConnectTimeoutError extends Error {
  constructor(ms: number) {
    super(`connect timed out after ${ms} ms`);
  }
}

/** A connect attempt that failed within this window is not retried yet: fail fast instead. */
const FAIL_FAST_MS = 500;
const STDERR_TAIL_LINES = 20;
const TERMINATE_SESSION_TIMEOUT_MS = 1_000;
const PROBE_TIMEOUT_MS = 5_000;
/** How long a server keeps a tool call's task (and its result) for us: long enough to outlive a worker restart. */
const TASK_TTL_MS = 60 * 60_000;

const noop = (): void => undefined;
/** A request's `_meta`: the caller's fields and the trace context of its span; absent when both are empty. */
const metaParam = (meta: Record<string, unknown> | undefined, trace: Record<string, string>): { _meta?: Record<string, unknown> } =>
  meta || Object.keys(trace).length ? { _meta: { ...meta, ...trace } } : {};
const silentLogger: HubLogger = { debug: noop, info: noop, warn: noop, error: noop };

interface Connection {
  readonly id: number;
  readonly client: Client;
  readonly transport: Transport;
  readonly kind: TransportKind;
  pid?: number;
  /** False once closed or retired: no new work is handed to it. */
  alive: boolean;
  inflight: number;
  /** Resources subscribed to on this connection (each once). */
  subscribed: Set<string>;
  /** The tool calls in flight on this connection: a server's request is routed to the one it belongs to. */
  calls: CallsInFlight;
  /** Bumped by every `tools/list_changed`, so a listing that started before one is not kept. */
  toolsGeneration?: number;
  /** Tool listing for this connection; dropped on `tools/list_changed` and never kept on failure. */
  tools?: Promise<Tool[]>;
  closing?: Promise<void>;
}

interface Slot {
  /** Replaced in place only when a reload changes nothing but the roots (the connection stays). */
  cfg: McpServerConfig;
  /** Values that must never appear in a message (src/security/secrets.ts). */
  readonly secrets: readonly string[];
  conn?: Connection;
  /** Shared by concurrent first uses; cleared when settled, so a failure is never cached. */
  connecting?: Promise<Connection>;
  lastFailure?: { at: number; reason: string };
  /** For `transport: auto`: the HTTP transport that worked, so reconnects skip the probing. */
  httpKind?: 'streamable-http' | 'sse';
  /** The stdio child's last stderr lines: the best clue when it dies. */
  stderrTail: string[];
  /** Replaced or removed by a config reload: a connect still under way is closed, not kept. */
  replaced?: boolean;
  /** Set on a per-user server's own slots (one per user, created on first use). */
  principal?: string;
  /** A per-user server's slots by principal (on the server's base slot). */
  perUser?: Map<string, Slot>;
  /** The OAuth-aware fetch of a server with `auth`, made once per slot. */
  authFetch?: FetchLike;
}

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

async function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([promise, new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

export class McpServerHub implements McpHub, McpContextSource {
  private readonly slots = new Map<string, Slot>();
  private readonly open = new Set<Connection>();
  private readonly logger: HubLogger;
  private readonly clientInfo: { name: string; version: string };
  private readonly oauth: OAuthSupport | undefined;
  private readonly elicit: ElicitationHandler | undefined;
  private readonly sample: SamplingHandler | undefined;
  private readonly onResourceUpdated: ((server: string, uri: string) => void) | undefined;
  private readonly capabilities: ClientCapabilities;
  private nextConnectionId = 1;
  private closed = false;
  private closing?: Promise<void>;

  constructor(config: McpConfig, opts: McpServerHubOptions = {}) {
    this.logger = opts.logger ?? silentLogger;
    this.clientInfo = opts.clientInfo ?? { name: 'durable-mcp-host', version: '0.0.0' };
    this.oauth = opts.oauth;
    this.elicit = opts.elicit;
    this.sample = opts.sample;
    this.onResourceUpdated = opts.onResourceUpdated;
    this.capabilities = {
      // Every server may ask for its roots; one without `roots` in the config gets none.
      roots: { listChanged: true },
      // URL mode too: a server may send the user to a page of its own (src/mcp/elicitation.ts).
      ...(opts.elicit ? { elicitation: { form: { applyDefaults: true }, url: {} } } : {}),
      ...(opts.sample ? { sampling: {} } : {}),
    };
    for (const cfg of Object.values(config.mcpServers)) {
      this.slots.set(cfg.name, { cfg, secrets: serverSecrets(cfg), stderrTail: [] });
    }
  }

  // ---------------------------------------------------------------- public API

  async catalog(): Promise<Catalog> {
    return buildCatalog(await Promise.all([...this.slots.values()].map((slot) => this.inspect(slot))));
  }

  /** The server's configuration as loaded (for decisions such as whether its calls may be repeated). */
  serverConfig(server: string): McpServerConfig | undefined {
    return this.slots.get(server)?.cfg;
  }

  async status(): Promise<ServerStatus[]> {
    const listings = await Promise.all([...this.slots.values()].map((slot) => this.inspect(slot)));
    return listings.map((l) => l.status);
  }

  /** Opens every enabled server now (e.g. at worker start) so the first turn does not pay for it. */
  async connectAll(): Promise<ServerStatus[]> {
    return await this.status();
  }

  async callTool(req: CallToolRequest): Promise<ToolOutcome> {
    const slot = this.usableSlot(req.server);
    const timeout = req.timeoutMs ?? slot.cfg.timeouts.callMs;
    const caller = callerContext.getStore();
    const outcome = await this.withConnection(slot, req.signal, timeout, async (conn) => {
      // Known to the connection while it runs: a server's question during the call is routed to it.
      if (caller) conn.calls.add(caller);
      try {
        try {
          return this.normalizeResult(slot, req.tool, await this.requestToolCall(slot, conn, req, timeout));
        } catch (error) {
          // The server wants the user to visit pages first (-32042): ask, then call once more.
          const declined = await this.completeUrlElicitations(slot, req, caller, error);
          if (declined) return declined;
          return this.normalizeResult(slot, req.tool, await this.requestToolCall(slot, conn, req, timeout));
        }
      } finally {
        if (caller) conn.calls.delete(caller);
      }
    }).catch((error: unknown) => {
      // The server understood and refused (unknown tool, arguments rejected): data for the LLM.
      if (error instanceof RefusedError) {
        return { isError: true, text: `Tool "${req.tool}" on server "${req.server}" failed: ${error.reason}` };
      }
      throw error;
    });
    return outcome;
  }

  /**
   * A tools/call answered with `UrlElicitationRequired` (-32042): each page it lists goes to the
   * elicitation handler as a URL-mode request. Undefined when the user went to every one (the caller
   * then calls once more); a tool error when they would not; anything else rethrows `error`.
   */
  private async completeUrlElicitations(slot: Slot, req: CallToolRequest, caller: CallerContext | undefined, error: unknown): Promise<ToolOutcome | undefined> {
    const elicit = this.elicit;
    if (!(error instanceof UrlElicitationRequiredError) || !elicit) throw error;
    for (const params of error.elicitations) {
      const result = await elicit({
        server: slot.cfg.name,
        ...(slot.principal ? { principal: slot.principal } : {}),
        params,
        signal: req.signal ?? new AbortController().signal,
        ...(caller ? { caller } : {}),
      });
      // The handler aborted the call to ask the user: the caller's signal says so.
      if (req.signal?.aborted) throw error;
      if (result.action !== 'accept') {
        return { isError: true, text: `Tool "${req.tool}" on server "${slot.cfg.name}" needs the user to open ${params.url} first; they did not (${result.action}).` };
      }
    }
    return undefined;
  }

  private async requestToolCall(slot: Slot, conn: Connection, req: CallToolRequest, timeout: number): Promise<unknown> {
    if (req.resumeTask) {
      const resumed = await this.resumeTask(slot, conn, req.resumeTask, req.signal, timeout);
      if (resumed !== undefined) return resumed;
    }
    const params = { name: req.tool, arguments: req.arguments, ...(req.meta ? { _meta: req.meta } : {}) };
    const options = this.requestOptions(slot, req, timeout);
    // The listing is cached per connection; without one, the tool is called plainly.
    const listed = await this.listTools(slot, conn).catch((): Tool[] => []);
    const taskSupport = listed.find((t) => t.name === req.tool)?.execution?.taskSupport;
    if (taskSupport !== 'required' && taskSupport !== 'optional') {
      req.onSend?.();
      return await conn.client.callTool(params, CallToolResultSchema, options);
    }
    // A task's creation is reported instead (`onTask`): what a later attempt needs is the task to rejoin.
    return await this.callAsTask(conn, params, options, req);
  }

  /**
   * A tool that runs as an MCP task: the server answers at once with a task, which the SDK polls
   * until it ends. The task is reported (`onTask`) so that an attempt after a worker restart waits for
   * it instead of starting the work again; cancelling the call cancels the task.
   */
  private async callAsTask(
    conn: Connection,
    params: { name: string; arguments: Record<string, unknown>; _meta?: Record<string, unknown> },
    options: RequestOptions,
    req: CallToolRequest,
  ): Promise<unknown> {
    let taskId: string | undefined;
    try {
      for await (const message of conn.client.experimental.tasks.callToolStream(params, CallToolResultSchema, { ...options, task: { ttl: TASK_TTL_MS } })) {
        if (message.type === 'taskCreated') {
          taskId = message.task.taskId;
          conn.calls.noteTask(taskId, callerContext.getStore());
          const sessionId = sessionIdOf(conn.transport);
          req.onTask?.({ taskId, ...(sessionId ? { sessionId } : {}) });
        } else if (message.type === 'result') {
          return message.result;
        } else if (message.type === 'error') {
          throw message.error;
        }
      }
      throw new Error('the task ended without a result');
    } catch (error) {
      if (taskId && req.signal?.aborted) {
        await withTimeout(conn.client.experimental.tasks.cancelTask(taskId, { timeout: PROBE_TIMEOUT_MS }).catch(noop), PROBE_TIMEOUT_MS);
      }
      throw error;
    }
  }

  /**
   * The result of a task an earlier attempt started, or undefined when the server no longer knows it
   * (a restarted server, an expired task): the caller then calls the tool again, with the same
   * idempotency key. A task of another Streamable HTTP session is looked up by rejoining that session.
   */
  private async resumeTask(slot: Slot, conn: Connection, task: ToolTaskRef, signal: AbortSignal | undefined, timeout: number): Promise<unknown> {
    let client = conn.client;
    let rejoined: Client | undefined;
    if (task.sessionId && task.sessionId !== sessionIdOf(conn.transport) && slot.cfg.kind === 'http' && conn.kind === 'streamable-http') {
      rejoined = new Client(this.clientInfo, { capabilities: this.capabilities });
      await rejoined.connect(createTransport(slot.cfg, 'streamable-http', noop, slot.authFetch, task.sessionId), { timeout: slot.cfg.timeouts.connectMs });
      client = rejoined;
    }
    try {
      const options = { ...(signal ? { signal } : {}), timeout };
      const status = await client.experimental.tasks.getTask(task.taskId, options).catch(() => undefined);
      if (!status) return undefined;
      if (signal?.aborted) throw new McpAbortError(slot.cfg.name, signal.reason);
      this.logger.info({ server: slot.cfg.name, taskId: task.taskId, status: status.status }, 'resuming an MCP task an earlier attempt started');
      try {
        return await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema, options);
      } catch (error) {
        if (signal?.aborted) await withTimeout(client.experimental.tasks.cancelTask(task.taskId, { timeout: PROBE_TIMEOUT_MS }).catch(noop), PROBE_TIMEOUT_MS);
        throw error;
      }
    } finally {
      // Leave the session to the server (its other tasks may still be wanted); only close our side.
      if (rejoined) await rejoined.transport?.close().catch(noop);
    }
  }

  private requestOptions(slot: Slot, req: CallToolRequest, timeout: number): RequestOptions {
    const onProgress = req.onProgress;
    const onprogress = (p: { progress: number; total?: number; message?: string }): void => {
      try {
        onProgress?.({
          progress: p.progress,
          ...(p.total !== undefined ? { total: p.total } : {}),
          ...(p.message !== undefined ? { message: p.message } : {}),
        });
      } catch (error) {
        this.logger.warn({ server: slot.cfg.name, error: String(error) }, 'progress callback threw');
      }
    };
    return { ...(req.signal ? { signal: req.signal } : {}), timeout, resetTimeoutOnProgress: true, ...(onProgress ? { onprogress } : {}) };
  }


  async readResource(server: string, uri: string, opts: { signal?: AbortSignal; meta?: Record<string, unknown> } = {}): Promise<string> {
    const slot = this.usableSlot(server);
    const timeout = slot.cfg.timeouts.callMs;
    return await this.permanentOnRefusal(
      slot,
      this.withConnection(slot, opts.signal, timeout, async (conn) => {
        // A span per request sent (below the resilient hub's cache: a cached read sends none), its
        // context in `_meta` (traceparent) for the server's own traces, as for tools/call.
        const attributes = { 'mcp.server': server, 'mcp.method': 'resources/read', 'mcp.resource.uri': uri };
        const result = await inClientSpan(`resources/read ${server}`, attributes, (trace) =>
          conn.client.readResource({ uri, ...metaParam(opts.meta, trace) }, { ...(opts.signal ? { signal: opts.signal } : {}), timeout }),
        );
        this.subscribe(slot, conn, uri);
        return result.contents.map((c) => renderResourceContents(c)).join('\n');
      }),
    );
  }

  async getPrompt(
    server: string,
    name: string,
    args?: Record<string, string>,
    opts: { signal?: AbortSignal; meta?: Record<string, unknown> } = {},
  ): Promise<string> {
    const slot = this.usableSlot(server);
    const timeout = slot.cfg.timeouts.callMs;
    return await this.permanentOnRefusal(
      slot,
      this.withConnection(slot, opts.signal, timeout, async (conn) => {
        const attributes = { 'mcp.server': server, 'mcp.method': 'prompts/get', 'mcp.prompt': name };
        const result = await inClientSpan(`prompts/get ${server}/${name}`, attributes, (trace) =>
          conn.client.getPrompt(
            { name, ...(args ? { arguments: args } : {}), ...metaParam(opts.meta, trace) },
            { ...(opts.signal ? { signal: opts.signal } : {}), timeout },
          ),
        );
        return result.messages.map((m) => `${m.role}: ${renderContent([m.content])}`).join('\n\n');
      }),
    );
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
      this.slots.set(name, { cfg, secrets: serverSecrets(cfg), stderrTail: [] });
    }
    return summary;
  }

  private updateRoots(base: Slot, cfg: McpServerConfig): void {
    for (const slot of [base, ...(base.perUser?.values() ?? [])]) {
      slot.cfg = cfg;
      const conn = slot.conn;
      if (!conn?.alive) continue;
      conn.client.sendRootsListChanged().catch((error: unknown) =>
        this.logger.debug({ server: cfg.name, error: safeReason(describeCause(error), slot.secrets) }, 'could not announce changed roots'),
      );
    }
  }

  /**
   * Asks the server to say when a resource we read changes (once per connection, where the server
   * supports subscriptions). Best effort: without it the cache's TTL still applies.
   */
  private subscribe(slot: Slot, conn: Connection, uri: string): void {
    if (!this.onResourceUpdated || conn.subscribed.has(uri) || !conn.client.getServerCapabilities()?.resources?.subscribe) return;
    conn.subscribed.add(uri);
    conn.client.subscribeResource({ uri }).catch((error: unknown) => {
      conn.subscribed.delete(uri);
      this.logger.debug({ server: slot.cfg.name, uri, error: safeReason(describeCause(error), slot.secrets) }, 'could not subscribe to a resource');
    });
  }

  /** The stdio child's pid while connected (diagnostics and tests). */
  serverPid(server: string): number | undefined {
    const conn = this.slots.get(server)?.conn;
    return conn?.alive ? conn.pid : undefined;
  }

  close(): Promise<void> {
    this.closing ??= this.closeAll();
    return this.closing;
  }

  // ---------------------------------------------------------------- connections

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
    if (slot.conn) this.retire(slot, slot.conn, reason);
    for (const user of slot.perUser?.values() ?? []) this.dropSlot(user, reason);
  }

  private transportOf(slot: Slot): TransportKind {
    const cfg = slot.cfg;
    if (cfg.kind === 'stdio') return 'stdio';
    if (slot.conn?.alive) return slot.conn.kind;
    if (cfg.transport !== 'auto') return cfg.transport;
    return slot.httpKind ?? 'streamable-http';
  }

  private transient(slot: Slot, reason: string): McpTransientError {
    return new McpTransientError(slot.cfg.name, safeReason(reason, slot.secrets));
  }

  private acquire(slot: Slot, signal?: AbortSignal): Promise<Connection> {
    if (this.closed) return Promise.reject(this.transient(slot, 'the MCP hub is shut down'));
    if (slot.conn?.alive) return Promise.resolve(slot.conn);
    if (!slot.connecting) {
      const last = slot.lastFailure;
      if (last && Date.now() - last.at < FAIL_FAST_MS) {
        return Promise.reject(this.transient(slot, `unavailable: ${last.reason}`));
      }
      slot.connecting = this.openConnection(slot)
        .then(
          (conn) => {
            if (this.closed || slot.replaced) {
              void this.closeConnection(conn, false);
              throw this.transient(slot, this.closed ? 'the MCP hub is shut down' : 'the server was reconfigured; retry');
            }
            slot.conn = conn;
            slot.lastFailure = undefined;
            return conn;
          },
          (error: unknown) => {
            // Not the server failing: the user has to act. No fail-fast window, no warning.
            if (isAuthorizationError(error)) throw error;
            const reason = safeReason(describeCause(error), slot.secrets);
            slot.lastFailure = { at: Date.now(), reason };
            const tail = slot.stderrTail.map((line) => safeReason(line, slot.secrets));
            this.logger.warn(
              { server: slot.cfg.name, reason, ...(tail.length ? { stderrTail: tail } : {}) },
              `MCP server unavailable: ${describeServer(slot.cfg)}`,
            );
            throw this.transient(slot, `unavailable: ${reason}`);
          },
        )
        .finally(() => {
          slot.connecting = undefined;
        });
    }
    return signal ? this.raceAbort(slot, slot.connecting, signal) : slot.connecting;
  }

  /** Gives up waiting when the signal fires, without cancelling the shared connect. */
  private raceAbort<T>(slot: Slot, promise: Promise<T>, signal: AbortSignal): Promise<T> {
    if (signal.aborted) return Promise.reject(new McpAbortError(slot.cfg.name, signal.reason));
    return new Promise<T>((resolve, reject) => {
      const onAbort = (): void => reject(new McpAbortError(slot.cfg.name, signal.reason));
      signal.addEventListener('abort', onAbort, { once: true });
      promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
    });
  }

  private async openConnection(slot: Slot): Promise<Connection> {
    const cfg = slot.cfg;
    if (cfg.kind === 'stdio') return await this.openOnce(slot, 'stdio');
    const preferred = cfg.transport === 'auto' ? slot.httpKind : cfg.transport;
    if (preferred) return await this.openOnce(slot, preferred);
    const { conn, kind } = await openHttpWithFallback(
      (k) => this.openOnce(slot, k),
      (reason) => this.logger.info({ server: cfg.name, reason: safeReason(reason, slot.secrets) }, 'Streamable HTTP refused; trying legacy HTTP+SSE'),
    );
    slot.httpKind = kind;
    return conn;
  }

  /** Keeps a stdio child's last stderr lines and sends each to the debug log. */
  private stderrLine(slot: Slot, line: string): void {
    slot.stderrTail.push(line);
    if (slot.stderrTail.length > STDERR_TAIL_LINES) slot.stderrTail.shift();
    this.logger.debug({ server: slot.cfg.name }, `[${slot.cfg.name}] ${line}`);
  }

  private async openOnce(slot: Slot, kind: TransportKind): Promise<Connection> {
    const cfg = slot.cfg;
    slot.stderrTail = [];
    const transport = createTransport(cfg, kind, (line) => this.stderrLine(slot, line), slot.authFetch);
    const client = new Client(this.clientInfo, { capabilities: this.capabilities });
    const conn: Connection = { id: this.nextConnectionId++, client, transport, kind, alive: false, inflight: 0, calls: new CallsInFlight(kind !== 'streamable-http'), subscribed: new Set() };

    // Set before connect: the SDK chains its own handlers after these.
    transport.onerror = (error: Error) => this.onTransportError(slot, conn, error);
    client.onclose = () => this.onConnectionClosed(slot, conn);
    client.onerror = (error: Error) =>
      this.logger.debug({ server: cfg.name, error: safeReason(describeCause(error), slot.secrets) }, 'MCP protocol notice');
    // Read at each request: a reload that changes only the roots updates the slot, not the connection.
    client.setRequestHandler(ListRootsRequestSchema, () => ({ roots: [...(slot.cfg.roots ?? [])] }));
    answerServerRequests(client, {
      server: cfg.name,
      ...(slot.principal ? { principal: slot.principal } : {}),
      calls: conn.calls,
      ...(this.elicit ? { elicit: this.elicit } : {}),
      ...(this.sample ? { sample: this.sample } : {}),
      debug: (obj, msg) => this.logger.debug(obj, msg),
    });
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, (notification) => {
      this.logger.debug({ server: cfg.name, uri: notification.params.uri }, 'MCP resource updated');
      this.onResourceUpdated?.(cfg.name, notification.params.uri);
    });
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      conn.tools = undefined;
      // A listing already in flight may predate the change: it must not become the cache.
      conn.toolsGeneration = (conn.toolsGeneration ?? 0) + 1;
    });

    const connectMs = cfg.timeouts.connectMs;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new ConnectTimeoutError(connectMs)), connectMs);
    });
    this.open.add(conn);
    try {
      // Not in the caller's context: the streams the connection keeps open must carry no call's (server-requests.ts).
      const connecting = callerContext.run(connectionContext(callerContext.getStore()), () => client.connect(transport, { timeout: connectMs }));
      await Promise.race([connecting, timedOut]);
    } catch (error) {
      // Not awaited: killing a hung child can take seconds and the caller should hear now. The
      // connection stays in `open` until it is gone, so close() still waits for it.
      void this.closeConnection(conn, false);
      if (kind === 'stdio' && error instanceof McpError && error.code === ErrorCode.ConnectionClosed) {
        throw new Error('server process exited before completing the MCP handshake (its stderr is in the debug log)');
      }
      throw error;
    } finally {
      clearTimeout(timer);
    }
    conn.pid = pidOf(transport);
    conn.alive = true;
    this.logger.info(
      { server: cfg.name, transport: kind, ...(conn.pid !== undefined ? { pid: conn.pid } : {}) },
      `MCP server connected: ${describeServer(cfg)}`,
    );
    return conn;
  }

  private onTransportError(slot: Slot, conn: Connection, error: Error): void {
    // The request that needed authorization fails on its own; the connection itself is fine.
    if (isAuthorizationError(error)) return;
    if (isMissingOptionalStream(error)) {
      this.logger.debug({ server: slot.cfg.name }, 'server has no GET stream (404); requests continue over POST');
      return;
    }
    const reason = safeReason(describeCause(error), slot.secrets);
    if (!conn.alive) return;
    this.logger.debug({ server: slot.cfg.name, transport: conn.kind, reason }, 'MCP transport error');
    // Legacy SSE carries every response on its one stream: once that stream broke, in-flight
    // requests can never complete, so fail them now. Other transports keep working requests alive
    // and only stop taking new ones.
    if (conn.kind === 'sse') {
      this.retire(slot, conn, reason);
      void this.closeConnection(conn, false);
    } else if (conn.kind === 'streamable-http') {
      this.retire(slot, conn, reason);
    }
    // stdio: a broken pipe is followed by the child's close event, which does the work.
  }

  private onConnectionClosed(slot: Slot, conn: Connection): void {
    const wasAlive = conn.alive;
    conn.alive = false;
    conn.tools = undefined;
    this.open.delete(conn);
    if (slot.conn === conn) slot.conn = undefined;
    if (wasAlive && !this.closed) {
      // For a crashed stdio server, its last words are the best clue to why.
      const tail = conn.kind === 'stdio' ? slot.stderrTail.slice(-5).map((line) => safeReason(line, slot.secrets)) : [];
      this.logger.warn(
        { server: slot.cfg.name, transport: conn.kind, ...(tail.length ? { stderrTail: tail } : {}) },
        'MCP connection closed; the next use reconnects',
      );
    }
  }

  /** Stops handing the connection out; closes it once its in-flight requests are done. */
  private retire(slot: Slot, conn: Connection, reason: string): void {
    if (conn.alive) {
      this.logger.info({ server: slot.cfg.name, transport: conn.kind, reason }, 'dropping MCP connection; the next use reconnects');
    }
    conn.alive = false;
    conn.tools = undefined;
    if (slot.conn === conn) slot.conn = undefined;
    if (conn.inflight === 0) void this.closeConnection(conn, false);
  }

  private closeConnection(conn: Connection, terminateSession: boolean): Promise<void> {
    conn.alive = false;
    conn.closing ??= (async () => {
      if (terminateSession) await withTimeout(terminateHttpSession(conn.transport).catch(noop), TERMINATE_SESSION_TIMEOUT_MS);
      // For stdio this ends stdin, then escalates SIGTERM → SIGKILL, and waits for the exit:
      // no orphaned or zombie children.
      await conn.client.close().catch(noop);
      this.open.delete(conn);
    })();
    return conn.closing;
  }

  private async closeAll(): Promise<void> {
    this.closed = true;
    const all = [...this.slots.values()].flatMap((slot) => [slot, ...(slot.perUser?.values() ?? [])]);
    await Promise.allSettled(all.map((slot) => slot.connecting));
    for (const slot of all) slot.conn = undefined;
    await Promise.all([...this.open].map((conn) => this.closeConnection(conn, true)));
  }

  // ---------------------------------------------------------------- requests

  private async withConnection<T>(
    slot: Slot,
    signal: AbortSignal | undefined,
    timeoutMs: number,
    op: (conn: Connection) => Promise<T>,
  ): Promise<T> {
    if (signal?.aborted) throw new McpAbortError(slot.cfg.name, signal.reason);
    const conn = await this.acquire(slot, signal);
    conn.inflight += 1;
    try {
      return await op(conn);
    } catch (error) {
      if (error instanceof RefusedError || isAuthorizationError(error)) throw error;
      const verdict = classifyRequestError(error, { ...(signal ? { signal } : {}), timeoutMs, secrets: slot.secrets });
      if (verdict.kind === 'aborted') throw new McpAbortError(slot.cfg.name, verdict.cause);
      if (verdict.kind === 'refused') throw new RefusedError(verdict.reason);
      if (verdict.connection === 'probe') this.probe(slot, conn);
      if (verdict.connection === 'retire') this.retire(slot, conn, verdict.reason);
      // The connection was there and the request was handed to it: unless the server provably
      // refused the connection, it may have received (and applied) it.
      throw new McpTransientError(slot.cfg.name, verdict.reason, { requestSent: !isConnectionRefused(error), answered: verdict.answered });
    } finally {
      conn.inflight -= 1;
      if (!conn.alive && conn.inflight === 0 && slot.conn !== conn) void this.closeConnection(conn, false);
    }
  }

  /**
   * After a timeout, is the server wedged or just slow? A ping tells; a wedged connection is dropped
   * so retries do not keep queueing behind it.
   */
  private probe(slot: Slot, conn: Connection): void {
    if (!conn.alive) return;
    conn.client.ping({ timeout: PROBE_TIMEOUT_MS }).catch(() => this.retire(slot, conn, 'server stopped answering pings'));
  }

  private async permanentOnRefusal<T>(slot: Slot, work: Promise<T>): Promise<T> {
    try {
      return await work;
    } catch (error) {
      if (error instanceof RefusedError) throw new McpPermanentError(slot.cfg.name, error.reason);
      throw error;
    }
  }

  private normalizeResult(slot: Slot, tool: string, raw: unknown): ToolOutcome {
    const outcome = toToolOutcome(raw);
    if (outcome) return outcome;
    this.logger.warn({ server: slot.cfg.name, tool }, 'tool returned a malformed result');
    throw new RefusedError('the server sent a malformed result');
  }

  private async inspect(base: Slot): Promise<ServerListing> {
    const server = base.cfg.name;
    if (base.cfg.disabled) {
      return { server, tools: [], status: { server, transport: this.transportOf(base), state: 'disabled', toolCount: 0 } };
    }
    let slot = base;
    try {
      slot = this.callerSlot(base);
      const tools = await this.withConnection(slot, undefined, slot.cfg.timeouts.listMs, async (conn) => {
        // A cached tool list says nothing about an HTTP server that went away since: ping it, so a
        // dead server is reported unavailable before the model plans around its tools. (A stdio
        // child's death closes its transport, which drops the connection already.)
        if (conn.tools && conn.kind !== 'stdio') await conn.client.ping({ timeout: Math.min(slot.cfg.timeouts.listMs, PROBE_TIMEOUT_MS) });
        return await this.listTools(slot, conn);
      });
      return { server, tools, status: { server, transport: this.transportOf(slot), state: 'connected', toolCount: tools.length } };
    } catch (error) {
      if (error instanceof AuthorizationRequiredError) {
        const status = { server, transport: this.transportOf(slot), state: 'unavailable' as const, toolCount: 0 };
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
        status: { server, transport: this.transportOf(slot), state: 'unavailable', toolCount: 0, error: reason },
      };
    }
  }

  private listTools(slot: Slot, conn: Connection): Promise<Tool[]> {
    if (conn.tools) return conn.tools;
    const generation = conn.toolsGeneration ?? 0;
    const listing = this.fetchAllTools(slot, conn);
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

  private async fetchAllTools(slot: Slot, conn: Connection): Promise<Tool[]> {
    const { tools, truncated } = await listAllTools(conn.client, slot.cfg.timeouts.listMs);
    if (truncated) this.logger.warn({ server: slot.cfg.name }, 'tool listing truncated: too many pages');
    return tools;
  }
}
