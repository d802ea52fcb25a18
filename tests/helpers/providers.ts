/**
 * The model providers as tests run them: each adapter against the demo model's stand-in for its wire
 * format (src/demo-model: one server, one rule engine, three dialects), so a test written once runs
 * on OpenAI-compatible, Anthropic and Gemini alike.
 */
import { createLlmClient, type LlmClient, type ProviderName } from '../../src/llm/client';
import type { DemoModelHandle, RecordedRequest } from '../../src/demo-model/server';

export interface ProviderCase {
  provider: ProviderName;
  /** The base URL its SDK is pointed at. */
  baseUrl: (model: DemoModelHandle) => string;
  /** The status this provider says "overloaded" with. */
  overloaded: number;
  /** Whether a request went to this provider's route. */
  route: (path: string) => boolean;
}

export const PROVIDER_CASES: readonly ProviderCase[] = [
  { provider: 'openai', baseUrl: (m) => m.url, overloaded: 503, route: (p) => p.endsWith('/chat/completions') },
  { provider: 'anthropic', baseUrl: (m) => m.origin, overloaded: 529, route: (p) => p === '/v1/messages' },
  { provider: 'gemini', baseUrl: (m) => m.origin, overloaded: 503, route: (p) => /:(stream)?generateContent$/i.test(p) },
];

/** For describe.each: `[name, case]` rows. */
export const PROVIDER_ROWS = PROVIDER_CASES.map((c) => [c.provider, c] as const);

export function providerCase(name: ProviderName): ProviderCase {
  const found = PROVIDER_CASES.find((c) => c.provider === name);
  if (!found) throw new Error(`no provider case ${name}`);
  return found;
}

export function clientFor(c: ProviderCase, model: DemoModelHandle, apiKey: string, timeoutMs = 5_000): LlmClient {
  return createLlmClient({ provider: c.provider, baseUrl: c.baseUrl(model), model: 'demo-model', apiKey, timeoutMs });
}

/** What this provider's adapter sent the stand-in, oldest first. */
export function sentTo(c: ProviderCase, model: DemoModelHandle): RecordedRequest[] {
  return model.requests().filter((r) => c.route(r.path));
}

/**
 * The worker's environment for a provider against the stand-in: the stand-in's base URL for its
 * SDK (LLM_PROVIDER unset for openai, as deployments before native providers have it).
 */
export function workerEnvFor(c: ProviderCase, model: DemoModelHandle): NodeJS.ProcessEnv {
  return { LLM_BASE_URL: c.baseUrl(model), LLM_MODEL: 'demo-model', ...(c.provider === 'openai' ? {} : { LLM_PROVIDER: c.provider }) };
}
