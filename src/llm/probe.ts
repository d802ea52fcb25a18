/**
 * The optional start-up check of the model endpoint (LLM_PROBE=on): GET {LLM_BASE_URL}/models with the
 * key, so a wrong URL, a refused key or a model name the endpoint does not serve is said at start, not
 * in the first user's turn. Messages name the endpoint's origin and path, never the key.
 */
import { describeEndpoint } from './errors';

export type ProbeResult =
  | { kind: 'ok'; message: string }
  /** The endpoint has no /models route (some OpenAI-compatible servers): nothing can be checked. */
  | { kind: 'unchecked'; message: string }
  | { kind: 'failed'; message: string };

const SHOWN_MODELS = 8;

export async function probeModels(opts: { baseUrl: string; apiKey: string; model: string; timeoutMs?: number }): Promise<ProbeResult> {
  const endpoint = describeEndpoint(opts.baseUrl);
  const url = `${opts.baseUrl.replace(/\/+$/, '')}/models`;
  const where = `${endpoint}/models`;
  let res: Response;
  try {
    res = await fetch(url, {
      headers: { accept: 'application/json', ...(opts.apiKey ? { authorization: `Bearer ${opts.apiKey}` } : {}) },
      signal: AbortSignal.timeout(opts.timeoutMs ?? 10_000),
    });
  } catch (err) {
    const e = err as { cause?: { code?: string }; name?: string };
    const cause = e.cause?.code ?? e.name ?? 'error';
    return { kind: 'failed', message: `LLM_BASE_URL: cannot reach ${where} (${cause}); is the model server running, and is the URL right?` };
  }
  if (res.status === 401 || res.status === 403) {
    return { kind: 'failed', message: `LLM_API_KEY: ${where} refused the key (HTTP ${res.status})` };
  }
  if (res.status === 404 || res.status === 405) {
    return { kind: 'unchecked', message: `${where} answered HTTP ${res.status}: this endpoint does not list models, so LLM_MODEL ${opts.model} could not be checked` };
  }
  if (!res.ok) return { kind: 'failed', message: `LLM_BASE_URL: ${where} answered HTTP ${res.status}` };
  let ids: string[];
  try {
    const body = (await res.json()) as { data?: Array<{ id?: unknown }> };
    ids = (body.data ?? []).map((m) => m.id).filter((id): id is string => typeof id === 'string');
  } catch {
    return { kind: 'failed', message: `LLM_BASE_URL: ${where} did not answer with an OpenAI-style model list; is it the API's base URL (often ending in /v1)?` };
  }
  if (ids.includes(opts.model)) return { kind: 'ok', message: `${where} serves ${opts.model}` };
  const shown = ids.slice(0, SHOWN_MODELS).join(', ') + (ids.length > SHOWN_MODELS ? `, … (${ids.length} in all)` : '');
  return { kind: 'failed', message: `LLM_MODEL: ${where} does not serve "${opts.model}"; it lists ${ids.length ? shown : 'no models'}` };
}
