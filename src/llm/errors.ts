import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import { scrubSecrets } from '../security/secrets';

/**
 * Why an LLM call failed, as metrics count it: a fixed set, so a label never carries an endpoint's
 * own words. `other` is anything the client could not place (an abort, an unexpected exception).
 */
export type LlmErrorClass = 'rate_limited' | 'auth' | 'bad_request' | 'server_error' | 'timeout' | 'connection' | 'malformed_response' | 'other';

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

/**
 * `endpoint` (from describeEndpoint) makes messages say which model endpoint failed, so a user reading
 * `llm_unavailable` knows where to look.
 */
export function classifyLlmError(err: unknown, secrets: readonly string[] = [], endpoint?: string): LlmFailure {
  const from = endpoint ? ` from ${endpoint}` : '';
  if (err instanceof APIUserAbortError) {
    return { retryable: true, errorClass: 'other', message: 'the request was aborted' };
  }
  if (err instanceof APIConnectionError) {
    // Includes timeouts: nothing reached the model, or the answer never came back.
    return {
      retryable: true,
      errorClass: err instanceof APIConnectionTimeoutError ? 'timeout' : 'connection',
      message: scrubSecrets(`cannot reach the model endpoint${endpoint ? ` ${endpoint}` : ''} (${err.message})`, secrets) };
  }
  if (err instanceof APIError && typeof err.status === 'number') {
    const status = err.status;
    const retryable = RETRYABLE_STATUS.has(status) || status >= 500;
    const detail = scrubSecrets(shorten(apiErrorMessage(err)), secrets);
    return {
      retryable,
      errorClass: statusClass(status),
      status,
      retryAfterMs: retryable ? retryAfter(err.headers) : undefined,
      message: `HTTP ${status}${from}${detail ? `: ${detail}` : ''}`,
    };
  }
  if (err instanceof SyntaxError) {
    return { retryable: true, errorClass: 'malformed_response', message: 'the model endpoint sent a malformed response' };
  }
  const message = err instanceof Error ? err.message : String(err);
  return { retryable: true, errorClass: 'other', message: scrubSecrets(shorten(message), secrets) };
}

function statusClass(status: number): LlmErrorClass {
  if (status === 429) return 'rate_limited';
  if (status === 401 || status === 403) return 'auth';
  if (status === 408) return 'timeout';
  if (status >= 500) return 'server_error';
  return status >= 400 ? 'bad_request' : 'other';
}

function apiErrorMessage(err: APIError): string {
  const body = err.error as { message?: unknown } | undefined;
  if (body && typeof body.message === 'string') return body.message;
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
