import * as Anthropic from '@anthropic-ai/sdk';
import { ApiError as GeminiApiError } from '@google/genai';
import * as OpenAi from 'openai';
import { scrubSecrets } from '../security/secrets';

/**
 * Why an LLM call failed, as metrics count it: a fixed set, so a label never carries an endpoint's
 * own words. `other` is anything the client could not place (an abort, an unexpected exception).
 */
export type LlmErrorClass =
  | 'rate_limited'
  | 'overloaded'
  | 'context_too_long'
  | 'auth'
  | 'bad_request'
  | 'server_error'
  | 'timeout'
  | 'connection'
  | 'malformed_response'
  | 'other';

/** What the host does with a failed LLM call. Temporal owns the retries; the SDK's are off. */
export interface LlmFailure {
  retryable: boolean;
  errorClass: LlmErrorClass;
  /** Server-requested delay (retry-after / retry-after-ms), capped. */
  retryAfterMs?: number;
  status?: number;
  /** Safe to show a user: no key, no headers. */
  message: string;
}

const RETRYABLE_STATUS = new Set([408, 409, 429]);
const MAX_RETRY_AFTER_MS = 60_000;

/** The endpoint as a message may name it: scheme, host, port and path; never credentials or a query. */
export function describeEndpoint(baseUrl: string): string {
  try {
    const url = new URL(baseUrl);
    return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
  } catch {
    return 'the configured endpoint';
  }
}

/** An HTTP answer of any provider's SDK, reduced to what the retry policy looks at. */
interface HttpFailure {
  status: number;
  headers?: Headers;
  /** The endpoint's own words (error.message of its body). */
  detail: string;
  /** A retry delay the body asked for (Gemini's RetryInfo); headers take precedence. */
  bodyRetryAfterMs?: number;
}

/**
 * One classification for every provider (OpenAI-compatible, Anthropic, Gemini): rate limits and
 * overload are retried (after the server's retry-after when it sent one), a conversation too long for
 * the model and a refused key are final. `endpoint` (from describeEndpoint) makes messages say which
 * model endpoint failed, so a user reading `llm_unavailable` knows where to look.
 */
export function classifyLlmError(err: unknown, secrets: readonly string[] = [], endpoint?: string): LlmFailure {
  const from = endpoint ? ` from ${endpoint}` : '';
  if (isAbort(err)) {
    return { retryable: true, errorClass: 'other', message: 'the request was aborted' };
  }
  if (err instanceof OpenAi.APIConnectionError || err instanceof Anthropic.APIConnectionError || isFetchFailure(err)) {
    // Includes timeouts: nothing reached the model, or the answer never came back.
    const timeout = err instanceof OpenAi.APIConnectionTimeoutError || err instanceof Anthropic.APIConnectionTimeoutError;
    return {
      retryable: true,
      errorClass: timeout ? 'timeout' : 'connection',
      message: scrubSecrets(`cannot reach the model endpoint${endpoint ? ` ${endpoint}` : ''} (${(err as Error).message})`, secrets) };
  }
  const http = httpFailure(err);
  if (http) {
    const { status } = http;
    const detail = scrubSecrets(shorten(http.detail), secrets);
    if (isContextTooLong(status, http.detail)) {
      return {
        retryable: false,
        errorClass: 'context_too_long',
        status,
        message: `the conversation is too long for the model's context window (HTTP ${status}${from}${detail ? `: ${detail}` : ''}); start a new session or shorten the message`,
      };
    }
    const retryable = RETRYABLE_STATUS.has(status) || status >= 500;
    const errorClass = statusClass(status);
    const hint = errorClass === 'auth' ? '; check the API key configured for this model' : '';
    return {
      retryable,
      errorClass,
      status,
      retryAfterMs: retryable ? (retryAfter(http.headers) ?? http.bodyRetryAfterMs) : undefined,
      message: `HTTP ${status}${from}${detail ? `: ${detail}` : ''}${hint}`,
    };
  }
  if (err instanceof SyntaxError) {
    return { retryable: true, errorClass: 'malformed_response', message: 'the model endpoint sent a malformed response' };
  }
  const message = err instanceof Error ? err.message : String(err);
  return { retryable: true, errorClass: 'other', message: scrubSecrets(shorten(message), secrets) };
}

function isAbort(err: unknown): boolean {
  if (err instanceof OpenAi.APIUserAbortError || err instanceof Anthropic.APIUserAbortError) return true;
  // fetch's DOMException (Gemini's SDK): not an Error in every realm, so known by its name.
  return typeof err === 'object' && err !== null && (err as { name?: unknown }).name === 'AbortError';
}

/** Gemini's SDK calls fetch directly: a refused connection is fetch's own TypeError. */
function isFetchFailure(err: unknown): err is Error {
  return err instanceof TypeError && /fetch failed|network|ECONNREFUSED|socket/i.test(`${err.message} ${String((err as { cause?: unknown }).cause ?? '')}`);
}

function httpFailure(err: unknown): HttpFailure | undefined {
  if ((err instanceof OpenAi.APIError || err instanceof Anthropic.APIError) && typeof err.status === 'number') {
    return { status: err.status, ...(err.headers ? { headers: err.headers } : {}), detail: apiErrorMessage(err) };
  }
  if (err instanceof GeminiApiError && typeof err.status === 'number') return geminiFailure(err);
  return undefined;
}

/** Gemini's ApiError carries the response body as JSON text in its message. */
function geminiFailure(err: GeminiApiError): HttpFailure {
  let detail = err.message;
  let bodyRetryAfterMs: number | undefined;
  try {
    const body = JSON.parse(err.message.slice(err.message.indexOf('{'))) as { error?: { message?: unknown; details?: Array<{ retryDelay?: unknown }> } };
    if (typeof body.error?.message === 'string') detail = body.error.message;
    const delay = body.error?.details?.find((d) => typeof d.retryDelay === 'string')?.retryDelay as string | undefined;
    const seconds = delay ? Number(/^([\d.]+)s$/.exec(delay)?.[1]) : NaN;
    if (Number.isFinite(seconds)) bodyRetryAfterMs = clamp(seconds * 1000);
  } catch {
    // Not JSON: the message as it is.
  }
  return { status: err.status, detail, ...(bodyRetryAfterMs !== undefined ? { bodyRetryAfterMs } : {}) };
}

const CONTEXT_TOO_LONG = /context[_ ]length|context window|prompt is too long|too many tokens|input token count .* exceeds|maximum context|exceeds the maximum number of tokens/i;

/** Each provider says it its own way: OpenAI `context_length_exceeded`, Anthropic "prompt is too long", Gemini "input token count exceeds". */
function isContextTooLong(status: number, detail: string): boolean {
  return status === 413 || (status === 400 && CONTEXT_TOO_LONG.test(detail));
}

function statusClass(status: number): LlmErrorClass {
  if (status === 429) return 'rate_limited';
  // Anthropic's 529 and a 503 both say the model is overloaded now: retried, after a pause.
  if (status === 529 || status === 503) return 'overloaded';
  if (status === 401 || status === 403) return 'auth';
  if (status === 408) return 'timeout';
  if (status >= 500) return 'server_error';
  return status >= 400 ? 'bad_request' : 'other';
}

function apiErrorMessage(err: OpenAi.APIError | Anthropic.APIError): string {
  // OpenAI's SDK keeps the body's `error`; Anthropic's keeps the whole body ({ type, error: { message } }).
  const body = err.error as { message?: unknown; error?: { message?: unknown } } | undefined;
  if (body && typeof body.message === 'string') return body.message;
  if (body?.error && typeof body.error.message === 'string') return body.error.message;
  return err.message.replace(/^\d{3}\s*/, '');
}

function retryAfter(headers: Headers | undefined): number | undefined {
  if (!headers || typeof headers.get !== 'function') return undefined;
  const ms = headers.get('retry-after-ms');
  if (ms && Number.isFinite(Number(ms))) return clamp(Number(ms));
  const value = headers.get('retry-after');
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return clamp(seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : clamp(date - Date.now());
}

function clamp(ms: number): number {
  return Math.max(0, Math.min(MAX_RETRY_AFTER_MS, Math.round(ms)));
}

function shorten(text: string, max = 300): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}
