/**
 * The life of the pool's connections: one per slot (a server, or a user of a per-user server), opened
 * on first use and replaced on the next use after it dies. Concurrent first uses share one connect,
 * each waiting for it its own connect timeout (connect-attempt.ts); a failed connect is never cached
 * (the next use within FAIL_FAST_MS fails fast, later ones try again; the health reports' background
 * checks back off instead, see `reconnectBackoffMs`); a dropped connection finishes its in-flight
 * requests before it is closed.
 *
 * Each connection is a session (session.ts); which SDK revision speaks for it is the `openSession`
 * this is given (by default session-select.ts's, by the server's `protocol`, with the slot's discovery).
 */
import type { ClientCapabilities } from '@modelcontextprotocol/sdk/types.js';
import { describeServer } from './config';
import { ConnectTimeoutError, FAIL_FAST_MS, reconnectBackoffMs, startConnectAttempt, type AttemptLimits } from './connect-attempt';
import {
  McpAbortError,
  McpTransientError,
  classifyRequestError,
  describeCause,
  isConnectionRefused,
  isMissingOptionalStream,
  safeReason,
} from './failures';
import { RefusedError, isAuthorizationError, noop, withTimeout, type ConnectAttempt, type Connection, type HubLogger, type Slot } from './pool-state';
import { CallsInFlight, connectionContext, type ElicitationHandler, type SamplingHandler } from './server-requests';
import type { OpenSession, SessionHooks } from './session';
import { DroppedResponse, TransportFault } from './transport-limits';
import { SlotDiscovery, openSessionFor } from './session-select';
import { openHttpWithFallback, type TransportKind } from './transports';
import { callerContext } from './user-token';

/** How a use waits for its connection: a background check (`background`) waits out the reconnect back-off. */
export interface UseOptions {
  background?: boolean;
  /** A listing's ping of an HTTP server whose tools are held (server-listing.ts); default true. */
  probe?: boolean;
}

const STDERR_TAIL_LINES = 20;
const TERMINATE_SESSION_TIMEOUT_MS = 1_000;
export const PROBE_TIMEOUT_MS = 5_000;

export interface ConnectionsOptions {
  logger: HubLogger;
  clientInfo: { name: string; version: string };
  capabilities: ClientCapabilities;
  elicit?: ElicitationHandler;
  sample?: SamplingHandler;
  onResourceUpdated?: (server: string, uri: string) => void;
  /** Makes each connection's session; by default the server's revision's (session-select.ts). */
  openSession?: OpenSession;
  /** The clock failures, back-offs and repeated warnings are measured on (default Date.now). */
  now?: () => number;
}

/** How often a server that keeps failing the same way is reported at warn level again. */
const REPEAT_WARNING_MS = 5 * 60 * 1000;

export class Connections {
  readonly logger: HubLogger;
  private readonly open = new Set<Connection>();
  private readonly openSession: OpenSession;
  private readonly now: () => number;
  private nextConnectionId = 1;
  private closed = false;

  constructor(private readonly opts: ConnectionsOptions) {
    this.logger = opts.logger;
    this.openSession = opts.openSession ?? openSessionFor;
    // Date.now read at each call: a test may fake the clock after the pool is made.
    this.now = opts.now ?? (() => Date.now());
  }

  /** Runs `op` on the slot's connection (opened if need be), turning its failure into the pool's errors. */
  async withConnection<T>(
    slot: Slot,
    signal: AbortSignal | undefined,
    timeoutMs: number,
    op: (conn: Connection) => Promise<T>,
    use: UseOptions = {},
  ): Promise<T> {
    if (signal?.aborted) throw new McpAbortError(slot.cfg.name, signal.reason);
    const conn = await this.acquire(slot, signal, use);
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
      // A connection dropped for breaking the transport's limits: its calls say why, not "connection closed".
      const reason = conn.fault && !(error instanceof TransportFault) ? safeReason(conn.fault, slot.secrets) : verdict.reason;
      // The connection was there and the request was handed to it: unless the server provably
      // refused the connection, it may have received (and applied) it.
      throw new McpTransientError(slot.cfg.name, reason, { requestSent: !isConnectionRefused(error), answered: verdict.answered });
    } finally {
      conn.inflight -= 1;
      if (!conn.alive && conn.inflight === 0 && slot.conn !== conn) void this.closeConnection(conn, false);
    }
  }

  /** Stops handing the connection out; closes it once its in-flight requests are done. */
  retire(slot: Slot, conn: Connection, reason: string): void {
    if (conn.alive) {
      this.logger.info({ server: slot.cfg.name, transport: conn.kind, reason }, 'dropping MCP connection; the next use reconnects');
    }
    conn.alive = false;
    conn.tools = undefined;
    if (slot.conn === conn) slot.conn = undefined;
    if (conn.inflight === 0) void this.closeConnection(conn, false);
  }

  /** Shuts the pool: connects under way are given up, then every connection closes (ending its HTTP session). */
  async closeAll(slots: readonly Slot[]): Promise<void> {
    this.closed = true;
    const all = slots.flatMap((slot) => [slot, ...(slot.perUser?.values() ?? [])]);
    for (const slot of all) slot.connecting?.abandon(new Error('the MCP hub is shut down'));
    await Promise.allSettled(all.map((slot) => slot.connecting?.conn));
    for (const slot of all) slot.conn = undefined;
    await Promise.all([...this.open].map((conn) => this.closeConnection(conn, true)));
  }

  private transient(slot: Slot, reason: string): McpTransientError {
    return new McpTransientError(slot.cfg.name, safeReason(reason, slot.secrets));
  }

  private acquire(slot: Slot, signal: AbortSignal | undefined, use: UseOptions): Promise<Connection> {
    if (this.closed) return Promise.reject(this.transient(slot, 'the MCP hub is shut down'));
    if (slot.conn?.alive) return Promise.resolve(slot.conn);
    if (!slot.connecting) {
      const last = slot.lastFailure;
      const waitMs = use.background ? reconnectBackoffMs(last?.inARow ?? 0) : FAIL_FAST_MS;
      if (last && this.now() - last.at < waitMs) {
        return Promise.reject(this.transient(slot, `unavailable: ${last.reason}`));
      }
      const began = this.now();
      slot.connecting = startConnectAttempt(slot.cfg.timeouts.connectMs, (limits) =>
        this.openConnection(slot, limits)
          .then(
            (conn) => this.connected(slot, conn, began),
            (error: unknown) => this.connectFailed(slot, error),
          )
          .finally(() => {
            slot.connecting = undefined;
          }),
      );
    }
    return this.waitForConnect(slot, slot.connecting, signal);
  }

  /**
   * One use's wait for the connect under way: its own connect timeout, or until its signal fires,
   * whichever comes first; the connect goes on for the uses still waiting (connect-attempt.ts).
   */
  private waitForConnect(slot: Slot, attempt: ConnectAttempt, signal: AbortSignal | undefined): Promise<Connection> {
    if (signal?.aborted) return Promise.reject(new McpAbortError(slot.cfg.name, signal.reason));
    const connectMs = slot.cfg.timeouts.connectMs;
    const seat = attempt.join();
    return new Promise<Connection>((resolve, reject) => {
      const giveUp = (error: Error): void => {
        reject(error);
        seat.leave();
      };
      const timer = setTimeout(() => giveUp(this.transient(slot, `unavailable: ${new ConnectTimeoutError(connectMs).message}`)), connectMs);
      const onAbort = (): void => giveUp(new McpAbortError(slot.cfg.name, signal?.reason));
      signal?.addEventListener('abort', onAbort, { once: true });
      attempt.conn.then(resolve, reject).finally(() => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        seat.leave();
      });
    });
  }

  private connected(slot: Slot, conn: Connection, began: number): Connection {
    if (this.closed || slot.replaced) {
      void this.closeConnection(conn, false);
      throw this.transient(slot, this.closed ? 'the MCP hub is shut down' : 'the server was reconfigured; retry');
    }
    slot.conn = conn;
    slot.lastFailure = undefined;
    if (slot.warned) this.logger.info({ server: slot.cfg.name, failedConnects: slot.warned.repeats + 1 }, 'MCP server reachable again');
    slot.warned = undefined;
    // The uses that came first were told it was unavailable: say that it came after all.
    const tookMs = this.now() - began;
    if (tookMs > slot.cfg.timeouts.connectMs) this.logger.info({ server: slot.cfg.name, tookMs }, 'MCP server connected after its connect timeout; the uses still waiting have it');
    return conn;
  }

  private connectFailed(slot: Slot, error: unknown): never {
    // Not the server failing: the user has to act. No fail-fast window, no warning.
    if (isAuthorizationError(error)) throw error;
    // Given up because the pool shuts down: nothing to say about the server.
    if (this.closed) throw this.transient(slot, 'the MCP hub is shut down');
    const reason = safeReason(describeCause(error), slot.secrets);
    const now = this.now();
    slot.lastFailure = { at: now, reason, inARow: (slot.lastFailure?.inARow ?? 0) + 1 };
    const tail = slot.stderrTail.map((line) => safeReason(line, slot.secrets));
    // Said once at warn, again only when the reason changes or every REPEAT_WARNING_MS; the
    // connects in between (turns' catalogs and calls, the health reports' backed-off checks) go to debug.
    const repeat = slot.warned?.reason === reason && now - slot.warned.at < REPEAT_WARNING_MS;
    const fields = { server: slot.cfg.name, reason, failedConnectsInARow: slot.lastFailure.inARow, ...(tail.length ? { stderrTail: tail } : {}) };
    if (repeat && slot.warned) {
      slot.warned.repeats++;
      this.logger.debug(fields, `MCP server still unavailable: ${describeServer(slot.cfg)}`);
    } else {
      const since = slot.warned?.reason === reason ? { failedConnectsSinceLastWarning: slot.warned.repeats } : {};
      this.logger.warn({ ...fields, ...since }, `MCP server unavailable: ${describeServer(slot.cfg)}`);
      slot.warned = { at: now, reason, repeats: 0 };
    }
    throw this.transient(slot, `unavailable: ${reason}`);
  }

  private async openConnection(slot: Slot, limits: AttemptLimits): Promise<Connection> {
    const cfg = slot.cfg;
    if (cfg.kind === 'stdio') return await this.openOnce(slot, 'stdio', limits);
    const preferred = cfg.transport === 'auto' ? slot.httpKind : cfg.transport;
    if (preferred) return await this.openOnce(slot, preferred, limits);
    const { conn, kind } = await openHttpWithFallback(
      (k) => this.openOnce(slot, k, limits),
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

  private async openOnce(slot: Slot, kind: TransportKind, limits: AttemptLimits): Promise<Connection> {
    const cfg = slot.cfg;
    slot.stderrTail = [];
    const calls = new CallsInFlight();
    slot.discovery ??= new SlotDiscovery();
    const target = { cfg, kind, clientInfo: this.opts.clientInfo, capabilities: this.opts.capabilities, discovery: slot.discovery, ...(slot.authFetch ? { authFetch: slot.authFetch } : {}) };
    // The hooks only run once the session exists, so `conn` is there by then.
    const conn: Connection = {
      id: this.nextConnectionId++,
      session: this.openSession(target, this.sessionHooks(slot, calls, () => conn)),
      kind,
      alive: false,
      inflight: 0,
      calls,
      subscribed: new Set(),
    };
    const session = conn.session;

    this.open.add(conn);
    try {
      // Not in the caller's context: the streams the connection keeps open must carry no call's (server-requests.ts).
      const connecting = callerContext.run(connectionContext(callerContext.getStore()), () => session.connect(limits.budgetMs()));
      await Promise.race([connecting, limits.givenUp]);
    } catch (error) {
      // Not awaited: killing a hung child can take seconds and the caller should hear now. The
      // connection stays in `open` until it is gone, so closeAll() still waits for it.
      void this.closeConnection(conn, false);
      throw error;
    }
    conn.pid = session.pid();
    conn.alive = true;
    // At debug: the worker says once which servers are ready (a reconnect after a failure says so at info).
    this.logger.debug(
      { server: cfg.name, transport: kind, ...(conn.pid !== undefined ? { pid: conn.pid } : {}) },
      `MCP server connected: ${describeServer(cfg)}`,
    );
    return conn;
  }

  /** How a connection's session reports to the pool, and answers the server's own requests. */
  private sessionHooks(slot: Slot, calls: CallsInFlight, conn: () => Connection): SessionHooks {
    const { logger, elicit, sample, onResourceUpdated } = this.opts;
    const server = slot.cfg.name;
    return {
      onStderrLine: (line) => this.stderrLine(slot, line),
      onTransportError: (error) => this.onTransportError(slot, conn(), error),
      onClose: () => this.onConnectionClosed(slot, conn()),
      onProtocolError: (error) => logger.debug({ server, error: safeReason(describeCause(error), slot.secrets) }, 'MCP protocol notice'),
      // Read at each request: a reload that changes only the roots updates the slot, not the connection.
      roots: () => [...(slot.cfg.roots ?? [])],
      serverRequests: {
        server,
        ...(slot.principal ? { principal: slot.principal } : {}),
        calls,
        ...(elicit ? { elicit } : {}),
        ...(sample ? { sample } : {}),
        debug: (obj, msg) => logger.debug(obj, msg),
      },
      onResourceUpdated: (uri) => {
        logger.debug({ server, uri }, 'MCP resource updated');
        onResourceUpdated?.(server, uri);
      },
      onToolsChanged: () => {
        const c = conn();
        c.tools = undefined;
        // A listing already in flight may predate the change: it must not become the cache.
        c.toolsGeneration = (c.toolsGeneration ?? 0) + 1;
      },
    };
  }

  private onTransportError(slot: Slot, conn: Connection, error: Error): void {
    // The request that needed authorization fails on its own; the connection itself is fine.
    if (isAuthorizationError(error)) return;
    if (error instanceof TransportFault) {
      this.fault(slot, conn, error);
      return;
    }
    // We ended the response of a request we had given up on: the connection is fine.
    if (error instanceof DroppedResponse) return;
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

  /**
   * The server broke the transport's limits (an oversized message, stdout that is not JSON-RPC): the
   * connection cannot be trusted to carry the next answer, so it is dropped now and every request on
   * it fails with the reason (transport-limits.ts).
   */
  private fault(slot: Slot, conn: Connection, fault: TransportFault): void {
    if (conn.fault) return;
    conn.fault = fault.message;
    this.logger.warn({ server: slot.cfg.name, transport: conn.kind, reason: safeReason(fault.message, slot.secrets) }, 'MCP server broke the transport limits; dropping its connection');
    this.retire(slot, conn, fault.message);
    void this.closeConnection(conn, false);
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

  private closeConnection(conn: Connection, terminateSession: boolean): Promise<void> {
    conn.alive = false;
    conn.closing ??= (async () => {
      if (terminateSession) await withTimeout(conn.session.terminateSession().catch(noop), TERMINATE_SESSION_TIMEOUT_MS);
      // For stdio this ends stdin, then escalates SIGTERM → SIGKILL, and waits for the exit:
      // no orphaned or zombie children.
      await conn.session.close().catch(noop);
      this.open.delete(conn);
    })();
    return conn.closing;
  }

  /**
   * After a timeout, is the server wedged or just slow? A ping tells; a wedged connection is dropped
   * so retries do not keep queueing behind it.
   */
  private probe(slot: Slot, conn: Connection): void {
    if (!conn.alive) return;
    conn.session.ping(PROBE_TIMEOUT_MS).catch(() => this.retire(slot, conn, 'server stopped answering pings'));
  }
}
