/**
 * The model client for a configured model: the adapter of its provider (src/llm/provider.ts).
 */
import { createAnthropicClient } from './anthropic';
import { createGeminiClient } from './gemini';
import { createOpenAiClient } from './openai';
import type { LlmClient, LlmSettings } from './provider';

export type { CompleteOptions, LlmClient, LlmDelta, LlmSettings, ProviderName } from './provider';

export function createLlmClient(settings: LlmSettings): LlmClient {
  switch (settings.provider ?? 'openai') {
    case 'anthropic':
      return createAnthropicClient(settings);
    case 'gemini':
      return createGeminiClient(settings);
    case 'openai': {
      const { baseUrl } = settings;
      if (!baseUrl) throw new Error(`model ${settings.model}: an OpenAI-compatible endpoint needs a base URL`);
      return createOpenAiClient({ ...settings, baseUrl });
    }
  }
}
