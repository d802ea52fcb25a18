/**
 * What went wrong with an MCP request, decided in one place for calls, listings, resources and
 * prompts. Retrying is Temporal's job; this module only says whether a retry can help.
 *
 * One error class carries the verdict as `kind`; its `name` is the failure type of
 * src/shared/failures.ts that activities hand to Temporal (or `AbortError` for a cancelled request,
 * like the platform's). `McpTransientError`, `McpPermanentError` and `McpAbortError` are the three
 * kinds as constructors, so `instanceof` reads naturally where one kind is expected.
 */
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { Failure } from '../shared/failures';
import { scrubSecrets } from '../security/secrets';
import { TransportFault } from './transport-limits';

export type McpFailureKind = 'transient' | 'permanent' | 'aborted';

const NAMES: Record<McpFailureKind, string> = {
  transient: Failure.McpTransientError,
  permanent: Failure.McpPermanentError,
  aborted: 'AbortError',
};

/** Never carries secrets: `reason` is scrubbed before an error is built. */
export abstract class McpFailure extends Error {
  override readonly name: string;

  protected constructor(
    readonly kind: McpFailureKind,
    readonly server: string,
    /** The secret-free cause alone, without the server name (for status reports). */
    readonly reason: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = NAMES[kind];
  }
}

/** Retrying may help (connection lost, timeout, server not reachable, circuit open, a server's error answer). */
export class McpTransientError extends McpFailure {
  /**
   * The request was written to the server (or may have been) before the failure: it may have taken
   * effect. False only when it provably never left (no connection, circuit open, connection refused).
   */
  readonly requestSent: boolean;
  /**
   * The server answered (a JSON-RPC error, an HTTP 4xx): it is up, and the failure is about this
   * request, often about its caller. Such a failure says nothing about the server's health.
   */
  readonly answered: boolean;

  constructor(server: string, reason: string, opts: { requestSent?: boolean; answered?: boolean } = {}) {
    super('transient', server, reason, `MCP server "${server}": ${reason}`);
    this.requestSent = opts.requestSent ?? false;
    this.answered = opts.answered ?? false;
  }
}

/**
 * Does this failure say the server is unwell? Only transient failures the server did not answer
 * (timeouts, refused or lost connections, HTTP 5xx): what a circuit breaker counts. One caller's
 * refused or failing request must not close a server to every other caller.
 */
export const saysServerUnwell = (error: unknown): boolean => error instanceof McpTransientError && !error.answered;

/** A connection refused (ECONNREFUSED) anywhere in the cause chain: nothing reached the server. */
export function isConnectionRefused(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; depth < 6 && current && typeof current === 'object'; depth++) {
    if ((current as { code?: unknown }).code === 'ECONNREFUSED') return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

/** Retrying cannot help (unknown or disabled server, a request the server refuses outright). */
export class McpPermanentError extends McpFailure {
  constructor(server: string, reason: string) {
    super('permanent', server, reason, `MCP server "${server}": ${reason}`);
  }
}

/** The caller's signal fired. */
export class McpAbortError extends McpFailure {
  constructor(server: string, cause?: unknown) {
    super('aborted', server, 'cancelled', `MCP request to "${server}" was cancelled`, { cause });
  }
}

export const isMcpFailure = (error: unknown, kind: McpFailureKind): error is McpFailure =>
  error instanceof McpFailure && error.kind === kind;

/** Reasons are for people and status reports: bounded, so a chatty server cannot flood them. */
const MAX_REASON_CHARS = 300;

/** A secret-free reason, short enough for a status report or an error message. */
export function safeReason(text: string, secrets: readonly string[]): string {
  const out = scrubSecrets(text, secrets);
  return out.length > MAX_REASON_CHARS ? `${out.slice(0, MAX_REASON_CHARS - 3)}...` : out;
}

/** JSON-RPC errors that mean "this request will never work", not "the server had a bad moment". */
const PERMANENT_CODES = new Set<number>([
  ErrorCode.InvalidParams,
  ErrorCode.MethodNotFound,
  ErrorCode.InvalidRequest,
  ErrorCode.ParseError,
  ErrorCode.UrlElicitationRequired,
  -32002, // Resource not found (MCP spec).
]);

/**
 * The verdict on a failed request. `refused`: the server understood and said no (for a tool call,
 * data for the LLM; for a resource or prompt, permanent). `connection` says what the pool does with
 * the connection the request ran on; `answered`, whether the server answered (see McpTransientError).
 */
export type RequestVerdict =
  | { kind: 'aborted'; cause: unknown }
  | { kind: 'refused'; reason: string }
  | { kind: 'transient'; reason: string; connection: 'keep' | 'probe' | 'retire'; answered: boolean };

/**
 * The SDK reports its own timeout and a lost connection as McpErrors with codes (-32001, -32000)
 * that a server may also send as its own error codes (the JSON-RPC range -32000..-32099 is the
 * server's). What the SDK made itself is told apart by what it attaches: a timeout carries its
 * limit in `data`, a closed connection has the SDK's fixed message and no data.
 * tests/unit/mcp-failure-health.test.ts pins both against the real SDK.
 */
function isLocalTimeout(error: McpError): boolean {
  if (error.code !== ErrorCode.RequestTimeout || typeof error.data !== 'object' || error.data === null) return false;
  const data = error.data as { timeout?: unknown; maxTotalTimeout?: unknown };
  return typeof data.timeout === 'number' || typeof data.maxTotalTimeout === 'number';
}

/** The SDK's own timeout for a request that ran over its `maxTotalTimeout` (progress does not extend it). */
export function isTotalTimeout(error: unknown): boolean {
  return error instanceof McpError && isLocalTimeout(error) && typeof (error.data as { maxTotalTimeout?: unknown }).maxTotalTimeout === 'number';
}

function isLocalConnectionClosed(error: McpError): boolean {
  return error.code === ErrorCode.ConnectionClosed && error.data === undefined && error.message === `MCP error ${ErrorCode.ConnectionClosed}: Connection closed`;
}

/** The HTTP status a transport error carries, if the server answered one. */
function httpStatusOf(error: unknown): number | undefined {
  if (error instanceof StreamableHTTPError) return typeof error.code === 'number' && error.code >= 100 ? error.code : undefined;
  // The legacy HTTP+SSE transport keeps the status only in its message.
  const match = error instanceof Error ? /^Error POSTing to endpoint \(HTTP (\d{3})\)/.exec(error.message) : null;
  return match?.[1] ? Number(match[1]) : undefined;
}

export function classifyRequestError(
  error: unknown,
  opts: { signal?: AbortSignal; timeoutMs: number; secrets: readonly string[] },
): RequestVerdict {
  // Checked first: the SDK reports its own abort as a RequestTimeout McpError.
  if (opts.signal?.aborted) return { kind: 'aborted', cause: opts.signal.reason };
  // The server answered, but past the transport's limits (an oversized answer): said as it is.
  if (error instanceof TransportFault) return { kind: 'transient', reason: error.message, connection: 'retire', answered: true };
  if (error instanceof McpError) {
    if (isLocalTimeout(error)) {
      const reason = isTotalTimeout(error)
        ? `request ran over its total time limit of ${String((error.data as { maxTotalTimeout: number }).maxTotalTimeout)} ms (callTotalMs, or the time the tool activity had left), progress or not`
        : `request timed out after ${opts.timeoutMs} ms`;
      return { kind: 'transient', reason, connection: 'probe', answered: false };
    }
    if (isLocalConnectionClosed(error)) {
      return { kind: 'transient', reason: 'connection closed during the request; the next attempt reconnects', connection: 'retire', answered: false };
    }
    // Any other McpError is the server's JSON-RPC error response: it is up and answering.
    const cause = safeReason(describeCause(error), opts.secrets);
    if (PERMANENT_CODES.has(error.code)) return { kind: 'refused', reason: cause };
    return { kind: 'transient', reason: `server error ${error.code}: ${cause}`, connection: 'keep', answered: true };
  }
  if (isZodError(error)) return { kind: 'refused', reason: 'the server sent a malformed response' };
  // Everything else is the transport (fetch failed, HTTP error, broken pipe, "Not connected"):
  // the connection cannot be trusted any more. An HTTP status below 500 is still an answer (404
  // session expired, 401/403 for a forwarded user token, 429 for one client's rate): the server is
  // up. A 5xx, or no status at all, says it is not well.
  const status = httpStatusOf(error);
  return {
    kind: 'transient',
    reason: `connection failed: ${safeReason(describeCause(error), opts.secrets)}; the next attempt reconnects`,
    connection: 'retire',
    answered: status !== undefined && status < 500,
  };
}

/** A legacy HTTP+SSE server refuses the Streamable HTTP POST with a 4xx (404/405 typically). */
export function isHttp4xx(error: unknown): boolean {
  return error instanceof StreamableHTTPError && typeof error.code === 'number' && error.code >= 400 && error.code < 500;
}

/** 401 or 403: the server wants credentials this host did not send; neither a retry nor another transport helps. */
export function isAuthRefusal(error: unknown): boolean {
  return error instanceof StreamableHTTPError && (error.code === 401 || error.code === 403);
}

/**
 * The optional server-to-client GET stream refused with 404 (the spec's answer is 405, but POST-only
 * servers often say 404): the session itself is fine and keeps working over POST.
 */
export function isMissingOptionalStream(error: unknown): boolean {
  return error instanceof StreamableHTTPError && error.code === 404 && error.message.includes('Failed to open SSE stream');
}

/** A short, human-readable cause; the caller scrubs it. */
export function describeCause(error: unknown): string {
  if (error instanceof McpError) return error.message.replace(/^MCP error -?\d+: /, '');
  if (error instanceof StreamableHTTPError) {
    if (error.code === 401) return 'HTTP 401: the server requires authorization (this host does not do OAuth yet; configure an Authorization header)';
    if (error.code === 403) return 'HTTP 403: the server refused these credentials';
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
