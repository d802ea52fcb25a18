import { APIConnectionError, APIError, APIUserAbortError } from 'openai';
import { scrubSecrets } from '../security/secrets';

/** What the host does with a failed LLM call. Temporal owns the retries; the SDK's are off. */
export interface LlmFailure {
  retryable: boolean;
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
    return { retryable: true, message: 'the request was aborted' };
  }
  if (err instanceof APIConnectionError) {
    // Includes timeouts: nothing reached the model, or the answer never came back.
    return { retryable: true, message: scrubSecrets(`cannot reach the model endpoint${endpoint ? ` ${endpoint}` : ''} (${err.message})`, secrets) };
  }
  if (err instanceof APIError && typeof err.status === 'number') {
    const status = err.status;
    const retryable = RETRYABLE_STATUS.has(status) || status >= 500;
    const detail = scrubSecrets(shorten(apiErrorMessage(err)), secrets);
    return {
      retryable,
      status,
      retryAfterMs: retryable ? retryAfter(err.headers) : undefined,
      message: `HTTP ${status}${from}${detail ? `: ${detail}` : ''}`,
    };
  }
  if (err instanceof SyntaxError) {
    return { retryable: true, message: 'the model endpoint sent a malformed response' };
  }
  const message = err instanceof Error ? err.message : String(err);
  return { retryable: true, message: scrubSecrets(shorten(message), secrets) };
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
