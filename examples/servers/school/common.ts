/**
 * The school servers on the v1 SDK (`@modelcontextprotocol/sdk`, MCP 2025-11-25), and what every
 * server shares whichever SDK serves it: the command line, the HTTP listener (Host check, `/mcp`,
 * the URL line) and the process lifecycle. The tools themselves are SDK-neutral (core.ts); the
 * payments server can also speak 2026-07-28 on the v2 server package (modern.ts, `--protocol`).
 *
 * Command line of every server:
 *   node dist/examples/servers/school/<name>-server.js [--stdio] [--data FILE]
 *   node dist/examples/servers/school/<name>-server.js --http [--port N] [--host H] [--allowed-host NAME:PORT ...] [--data FILE]
 *   (payments only) ... [--protocol 2025-11-25|2026-07-28]
 * In HTTP mode the server listens on 127.0.0.1 (or --host; port 0 = any free port) and prints
 * `<NAME>_SERVER_URL=http://127.0.0.1:PORT/mcp` on stdout once it is listening. Requests must name
 * it in their Host header as 127.0.0.1, localhost or [::1] with its port, or as an --allowed-host
 * (how other machines reach it: `payments:4020` in the compose stack).
 * Logs go to stderr: in stdio mode stdout belongs to the protocol.
 */
import * as http from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { ServerNotification, ServerRequest } from '@modelcontextprotocol/sdk/types.js';
import { createRuntime, makeLogger, type CallContext, type Registrar, type Runtime, type ServerName } from './core';
import { resolveDataFile } from './store';
import { hostAllowed, sendJsonRpcError, streamableHttpHandler, type ServerSession } from '../http-util';

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/** A request as the v1 SDK hands it over; the revision is named per request over HTTP only (its header). */
function legacyCall(extra: Extra): CallContext {
  const header = extra.requestInfo?.headers['mcp-protocol-version'];
  return {
    meta: extra._meta as Record<string, unknown> | undefined,
    signal: extra.signal,
    progress: (params) => extra.sendNotification({ method: 'notifications/progress', params }),
    ...(typeof header === 'string' ? { protocol: header } : {}),
  };
}

/** Registers the SDK-neutral tools and resources on a v1 `McpServer`. */
export function legacyRegistrar(server: McpServer): Registrar {
  return {
    tool: (name, config, run) => {
      server.registerTool(name, config, ((args: never, extra: Extra) => run(args, legacyCall(extra))) as never);
    },
    resource: (name, uri, config, read) => {
      server.registerResource(name, uri, config, (url, extra) => read(url, legacyCall(extra)));
    },
  };
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
  /** The revision served: 2025-11-25 on the v1 SDK (every server), or 2026-07-28 on the v2 server package (payments). */
  protocol: Protocol;
}

export const PROTOCOLS = ['2025-11-25', '2026-07-28'] as const;
export type Protocol = (typeof PROTOCOLS)[number];

export function parseArgs(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): ServerOptions {
  let mode: ServerOptions['mode'] = 'stdio';
  let port = 0;
  let host = '127.0.0.1';
  const allowedHosts: string[] = [];
  let data: string | undefined;
  let protocol: Protocol = '2025-11-25';
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
    else if (arg === '--protocol') {
      const named = value();
      if (!(PROTOCOLS as readonly string[]).includes(named)) throw new Error(`--protocol must be one of ${PROTOCOLS.join(', ')}`);
      protocol = named as Protocol;
    } else throw new Error(`unknown argument: ${arg} (use [--stdio] | --http [--port N] [--host H] [--allowed-host NAME:PORT], [--data FILE], [--protocol REVISION])`);
  }
  return { mode, port, host, allowedHosts, dataFile: resolveDataFile(data, env), protocol };
}

type NodeHandler = (req: http.IncomingMessage, res: http.ServerResponse) => Promise<void>;

/**
 * Listens for MCP over HTTP on `opts.host:opts.port` (Host header checked, only `/mcp`), hands each
 * request to `handle`, prints `<urlVariable>=…` once listening. Resolves with what closes the listener.
 */
export async function listenHttp(opts: ServerOptions, rt: Runtime, urlVariable: string, handle: NodeHandler): Promise<() => Promise<void>> {
  let port = opts.port;
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
  rt.log(`Streamable HTTP (MCP ${opts.protocol}) on ${opts.host}:${port}, data in ${rt.store.file}`);
  return async () => {
    httpServer.closeAllConnections();
    await new Promise<void>((resolve) => httpServer.close(() => resolve()));
  };
}

/** Streamable HTTP with stateful sessions: one McpServer per session, all on the same store. */
async function serveHttp(opts: ServerOptions, rt: Runtime, create: () => McpServer, urlVariable: string): Promise<() => Promise<void>> {
  const sessions = new Map<string, ServerSession>();
  const close = await listenHttp(opts, rt, urlVariable, streamableHttpHandler(sessions, create));
  return async () => {
    await Promise.allSettled([...sessions.values()].map((s) => s.server.close()));
    sessions.clear();
    await close();
  };
}

async function serveStdio(create: () => McpServer): Promise<() => Promise<void>> {
  const server = create();
  await server.connect(new StdioServerTransport());
  return async () => {
    await server.close();
  };
}

/** Serves one revision in the mode the options name; resolves with what stops it. */
export type Serve = (opts: ServerOptions, rt: Runtime, urlVariable: string) => Promise<() => Promise<void>>;

export interface ServerDefinition {
  name: ServerName;
  /** Printed on stdout in HTTP mode, e.g. PAYMENTS_SERVER_URL. */
  urlVariable: string;
  create: (rt: Runtime) => McpServer;
  /** Serves MCP 2026-07-28 (`--protocol 2026-07-28`), for a server that speaks it. */
  serveModern?: Serve;
}

/** The entry point of every server: parse flags, seed the store if needed, serve until told to stop. */
export function runServer(def: ServerDefinition): void {
  const log = makeLogger(def.name);
  const main = async (): Promise<void> => {
    const opts = parseArgs(process.argv.slice(2));
    const serveModern = def.serveModern;
    if (opts.protocol === '2026-07-28' && !serveModern) throw new Error(`the ${def.name} server speaks MCP 2025-11-25 only`);
    const rt = createRuntime(def.name, opts.dataFile);
    const hooks = [...[...rt.delays].map(([t, ms]) => `${t}=${ms}ms`), ...[...rt.holds].map(([t, ms]) => `${t}: result held ${ms}ms`)];
    if (hooks.length > 0) log(`fault hook on: ${hooks.join(', ')}`);
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
    const serveLegacy: Serve = async () => (opts.mode === 'stdio' ? await serveStdio(create) : await serveHttp(opts, rt, create, def.urlVariable));
    stop = await (opts.protocol === '2026-07-28' && serveModern ? serveModern : serveLegacy)(opts, rt, def.urlVariable);
    if (opts.mode === 'stdio') {
      // The host closing our stdin is how it says goodbye (and how we avoid outliving a crashed host).
      process.stdin.once('end', () => shutdown('stdin closed'));
      process.stdin.once('close', () => shutdown('stdin closed'));
      rt.log(`stdio (MCP ${opts.protocol}), data in ${rt.store.file}`);
    }
  };
  main().catch((error: unknown) => {
    log(`fatal: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  });
}
