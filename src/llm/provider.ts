/**
 * One interface for every model provider (docs/decisions/0023-native-model-providers.md): the LLM
 * activity, the session summarizer and MCP sampling call `complete`, whatever wire format the model
 * speaks. Adapters: openai.ts (any OpenAI-compatible endpoint), anthropic.ts (Messages API),
 * gemini.ts (Gemini API). Each adapter streams, assembles (parallel) tool calls, reports usage and
 * stops on its AbortSignal; errors.ts classifies every SDK's errors for the one retry policy.
 */
import type { ChatMessage, LlmRequest, LlmResponse } from '../shared/turn';

export const PROVIDERS = ['openai', 'anthropic', 'gemini'] as const;
export type ProviderName = (typeof PROVIDERS)[number];

export interface LlmSettings {
  /** Default `openai` (OpenAI-compatible chat completions). */
  provider?: ProviderName;
  /** Required for `openai`; the SDK's own endpoint when absent for `anthropic` and `gemini`. */
  baseUrl?: string;
  model: string;
  /** Secret: never logged, never put in workflow history. */
  apiKey: string;
  timeoutMs: number;
  temperature?: number;
  /** The longest answer when a request names none (Anthropic requires one; others: the endpoint's default). */
  maxTokens?: number;
}

/** What a streamed chunk carried: text for watching clients; every chunk, text or not, is a sign of life. */
export interface LlmDelta {
  text?: string;
  /**
   * The tokens the stream has reported so far, when this chunk reported them (Anthropic at the start
   * and the end, OpenAI at the end, Gemini as it goes): a stream that breaks later has spent them.
   */
  usage?: NonNullable<LlmResponse['usage']>;
}

export interface CompleteOptions {
  signal?: AbortSignal;
  /** Called on every streamed chunk (activity heartbeats and live text). */
  onChunk?: (delta: LlmDelta) => void;
}

export interface LlmClient {
  readonly provider: ProviderName;
  readonly model: string;
  /** The endpoint as messages may name it (errors.ts describeEndpoint): no credentials, no query. */
  readonly endpoint: string;
  /** Resolves to the answer, `provider` and `model` filled in; rejects with its SDK's error (errors.ts classifies it). */
  complete(req: LlmRequest, opts?: CompleteOptions): Promise<LlmResponse>;
}

/** The id of a tool call a provider sent none for (Gemini): stable per step and position, so retries agree. */
export function fallbackCallId(step: number, index: number): string {
  return `call_${step}_${index}`;
}

/** Tool arguments as an object for the providers that take one (Anthropic, Gemini); invalid JSON: empty. */
export function parseArguments(text: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text === '' ? '{}' : text);
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/** A tool name for each tool call id the assistant made earlier (Gemini answers a call by name). */
export function callNames(messages: readonly ChatMessage[]): Map<string, string> {
  const names = new Map<string, string>();
  for (const m of messages) if (m.role === 'assistant') for (const c of m.toolCalls ?? []) names.set(c.id, c.name);
  return names;
}
