/**
 * The worker's pool of MCP connections: one long-lived client per configured server, opened on
 * first use and replaced on the next use after it dies. Retrying with backoff is Temporal's job
 * (activities retry); the hub only classifies failures so the right ones are retried.
 */
import { forwardingFetch } from './user-token';
import { statSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CallToolResultSchema,
  ErrorCode,
  McpError,
  ToolListChangedNotificationSchema,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { buildToolIndex } from '../shared/tool-names';
import type { Catalog, CatalogTool, ServerStatus, ToolOutcome } from '../shared/tool-types';
import { describeServer, type HttpServerConfig, type McpConfig, type McpServerConfig } from './config';
import type { McpContextSource } from './context-source';
import type { CallToolRequest, McpHub } from './types';

export interface HubLogger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export interface McpServerHubOptions {
  logger?: HubLogger;
  clientInfo?: { name: string; version: string };
}

type TransportKind = ServerStatus['transport'];

/** Retrying may help (connection lost, timeout, server not reachable). Never carries secrets. */
export class McpTransientError extends Error {
  override readonly name = 'McpTransientError';
  constructor(
    readonly server: string,
    /** The secret-free cause alone, without the server name (for status reports). */
    readonly reason: string,
  ) {
    super(`MCP server "${server}": ${reason}`);
  }
}

/** Retrying cannot help (unknown or disabled server, request the server refuses outright). */
export class McpPermanentError extends Error {
  override readonly name = 'McpPermanentError';
  constructor(
    readonly server: string,
    readonly reason: string,
  ) {
    super(`MCP server "${server}": ${reason}`);
  }
}

/** The caller's signal fired. Named `AbortError` like the platform's, so generic checks work. */
export class McpAbortError extends Error {
  override readonly name = 'AbortError';
  constructor(
    readonly server: string,
    cause?: unknown,
  ) {
    super(`MCP request to "${server}" was cancelled`, { cause });
  }
}

/** Internal: the server refused the request in a way retrying cannot fix. */
class RefusedError extends Error {
  constructor(readonly reason: string) {
    super(reason);
  }
}

/** A connect attempt that failed within this window is not retried yet: fail fast instead. */
const FAIL_FAST_MS = 500;
const MAX_LIST_PAGES = 100;
const STDERR_TAIL_LINES = 20;
const MAX_STDERR_LINE = 2_000;
const MAX_REASON_CHARS = 300;
const TERMINATE_SESSION_TIMEOUT_MS = 1_000;
const PROBE_TIMEOUT_MS = 5_000;

/** JSON-RPC errors that mean "this request will never work", not "the server had a bad moment". */
const PERMANENT_CODES = new Set<number>([
  ErrorCode.InvalidParams,
  ErrorCode.MethodNotFound,
  ErrorCode.InvalidRequest,
  ErrorCode.ParseError,
  ErrorCode.UrlElicitationRequired,
  -32002, // Resource not found (MCP spec).
]);

const noop = (): void => undefined;
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
  /** Bumped by every `tools/list_changed`, so a listing that started before one is not kept. */
  toolsGeneration?: number;
  /** Tool listing for this connection; dropped on `tools/list_changed` and never kept on failure. */
  tools?: Promise<Tool[]>;
  closing?: Promise<void>;
}

interface Slot {
  readonly cfg: McpServerConfig;
  /** Values that must never appear in a message: env and header values, secret URL parts. */
  readonly secrets: readonly string[];
  conn?: Connection;
  /** Shared by concurrent first uses; cleared when settled, so a failure is never cached. */
  connecting?: Promise<Connection>;
  lastFailure?: { at: number; reason: string };
  /** For `transport: auto`: the HTTP transport that worked, so reconnects skip the probing. */
  httpKind?: 'streamable-http' | 'sse';
  stderrTail: string[];
}

/** What went wrong with a request, decided once for calls, listings, resources and prompts. */
type Failure =
  | { kind: 'aborted'; cause: unknown }
  | { kind: 'refused'; reason: string }
  | { kind: 'transient'; reason: string };

class ConnectTimeoutError extends Error {
  constructor(ms: number) {
    super(`connect timed out after ${ms} ms`);
  }
}

function collectSecrets(cfg: McpServerConfig): string[] {
  const headerValues = cfg.kind === 'http' ? Object.values(cfg.headers) : [];
  const values = [
    ...(cfg.kind === 'stdio' ? Object.values(cfg.env) : []),
    ...headerValues,
    // `Bearer <token>`: the token alone may show up in a message too.
    ...headerValues.flatMap((v) => v.split(/\s+/).filter((part) => part.length >= 8)),
    ...(cfg.kind === 'http' ? secretUrlParts(cfg) : []),
  ];
  // Very short values ("1", "on") would shred messages and are not secrets worth the noise.
  return [...new Set(values.filter((v) => v.length >= 4))].sort((a, b) => b.length - a.length);
}

function secretUrlParts(cfg: HttpServerConfig): string[] {
  try {
    const url = new URL(cfg.url);
    const parts = [url.password, url.username, url.search.slice(1)];
    // Tokens are sometimes embedded in the path (`/mcp/<token>`): hide everything after the origin.
    if (url.pathname.length > 1 || url.search) parts.push(url.href.slice(url.origin.length));
    return parts.filter((p) => p !== '');
  } catch {
    return [];
  }
}

function scrub(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) out = out.split(secret).join('***');
  return out.length > MAX_REASON_CHARS ? `${out.slice(0, MAX_REASON_CHARS - 3)}...` : out;
}

function isHttp4xx(error: unknown): boolean {
  return error instanceof StreamableHTTPError && typeof error.code === 'number' && error.code >= 400 && error.code < 500;
}

/** A short, human-readable cause. The result is scrubbed by the caller. */
function describeCause(error: unknown): string {
  if (error instanceof McpError) return error.message.replace(/^MCP error -?\d+: /, '');
  if (error instanceof StreamableHTTPError) {
    if (error.code === 404) return 'HTTP 404: session not found or expired';
    return typeof error.code === 'number' && error.code > 0 ? `HTTP ${error.code}: ${error.message}` : error.message;
  }
  if (error instanceof Error) {
    // fetch hides the useful part ("ECONNREFUSED", "bad port") in `cause`.
    const cause = (error as Error & { cause?: unknown }).cause;
    if (typeof cause === 'object' && cause !== null) {
      const { code, message } = cause as { code?: unknown; message?: unknown };
      const detail = typeof code === 'string' ? code : typeof message === 'string' ? message : undefined;
      if (detail && !error.message.includes(detail)) return `${error.message} (${detail})`;
    }
    return error.message;
  }
  return String(error);
}

/** The SDK rejects a response that fails its result schema with the raw zod error. */
function isZodError(error: unknown): boolean {
  // Name check too: a second zod copy in node_modules would defeat instanceof.
  return error instanceof z.core.$ZodError || (error instanceof Error && /^\$?ZodError$/.test(error.name));
}

type ContentItem = Record<string, unknown>;

function base64Note(data: unknown): string {
  return typeof data === 'string' ? `${data.length} bytes base64` : 'no data';
}

/** Text for the LLM: text items verbatim, everything else as a short placeholder. */
function renderContent(items: readonly unknown[]): string {
  const parts: string[] = [];
  for (const raw of items) {
    if (typeof raw !== 'object' || raw === null) continue;
    const item = raw as ContentItem;
    switch (item['type']) {
      case 'text':
        parts.push(typeof item['text'] === 'string' ? item['text'] : '');
        break;
      case 'image':
      case 'audio':
        parts.push(`[${String(item['type'])} ${String(item['mimeType'] ?? 'unknown type')}, ${base64Note(item['data'])}]`);
        break;
      case 'resource_link':
        parts.push(`[resource ${String(item['uri'])}]`);
        break;
      case 'resource': {
        const resource = (item['resource'] ?? {}) as ContentItem;
        parts.push(renderResourceContents(resource));
        break;
      }
      default:
        parts.push(`[${String(item['type'] ?? 'unknown')} content]`);
    }
  }
  return parts.join('\n');
}

function renderResourceContents(resource: ContentItem): string {
  const uri = String(resource['uri'] ?? '');
  if (typeof resource['text'] === 'string') return resource['text'];
  const mime = typeof resource['mimeType'] === 'string' ? `${resource['mimeType']}, ` : '';
  return `[resource ${uri}, ${mime}${base64Note(resource['blob'])}]`;
}

function pickAnnotations(tool: Tool): CatalogTool['annotations'] {
  const source = (tool.annotations ?? {}) as Record<string, unknown>;
  const out: NonNullable<CatalogTool['annotations']> = {};
  const title = typeof source['title'] === 'string' ? source['title'] : tool.title;
  if (typeof title === 'string') out.title = title;
  for (const key of ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint'] as const) {
    const value = source[key];
    if (typeof value === 'boolean') out[key] = value;
  }
  return Object.keys(out).length > 0 ? out : undefined;
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
  private nextConnectionId = 1;
  private closed = false;
  private closing?: Promise<void>;

  constructor(config: McpConfig, opts: McpServerHubOptions = {}) {
    this.logger = opts.logger ?? silentLogger;
    this.clientInfo = opts.clientInfo ?? { name: 'durable-mcp-host', version: '0.0.0' };
    for (const cfg of Object.values(config.mcpServers)) {
      this.slots.set(cfg.name, { cfg, secrets: collectSecrets(cfg), stderrTail: [] });
    }
  }

  // ---------------------------------------------------------------- public API

  async catalog(): Promise<Catalog> {
    const inspected = await Promise.all([...this.slots.values()].map((slot) => this.inspect(slot)));
    const index = buildToolIndex(inspected.flatMap(({ slot, tools }) => tools.map((t) => ({ server: slot.cfg.name, tool: t.name }))));
    const nameOf = new Map<string, string>();
    for (const [name, ref] of index) nameOf.set(`${ref.server}\u0000${ref.tool}`, name);

    const tools: CatalogTool[] = [];
    for (const { slot, tools: serverTools } of inspected) {
      const seen = new Set<string>();
      for (const tool of serverTools) {
        // A server listing one name twice would otherwise give the LLM two tools with one name.
        if (seen.has(tool.name)) continue;
        seen.add(tool.name);
        const name = nameOf.get(`${slot.cfg.name}\u0000${tool.name}`);
        if (name === undefined) continue;
        const annotations = pickAnnotations(tool);
        tools.push({
          name,
          server: slot.cfg.name,
          tool: tool.name,
          ...(tool.description !== undefined ? { description: tool.description } : {}),
          inputSchema: tool.inputSchema as Record<string, unknown>,
          ...(annotations ? { annotations } : {}),
        });
      }
    }
    return { tools, servers: inspected.map((i) => i.status) };
  }

  async status(): Promise<ServerStatus[]> {
    const inspected = await Promise.all([...this.slots.values()].map((slot) => this.inspect(slot)));
    return inspected.map((i) => i.status);
  }

  /** Opens every enabled server now (e.g. at worker start) so the first turn does not pay for it. */
  async connectAll(): Promise<ServerStatus[]> {
    return await this.status();
  }

  async callTool(req: CallToolRequest): Promise<ToolOutcome> {
    const slot = this.usableSlot(req.server);
    const timeout = req.timeoutMs ?? slot.cfg.timeouts.callMs;
    const onProgress = req.onProgress;
    const outcome = await this.withConnection(slot, req.signal, timeout, async (conn) => {
      const result = await conn.client.callTool(
        { name: req.tool, arguments: req.arguments, ...(req.meta ? { _meta: req.meta } : {}) },
        CallToolResultSchema,
        {
          ...(req.signal ? { signal: req.signal } : {}),
          timeout,
          resetTimeoutOnProgress: true,
          ...(onProgress
            ? {
                onprogress: (p: { progress: number; total?: number; message?: string }) => {
                  try {
                    onProgress({
                      progress: p.progress,
                      ...(p.total !== undefined ? { total: p.total } : {}),
                      ...(p.message !== undefined ? { message: p.message } : {}),
                    });
                  } catch (error) {
                    this.logger.warn({ server: slot.cfg.name, error: String(error) }, 'progress callback threw');
                  }
                },
              }
            : {}),
        },
      );
      return this.normalizeResult(slot, req.tool, result);
    }).catch((error: unknown) => {
      // The server understood and refused (unknown tool, arguments rejected): data for the LLM.
      if (error instanceof RefusedError) {
        return { isError: true, text: `Tool "${req.tool}" on server "${req.server}" failed: ${error.reason}` };
      }
      throw error;
    });
    return outcome;
  }

  async readResource(server: string, uri: string, opts: { signal?: AbortSignal; meta?: Record<string, unknown> } = {}): Promise<string> {
    const slot = this.usableSlot(server);
    const timeout = slot.cfg.timeouts.callMs;
    return await this.permanentOnRefusal(
      slot,
      this.withConnection(slot, opts.signal, timeout, async (conn) => {
        const result = await conn.client.readResource(
          { uri, ...(opts.meta ? { _meta: opts.meta } : {}) },
          { ...(opts.signal ? { signal: opts.signal } : {}), timeout },
        );
        return result.contents.map((c) => renderResourceContents(c as ContentItem)).join('\n');
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
        const result = await conn.client.getPrompt(
          { name, ...(args ? { arguments: args } : {}), ...(opts.meta ? { _meta: opts.meta } : {}) },
          { ...(opts.signal ? { signal: opts.signal } : {}), timeout },
        );
        return result.messages.map((m) => `${m.role}: ${renderContent([m.content])}`).join('\n\n');
      }),
    );
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
    return slot;
  }

  private transportOf(slot: Slot): TransportKind {
    const cfg = slot.cfg;
    if (cfg.kind === 'stdio') return 'stdio';
    if (slot.conn?.alive) return slot.conn.kind;
    if (cfg.transport !== 'auto') return cfg.transport;
    return slot.httpKind ?? 'streamable-http';
  }

  private transient(slot: Slot, reason: string): McpTransientError {
    return new McpTransientError(slot.cfg.name, scrub(reason, slot.secrets));
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
            if (this.closed) {
              void this.closeConnection(conn, false);
              throw this.transient(slot, 'the MCP hub is shut down');
            }
            slot.conn = conn;
            slot.lastFailure = undefined;
            return conn;
          },
          (error: unknown) => {
            const reason = scrub(describeCause(error), slot.secrets);
            slot.lastFailure = { at: Date.now(), reason };
            const tail = slot.stderrTail.map((line) => scrub(line, slot.secrets));
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
    const preferred = cfg.transport === 'auto' ? (slot.httpKind ?? 'auto') : cfg.transport;
    if (preferred !== 'auto') return await this.openOnce(slot, preferred);
    try {
      const conn = await this.openOnce(slot, 'streamable-http');
      slot.httpKind = 'streamable-http';
      return conn;
    } catch (error) {
      // A legacy HTTP+SSE server refuses the Streamable HTTP POST with a 4xx (404/405 typically);
      // anything else (refused connection, timeout, 5xx) would fail the same way over SSE.
      if (!isHttp4xx(error)) throw error;
      this.logger.info(
        { server: cfg.name, reason: scrub(describeCause(error), slot.secrets) },
        'Streamable HTTP refused; trying legacy HTTP+SSE',
      );
      try {
        const conn = await this.openOnce(slot, 'sse');
        slot.httpKind = 'sse';
        return conn;
      } catch (sseError) {
        throw new Error(`streamable-http: ${describeCause(error)}; sse: ${describeCause(sseError)}`);
      }
    }
  }

  private makeTransport(slot: Slot, kind: TransportKind): Transport {
    const cfg = slot.cfg;
    if (cfg.kind === 'stdio') {
      let cwdOk = false;
      try {
        cwdOk = statSync(cfg.cwd).isDirectory();
      } catch {
        cwdOk = false;
      }
      // spawn reports a missing cwd as "spawn <command> ENOENT", which sends people looking for
      // the wrong thing.
      if (!cwdOk) throw new Error(`working directory does not exist: ${cfg.cwd}`);
      const transport = new StdioClientTransport({
        command: cfg.command,
        args: cfg.args,
        cwd: cfg.cwd,
        // Never the worker's whole environment: it holds the host's own secrets.
        env: { ...getDefaultEnvironment(), ...cfg.env },
        stderr: 'pipe',
      });
      this.forwardStderr(slot, transport);
      return transport;
    }
    const url = new URL(cfg.url);
    const requestInit: RequestInit = { headers: { ...cfg.headers } };
    const opts = { requestInit, ...(cfg.forwardUserToken ? { fetch: forwardingFetch() } : {}) };
    return kind === 'sse' ? new SSEClientTransport(url, opts) : new StreamableHTTPClientTransport(url, opts);
  }

  /** Child stderr goes to debug logs, line by line, so a chatty server cannot flood the terminal. */
  private forwardStderr(slot: Slot, transport: StdioClientTransport): void {
    const stream = transport.stderr;
    if (!stream) return;
    slot.stderrTail = [];
    let buffered = '';
    const emit = (line: string): void => {
      const trimmed = line.length > MAX_STDERR_LINE ? `${line.slice(0, MAX_STDERR_LINE)}...` : line;
      if (trimmed.trim() === '') return;
      slot.stderrTail.push(trimmed);
      if (slot.stderrTail.length > STDERR_TAIL_LINES) slot.stderrTail.shift();
      this.logger.debug({ server: slot.cfg.name }, `[${slot.cfg.name}] ${trimmed}`);
    };
    stream.on('data', (chunk: Buffer | string) => {
      buffered += chunk.toString();
      let newline: number;
      while ((newline = buffered.indexOf('\n')) >= 0) {
        emit(buffered.slice(0, newline).replace(/\r$/, ''));
        buffered = buffered.slice(newline + 1);
      }
      if (buffered.length > MAX_STDERR_LINE) {
        emit(buffered);
        buffered = '';
      }
    });
    stream.on('end', () => {
      if (buffered) emit(buffered);
      buffered = '';
    });
  }

  private async openOnce(slot: Slot, kind: TransportKind): Promise<Connection> {
    const cfg = slot.cfg;
    const transport = this.makeTransport(slot, kind);
    const client = new Client(this.clientInfo, { capabilities: {} });
    const conn: Connection = { id: this.nextConnectionId++, client, transport, kind, alive: false, inflight: 0 };

    // Set before connect: the SDK chains its own handlers after these.
    transport.onerror = (error: Error) => this.onTransportError(slot, conn, error);
    client.onclose = () => this.onConnectionClosed(slot, conn);
    client.onerror = (error: Error) =>
      this.logger.debug({ server: cfg.name, error: scrub(describeCause(error), slot.secrets) }, 'MCP protocol notice');
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
      await Promise.race([client.connect(transport, { timeout: connectMs }), timedOut]);
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
    if (transport instanceof StdioClientTransport) conn.pid = transport.pid ?? undefined;
    conn.alive = true;
    this.logger.info(
      { server: cfg.name, transport: kind, ...(conn.pid !== undefined ? { pid: conn.pid } : {}) },
      `MCP server connected: ${describeServer(cfg)}`,
    );
    return conn;
  }

  private onTransportError(slot: Slot, conn: Connection, error: Error): void {
    const reason = scrub(describeCause(error), slot.secrets);
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
      const tail = conn.kind === 'stdio' ? slot.stderrTail.slice(-5).map((line) => scrub(line, slot.secrets)) : [];
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
      if (terminateSession && conn.transport instanceof StreamableHTTPClientTransport) {
        // Frees the server-side session instead of leaving it to expire.
        await withTimeout(conn.transport.terminateSession().catch(noop), TERMINATE_SESSION_TIMEOUT_MS);
      }
      // For stdio this ends stdin, then escalates SIGTERM → SIGKILL, and waits for the exit:
      // no orphaned or zombie children.
      await conn.client.close().catch(noop);
      this.open.delete(conn);
    })();
    return conn.closing;
  }

  private async closeAll(): Promise<void> {
    this.closed = true;
    await Promise.allSettled([...this.slots.values()].map((slot) => slot.connecting));
    for (const slot of this.slots.values()) slot.conn = undefined;
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
      if (error instanceof RefusedError) throw error;
      const failure = this.classify(slot, conn, error, signal, timeoutMs);
      if (failure.kind === 'aborted') throw new McpAbortError(slot.cfg.name, failure.cause);
      if (failure.kind === 'refused') throw new RefusedError(failure.reason);
      throw this.transient(slot, failure.reason);
    } finally {
      conn.inflight -= 1;
      if (!conn.alive && conn.inflight === 0 && slot.conn !== conn) void this.closeConnection(conn, false);
    }
  }

  private classify(
    slot: Slot,
    conn: Connection,
    error: unknown,
    signal: AbortSignal | undefined,
    timeoutMs: number,
  ): Failure {
    // Checked first: the SDK reports its own abort as a RequestTimeout McpError.
    if (signal?.aborted) return { kind: 'aborted', cause: signal.reason };
    if (error instanceof McpError) {
      if (error.code === ErrorCode.RequestTimeout) {
        this.probe(slot, conn);
        return { kind: 'transient', reason: `request timed out after ${timeoutMs} ms` };
      }
      if (error.code === ErrorCode.ConnectionClosed) {
        this.retire(slot, conn, 'connection closed');
        return { kind: 'transient', reason: 'connection closed during the request; the next attempt reconnects' };
      }
      if (PERMANENT_CODES.has(error.code)) return { kind: 'refused', reason: scrub(describeCause(error), slot.secrets) };
      return { kind: 'transient', reason: `server error ${error.code}: ${scrub(describeCause(error), slot.secrets)}` };
    }
    if (isZodError(error)) {
      return { kind: 'refused', reason: 'the server sent a malformed response' };
    }
    // Everything else is the transport (fetch failed, HTTP error, broken pipe, "Not connected"):
    // this connection cannot be trusted any more.
    const reason = scrub(describeCause(error), slot.secrets);
    this.retire(slot, conn, reason);
    return { kind: 'transient', reason: `connection failed: ${reason}; the next attempt reconnects` };
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
    const parsed = CallToolResultSchema.safeParse(raw);
    if (!parsed.success) {
      this.logger.warn({ server: slot.cfg.name, tool }, 'tool returned a malformed result');
      throw new RefusedError('the server sent a malformed result');
    }
    const result = parsed.data;
    const structured = result.structuredContent;
    let text = renderContent(result.content);
    if (text === '' && structured !== undefined) text = JSON.stringify(structured);
    return {
      isError: result.isError === true,
      text,
      ...(structured !== undefined ? { structuredContent: structured } : {}),
    };
  }

  private async inspect(slot: Slot): Promise<{ slot: Slot; tools: Tool[]; status: ServerStatus }> {
    const server = slot.cfg.name;
    if (slot.cfg.disabled) {
      return { slot, tools: [], status: { server, transport: this.transportOf(slot), state: 'disabled', toolCount: 0 } };
    }
    try {
      const tools = await this.withConnection(slot, undefined, slot.cfg.timeouts.listMs, async (conn) => {
        // A cached tool list says nothing about an HTTP server that went away since: ping it, so a
        // dead server is reported unavailable before the model plans around its tools. (A stdio
        // child's death closes its transport, which drops the connection already.)
        if (conn.tools && conn.kind !== 'stdio') await conn.client.ping({ timeout: Math.min(slot.cfg.timeouts.listMs, PROBE_TIMEOUT_MS) });
        return await this.listTools(slot, conn);
      });
      return { slot, tools, status: { server, transport: this.transportOf(slot), state: 'connected', toolCount: tools.length } };
    } catch (error) {
      const reason = (
        error instanceof McpTransientError || error instanceof McpPermanentError || error instanceof RefusedError
          ? error.reason
          : scrub(describeCause(error), slot.secrets)
      ).replace(/^unavailable: /, ''); // the state already says so
      return {
        slot,
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
    // A server without the tools capability (resources or prompts only) simply has no tools.
    if (!conn.client.getServerCapabilities()?.tools) return [];
    const listMs = slot.cfg.timeouts.listMs;
    const deadline = Date.now() + listMs;
    const tools: Tool[] = [];
    const seenCursors = new Set<string>();
    let cursor: string | undefined;
    for (let page = 0; page < MAX_LIST_PAGES; page++) {
      const remaining = deadline - Date.now();
      if (remaining <= 0) throw new McpError(ErrorCode.RequestTimeout, `listing tools took longer than ${listMs} ms`);
      const result = await conn.client.listTools(cursor !== undefined ? { cursor } : undefined, { timeout: remaining });
      tools.push(...result.tools);
      cursor = result.nextCursor;
      // A repeated cursor would loop forever; treat it as the end.
      if (cursor === undefined || seenCursors.has(cursor)) return tools;
      seenCursors.add(cursor);
    }
    this.logger.warn({ server: slot.cfg.name, pages: MAX_LIST_PAGES }, 'tool listing truncated: too many pages');
    return tools;
  }
}
