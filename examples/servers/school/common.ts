/**
 * What the five school servers share: command line, transports (stdio or Streamable HTTP), the
 * caller's tenant and user from `_meta`, the exactly-once effect helper, the fault-injection delay
 * hook, and small result helpers.
 *
 * Command line of every server:
 *   node dist/examples/servers/school/<name>-server.js [--stdio] [--data FILE]
 *   node dist/examples/servers/school/<name>-server.js --http [--port N] [--host H] [--allowed-host NAME:PORT ...] [--data FILE]
 * In HTTP mode the server listens on 127.0.0.1 (or --host; port 0 = any free port) and prints
 * `<NAME>_SERVER_URL=http://127.0.0.1:PORT/mcp` on stdout once it is listening. Requests must name
 * it in their Host header as 127.0.0.1, localhost or [::1] with its port, or as an --allowed-host
 * (how other machines reach it: `payments:4020` in the compose stack).
 * Logs go to stderr: in stdio mode stdout belongs to the protocol.
 */
import * as http from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { ShapeOutput, ZodRawShapeCompat } from '@modelcontextprotocol/sdk/server/zod-compat.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import {
  type CallToolResult,
  type ReadResourceResult,
  type ServerNotification,
  type ServerRequest,
  type ToolAnnotations,
} from '@modelcontextprotocol/sdk/types.js';
import { IDEMPOTENCY_KEY_META_KEY, TRACE_META_KEY, USER_CONTEXT_META_KEY } from '../../../src/shared/meta';
import { resolveDataFile, SchoolStore, type SchoolData, type StoredToolResult } from './store';
import { hostAllowed, sendJsonRpcError, streamableHttpHandler, type ServerSession } from '../http-util';

export type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

export type ServerName = 'admin' | 'payments' | 'comms' | 'student' | 'teacher';

export function makeLogger(server: ServerName): (message: string) => void {
  return (message) => process.stderr.write(`school-${server}[${process.pid}]: ${message}\n`);
}

// ------------------------------------------------------------------ results

/** A refusal the model should read (unknown id, already paid, …): becomes an `isError` result. */
export class DomainError extends Error {}

/** Success: the body as compact JSON text (hosts and the demo model parse it) and as structuredContent. */
export function ok(body: Record<string, unknown>): StoredToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(body) }], structuredContent: body };
}

export function fail(message: string): StoredToolResult {
  return { content: [{ type: 'text', text: message }], isError: true };
}

function asCallToolResult(result: StoredToolResult): CallToolResult {
  // A deep copy: the SDK must never hold a reference into the store's data.
  return structuredClone(result) as CallToolResult;
}

export function jsonResource(uri: URL, value: unknown): ReadResourceResult {
  return { contents: [{ uri: uri.href, mimeType: 'application/json', text: JSON.stringify(value, null, 2) }] };
}

/** Money is compared in cents: 250, 250.0 and 250.001 are the same amount, 249.99 is not. */
export function cents(amount: number): number {
  return Math.round(amount * 100);
}

export function money(amount: number, currency: string): string {
  return `${amount.toFixed(2)} ${currency}`;
}

/** "YYYY-MM-DD" that is a real calendar date. */
export function isIsoDate(value: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(value)) return false;
  const date = new Date(`${value}T00:00:00Z`);
  return !Number.isNaN(date.getTime()) && date.toISOString().startsWith(value);
}

// ------------------------------------------------------------------ who is calling

export interface Caller {
  tenantId: string;
  /** The user context's `id`, when the host sent one. */
  userId?: string;
  role?: string;
  scopes: string[];
  traceId?: string;
  /** W3C trace context of the host's span for this request (`_meta.traceparent`, MCP 2026-07-28). */
  traceparent?: string;
  /** The host's idempotency key for this tools/call, when it sent one. */
  idempotencyKey?: string;
}

const TENANT_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/;

/**
 * Reads `_meta[USER_CONTEXT_META_KEY]` (`{ id, role, tenant, scopes }`, every field optional) and the
 * other host keys. No user context, or one without `tenant`, means the default tenant; a malformed
 * one is refused rather than silently widened to the default.
 */
export function callerOf(extra: Extra, defaultTenant: string): Caller {
  const meta = (extra._meta ?? {}) as Record<string, unknown>;
  const rawUser = meta[USER_CONTEXT_META_KEY];
  let user: Record<string, unknown> = {};
  if (rawUser !== undefined && rawUser !== null) {
    if (typeof rawUser !== 'object' || Array.isArray(rawUser)) throw new DomainError('invalid user context: expected an object');
    user = rawUser as Record<string, unknown>;
  }
  let tenantId = defaultTenant;
  if (user.tenant !== undefined && user.tenant !== null) {
    if (typeof user.tenant !== 'string' || !TENANT_PATTERN.test(user.tenant)) {
      throw new DomainError('invalid user context: tenant must be 1-64 letters, digits, "_", "." or "-"');
    }
    tenantId = user.tenant;
  }
  const caller: Caller = { tenantId, scopes: [] };
  if (typeof user.id === 'string' && user.id !== '') caller.userId = user.id;
  if (typeof user.role === 'string' && user.role !== '') caller.role = user.role;
  if (Array.isArray(user.scopes)) caller.scopes = user.scopes.filter((s): s is string => typeof s === 'string');
  const trace = meta[TRACE_META_KEY];
  if (typeof trace === 'string' && trace !== '') caller.traceId = trace;
  const traceparent = meta['traceparent'];
  if (typeof traceparent === 'string' && /^[\da-f]{2}-[\da-f]{32}-[\da-f]{16}-[\da-f]{2}$/.test(traceparent)) caller.traceparent = traceparent;
  const key = meta[IDEMPOTENCY_KEY_META_KEY];
  if (typeof key === 'string' && key !== '') caller.idempotencyKey = key;
  return caller;
}

// ------------------------------------------------------------------ fault hook

/**
 * SCHOOL_TOOL_DELAY_MS="process_payment=3000,send_bulk=500": those tools wait that long before doing
 * anything, sending notifications/progress every 200 ms (when the request has a progressToken) and
 * stopping early, with no effect, when the request is cancelled. Off unless set. For chaos tests.
 */
export function parseDelays(spec: string | undefined): Map<string, number> {
  const delays = new Map<string, number>();
  if (!spec || spec.trim() === '') return delays;
  for (const part of spec.split(',')) {
    const match = /^\s*([A-Za-z0-9_-]+)\s*=\s*(\d+)\s*$/.exec(part);
    if (!match?.[1] || !match[2]) throw new Error(`SCHOOL_TOOL_DELAY_MS: "${part}" is not tool=milliseconds`);
    delays.set(match[1], Number(match[2]));
  }
  return delays;
}

const PROGRESS_EVERY_MS = 200;

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

/** Waits the configured delay for `tool`, if any. Resolves false when the request was cancelled. */
async function delayHook(rt: Runtime, tool: string, extra: Extra): Promise<boolean> {
  const totalMs = rt.delays.get(tool);
  if (totalMs === undefined || totalMs <= 0) return !extra.signal.aborted;
  const progressToken = extra._meta?.progressToken;
  rt.log(`${tool}: fault hook delaying ${totalMs} ms before the effect`);
  const started = Date.now();
  let ticks = 0;
  while (!extra.signal.aborted && Date.now() - started < totalMs) {
    await sleep(Math.min(PROGRESS_EVERY_MS, totalMs - (Date.now() - started)), extra.signal);
    if (extra.signal.aborted) break;
    ticks += 1;
    if (progressToken !== undefined) {
      const elapsed = Math.min(Date.now() - started, totalMs);
      await extra
        .sendNotification({
          method: 'notifications/progress',
          params: { progressToken, progress: elapsed, total: totalMs, message: `${tool}: waiting (${elapsed}/${totalMs} ms)` },
        })
        .catch(() => undefined);
    }
  }
  if (extra.signal.aborted) {
    // Tests look for this line to prove the cancellation reached the server.
    rt.log(`${tool}: cancelled after ${ticks} progress notifications; no effect applied`);
    return false;
  }
  return true;
}

// ------------------------------------------------------------------ runtime and tool helpers

export interface Runtime {
  server: ServerName;
  store: SchoolStore;
  defaultTenant: string;
  delays: Map<string, number>;
  env: NodeJS.ProcessEnv;
  log: (message: string) => void;
}

export function createRuntime(server: ServerName, dataFile: string, env: NodeJS.ProcessEnv = process.env): Runtime {
  const log = makeLogger(server);
  const defaultTenant = env.SCHOOL_DEFAULT_TENANT || 'demo';
  if (!TENANT_PATTERN.test(defaultTenant)) throw new Error('SCHOOL_DEFAULT_TENANT must be 1-64 letters, digits, "_", "." or "-"');
  return { server, store: new SchoolStore(dataFile, log), defaultTenant, delays: parseDelays(env.SCHOOL_TOOL_DELAY_MS), env, log };
}

export interface ToolConfig<Shape extends ZodRawShapeCompat> {
  title: string;
  description: string;
  inputSchema: Shape;
  annotations: ToolAnnotations;
}

export interface ReadContext {
  caller: Caller;
  data: SchoolData;
  extra: Extra;
}

function describeCall(tool: string, caller: Caller): string {
  return `${tool} tenant=${caller.tenantId} user=${caller.userId ?? '-'} key=${caller.idempotencyKey ?? '-'} trace=${caller.traceId ?? '-'} traceparent=${caller.traceparent ?? '-'}`;
}

/** A tool that only reads: no lock, no idempotency record. DomainError → isError result. */
export function readTool<Shape extends ZodRawShapeCompat>(
  rt: Runtime,
  server: McpServer,
  name: string,
  config: ToolConfig<Shape>,
  handler: (args: ShapeOutput<Shape>, ctx: ReadContext) => StoredToolResult,
): void {
  const callback = async (args: ShapeOutput<Shape>, extra: Extra): Promise<CallToolResult> => {
    try {
      const caller = callerOf(extra, rt.defaultTenant);
      if (!(await delayHook(rt, name, extra))) return asCallToolResult(fail(`${name} was cancelled`));
      return asCallToolResult(handler(args, { caller, data: await rt.store.read(), extra }));
    } catch (error) {
      if (error instanceof DomainError) return asCallToolResult(fail(error.message));
      throw error;
    }
  };
  server.registerTool<ZodRawShapeCompat, Shape>(name, config, callback as never);
}

/**
 * A tool with a side effect, applied exactly once per idempotency key:
 * in ONE locked transaction it looks the key up (namespaced `${server}/${tool}/${tenant}/${key}`);
 * a known key returns the first result and writes nothing; otherwise `effect` runs on a copy of the
 * data, and the changed data plus the result under the key are written together. A DomainError from
 * `effect` discards its changes and records the refusal as the key's result. Without a key (a client
 * other than the host) the effect simply runs.
 */
export function effectTool<Shape extends ZodRawShapeCompat>(
  rt: Runtime,
  server: McpServer,
  name: string,
  config: ToolConfig<Shape>,
  effect: (draft: SchoolData, args: ShapeOutput<Shape>, caller: Caller, now: string) => StoredToolResult,
): void {
  const callback = async (args: ShapeOutput<Shape>, extra: Extra): Promise<CallToolResult> => {
    let caller: Caller;
    try {
      caller = callerOf(extra, rt.defaultTenant);
    } catch (error) {
      if (error instanceof DomainError) return asCallToolResult(fail(error.message));
      throw error;
    }
    const what = describeCall(name, caller);
    if (!(await delayHook(rt, name, extra))) return asCallToolResult(fail(`${name} was cancelled before it changed anything`));
    const rawKey = caller.idempotencyKey;
    const slot = rawKey === undefined ? undefined : `${rt.server}/${name}/${caller.tenantId}/${rawKey}`;
    const { result, replayed } = await rt.store.transact((data) => {
      const previous = slot === undefined ? undefined : data.idempotency[slot];
      if (previous) return { value: { result: previous.result, replayed: true } };
      const now = new Date().toISOString();
      let draft: SchoolData = structuredClone(data);
      let result: StoredToolResult;
      try {
        result = effect(draft, args, caller, now);
      } catch (error) {
        if (!(error instanceof DomainError)) throw error;
        result = fail(error.message);
      }
      if (result.isError) draft = data; // a refusal changes nothing but its own record
      if (slot !== undefined && rawKey !== undefined) {
        draft.idempotency[slot] = { server: rt.server, tool: name, tenantId: caller.tenantId, key: rawKey, result, recordedAt: now };
      }
      const changed = draft !== data || slot !== undefined;
      return { value: { result, replayed: false }, ...(changed ? { next: draft } : {}) };
    });
    if (replayed) rt.log(`${what}: idempotency key seen before, returning the first result unchanged`);
    else rt.log(`${what}: ${result.isError ? `refused: ${result.content[0]?.text ?? ''}` : 'applied'}`);
    return asCallToolResult(result);
  };
  server.registerTool<ZodRawShapeCompat, Shape>(name, config, callback as never);
}

/** A read-only JSON resource scoped to the caller's tenant. */
export function jsonResourceOf(
  rt: Runtime,
  server: McpServer,
  name: string,
  uri: string,
  meta: { title: string; description: string },
  read: (data: SchoolData, caller: Caller) => unknown,
): void {
  server.registerResource(name, uri, { ...meta, mimeType: 'application/json' }, async (url, extra) => {
    const caller = callerOf(extra, rt.defaultTenant);
    return jsonResource(url, read(await rt.store.read(), caller));
  });
}

/** The records of one tenant. */
export function ofTenant<T extends { tenantId: string }>(records: readonly T[], tenantId: string): T[] {
  return records.filter((r) => r.tenantId === tenantId);
}

// ------------------------------------------------------------------ command line and transports

export interface ServerOptions {
  mode: 'stdio' | 'http';
  port: number;
  /** The address to listen on in HTTP mode. */
  host: string;
  /** Host header values accepted besides the local names (DNS rebinding protection). */
  allowedHosts: string[];
  dataFile: string;
}

export function parseArgs(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): ServerOptions {
  let mode: ServerOptions['mode'] = 'stdio';
  let port = 0;
  let host = '127.0.0.1';
  const allowedHosts: string[] = [];
  let data: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const value = (): string => {
      const next = argv[++i];
      if (next === undefined) throw new Error(`${arg} needs a value`);
      return next;
    };
    if (arg === '--stdio') mode = 'stdio';
    else if (arg === '--http') mode = 'http';
    else if (arg === '--port') {
      port = Number(value());
      if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error('--port must be 0..65535');
    } else if (arg === '--host') host = value();
    else if (arg === '--allowed-host') {
      const name = value();
      if (!/^[A-Za-z0-9.[\]:-]+:\d{1,5}$/.test(name)) throw new Error('--allowed-host must be NAME:PORT, as clients write it in the Host header');
      allowedHosts.push(name);
    } else if (arg === '--data') data = value();
    else throw new Error(`unknown argument: ${arg} (use [--stdio] | --http [--port N] [--host H] [--allowed-host NAME:PORT], [--data FILE])`);
  }
  return { mode, port, host, allowedHosts, dataFile: resolveDataFile(data, env) };
}

/** Streamable HTTP with stateful sessions: one McpServer per session, all on the same store. */
async function serveHttp(opts: ServerOptions, rt: Runtime, create: () => McpServer, urlVariable: string): Promise<() => Promise<void>> {
  const sessions = new Map<string, ServerSession>();
  let port = opts.port;

  const handle = streamableHttpHandler(sessions, create);

  const httpServer = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const work = async (): Promise<void> => {
      if (!hostAllowed(req, port, opts.allowedHosts)) {
        res.writeHead(403).end('forbidden host');
        return;
      }
      if (url.pathname !== '/mcp') {
        res.writeHead(404).end();
        return;
      }
      await handle(req, res);
    };
    work().catch((error: unknown) => {
      rt.log(`request failed: ${error instanceof Error ? error.message : String(error)}`);
      if (!res.headersSent) sendJsonRpcError(res, 500, -32603, 'Internal server error');
      else res.end();
    });
  });

  await new Promise<void>((resolve, reject) => {
    httpServer.once('error', reject);
    httpServer.listen(opts.port, opts.host, () => resolve());
  });
  const address = httpServer.address();
  port = typeof address === 'object' && address ? address.port : opts.port;
  // On stdout, once: scripts and tests wait for this line.
  process.stdout.write(`${urlVariable}=http://127.0.0.1:${port}/mcp\n`);
  rt.log(`Streamable HTTP on ${opts.host}:${port}, data in ${rt.store.file}`);

  return async () => {
    await Promise.allSettled([...sessions.values()].map((s) => s.server.close()));
    sessions.clear();
    httpServer.closeAllConnections();
    await new Promise<void>((resolve) => httpServer.close(() => resolve()));
  };
}

async function serveStdio(rt: Runtime, create: () => McpServer, onEnd: () => void): Promise<() => Promise<void>> {
  const server = create();
  await server.connect(new StdioServerTransport());
  // The host closing our stdin is how it says goodbye (and how we avoid outliving a crashed host).
  process.stdin.once('end', onEnd);
  process.stdin.once('close', onEnd);
  rt.log(`stdio, data in ${rt.store.file}`);
  return async () => {
    await server.close();
  };
}

export interface ServerDefinition {
  name: ServerName;
  /** Printed on stdout in HTTP mode, e.g. PAYMENTS_SERVER_URL. */
  urlVariable: string;
  create: (rt: Runtime) => McpServer;
}

/** The entry point of every server: parse flags, seed the store if needed, serve until told to stop. */
export function runServer(def: ServerDefinition): void {
  const log = makeLogger(def.name);
  const main = async (): Promise<void> => {
    const opts = parseArgs(process.argv.slice(2));
    const rt = createRuntime(def.name, opts.dataFile);
    if (rt.delays.size > 0) log(`fault hook on: ${[...rt.delays].map(([t, ms]) => `${t}=${ms}ms`).join(', ')}`);
    await rt.store.ensure();
    let stop: (() => Promise<void>) | undefined = undefined;
    let stopping = false;
    const shutdown = (why: string): void => {
      if (stopping) return;
      stopping = true;
      log(`shutting down (${why})`);
      // Never hang on the way out: a stuck close must not keep the process alive.
      setTimeout(() => process.exit(0), 2_000).unref();
      (stop?.() ?? Promise.resolve()).then(
        () => process.exit(0),
        () => process.exit(1),
      );
    };
    process.once('SIGTERM', () => shutdown('SIGTERM'));
    process.once('SIGINT', () => shutdown('SIGINT'));
    const create = (): McpServer => def.create(rt);
    stop = opts.mode === 'stdio' ? await serveStdio(rt, create, () => shutdown('stdin closed')) : await serveHttp(opts, rt, create, def.urlVariable);
  };
  main().catch((error: unknown) => {
    log(`fatal: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  });
}
