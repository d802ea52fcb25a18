/**
 * Building the transport for one server connection: a stdio child with only its configured
 * environment, or Streamable HTTP with a fallback to legacy HTTP+SSE for older servers.
 */
import { statSync } from 'node:fs';
import type { Readable } from 'node:stream';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FetchLike, Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage, MessageExtraInfo } from '@modelcontextprotocol/sdk/types.js';
import type { ServerStatus } from '../shared/tool-types';
import { type HttpServerConfig, maxMessageBytesOf, type McpServerConfig, type StdioServerConfig } from './config';
import { describeCause, isAuthRefusal, isHttp4xx } from './failures';
import { GarbageCounter, isStdioOverflow, isUnparsableLine, limitedFetch, oversizeFault, type TransportFault } from './transport-limits';
import { forwardingFetch } from './user-token';

export type TransportKind = ServerStatus['transport'];

const MAX_STDERR_LINE = 2_000;

/**
 * The transport for `cfg` over `kind`. A stdio child's stderr is handed to `onStderrLine` line by
 * line (long lines cut), so a chatty server cannot flood the log. `authFetch` is the OAuth-aware
 * fetch of a server with `auth` (src/mcp/oauth/fetch.ts). Messages are capped at the server's
 * `maxMessageBytes` and a stdio server's stdout must speak JSON-RPC (transport-limits.ts): a breach
 * reaches the transport's `onerror` as a `TransportFault`.
 */
export function createTransport(
  cfg: McpServerConfig,
  kind: TransportKind,
  onStderrLine: (line: string) => void,
  authFetch?: FetchLike,
  /** Rejoin this Streamable HTTP session (no new `initialize`): to find a task an earlier connection started. */
  sessionId?: string,
): Transport {
  const maxBytes = maxMessageBytesOf(cfg);
  if (cfg.kind === 'stdio') {
    const transport = new StdioClientTransport({ ...stdioParams(cfg), maxBufferSize: maxBytes });
    if (transport.stderr) splitLines(transport.stderr as Readable, onStderrLine);
    return new GuardedStdio(transport, maxBytes);
  }
  const url = new URL(cfg.url);
  // The transport's `onerror` is the session's by the time a response is read.
  const opts = httpOptions(cfg, authFetch, (fault) => transport.onerror?.(fault));
  const transport: Transport =
    kind === 'sse' ? new SSEClientTransport(url, opts) : new StreamableHTTPClientTransport(url, { ...opts, ...(sessionId ? { sessionId } : {}) });
  return transport;
}

/**
 * A stdio transport whose stdout must be JSON-RPC: the SDK's line buffer going over the limit, or a
 * run of lines it cannot parse, is reported as a `TransportFault` (other errors pass as they are).
 */
class GuardedStdio implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(message: T, extra?: MessageExtraInfo) => void;

  constructor(
    readonly inner: StdioClientTransport,
    maxBytes: number,
  ) {
    const garbage = new GarbageCounter();
    inner.onmessage = (message: JSONRPCMessage) => {
      garbage.message();
      this.onmessage?.(message);
    };
    inner.onerror = (error) => {
      const fault = isStdioOverflow(error) ? oversizeFault(maxBytes) : isUnparsableLine(error) ? garbage.garbage() : undefined;
      this.onerror?.(fault ?? error);
    };
    inner.onclose = () => this.onclose?.();
  }

  start(): Promise<void> {
    return this.inner.start();
  }

  send(message: JSONRPCMessage): Promise<void> {
    return this.inner.send(message);
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}

/** How a stdio server is spawned, whichever SDK spawns it. */
export function stdioParams(cfg: StdioServerConfig) {
  return {
    command: cfg.command,
    args: cfg.args,
    cwd: checkedCwd(cfg.cwd),
    // Never the worker's whole environment: it holds the host's own secrets.
    env: { ...getDefaultEnvironment(), ...cfg.env },
    stderr: 'pipe' as const,
  };
}

/**
 * The headers and fetch of an HTTP server's requests, whichever SDK sends them: responses are read
 * within `maxMessageBytes` (transport-limits.ts), a breach reported to `onFault` as well as failing the read.
 */
export function httpOptions(cfg: HttpServerConfig, authFetch?: FetchLike, onFault: (fault: TransportFault) => void = () => undefined): { requestInit: RequestInit; fetch: FetchLike } {
  const fetch = authFetch ?? (cfg.forwardUserToken ? forwardingFetch() : undefined);
  return { requestInit: { headers: { ...cfg.headers } }, fetch: limitedFetch(fetch, maxMessageBytesOf(cfg), onFault) };
}

/** The child's pid once a stdio transport has started. */
export function pidOf(transport: Transport): number | undefined {
  return transport instanceof GuardedStdio ? (transport.inner.pid ?? undefined) : undefined;
}

/** The Streamable HTTP session id of a connection, if it has one. */
export function sessionIdOf(transport: Transport): string | undefined {
  return transport instanceof StreamableHTTPClientTransport ? transport.sessionId : undefined;
}

/** Ends the server-side session of a Streamable HTTP connection instead of leaving it to expire. */
export async function terminateHttpSession(transport: Transport): Promise<void> {
  if (transport instanceof StreamableHTTPClientTransport) await transport.terminateSession();
}

/**
 * Opens an HTTP server whose transport is `auto`: Streamable HTTP first; a 4xx answer means a legacy
 * HTTP+SSE server, so SSE is tried next. Anything else (refused connection, timeout, 5xx) would fail
 * the same way over SSE and is thrown as is.
 */
export async function openHttpWithFallback<C>(
  open: (kind: 'streamable-http' | 'sse') => Promise<C>,
  onFallback: (reason: string) => void,
): Promise<{ conn: C; kind: 'streamable-http' | 'sse' }> {
  try {
    return { conn: await open('streamable-http'), kind: 'streamable-http' };
  } catch (error) {
    // A 401/403 is about credentials, which SSE would not have either.
    if (!isHttp4xx(error) || isAuthRefusal(error)) throw error;
    onFallback(describeCause(error));
    try {
      return { conn: await open('sse'), kind: 'sse' };
    } catch (sseError) {
      throw new Error(`streamable-http: ${describeCause(error)}; sse: ${describeCause(sseError)}`);
    }
  }
}

/** A child's stream handed on line by line, long lines cut (a chatty server cannot flood the log). */
export function splitLines(stream: Readable, onLine: (line: string) => void): void {
  let buffered = '';
  const emit = (line: string): void => {
    const cut = line.length > MAX_STDERR_LINE ? `${line.slice(0, MAX_STDERR_LINE)}...` : line;
    if (cut.trim() !== '') onLine(cut);
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

/**
 * A stdio server's working directory, checked first: spawn reports a missing cwd as
 * "spawn <command> ENOENT", which sends people looking for the wrong thing.
 */
function checkedCwd(dir: string): string {
  if (!isDirectory(dir)) throw new Error(`working directory does not exist: ${dir}`);
  return dir;
}

function isDirectory(dir: string): boolean {
  try {
    return statSync(dir).isDirectory();
  } catch {
    return false;
  }
}
