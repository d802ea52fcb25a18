/**
 * Which models the worker can ask, and through which provider (docs/decisions/0023-native-model-providers.md).
 *
 * The default model comes from the environment: LLM_PROVIDER (openai, the default: any
 * OpenAI-compatible endpoint; anthropic; gemini), LLM_BASE_URL (required for openai; the provider's
 * own endpoint when unset for the others), LLM_MODEL and LLM_API_KEY. The host config's `models` names
 * more, each with its provider, model, endpoint and the environment variable holding its key (never
 * the key itself: the host config is not a secret store); LLM_MODEL may name one of them instead.
 */
import { z } from 'zod';
import { PROVIDERS, type LlmSettings } from '../llm/provider';

export const ModelEntrySchema = z
  .object({
    provider: z.enum(PROVIDERS),
    /** The provider's model id, e.g. claude-sonnet-4-5, gemini-2.5-flash, gpt-4o-mini. */
    model: z.string().min(1),
    baseUrl: z.url({ protocol: /^https?$/, message: 'must be an http:// or https:// URL such as http://127.0.0.1:11434/v1' }).optional(),
    /** The environment variable with the key, e.g. ANTHROPIC_API_KEY; absent: no key (a local endpoint). */
    apiKeyEnv: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name such as ANTHROPIC_API_KEY').optional(),
    timeoutMs: z.number().int().positive().optional(),
    temperature: z.number().min(0).max(2).optional(),
    /** The longest answer when a request names none (Anthropic needs one: 4096 when unset). */
    maxTokens: z.number().int().positive().optional(),
  })
  .strict()
  .refine((m) => m.provider !== 'openai' || m.baseUrl !== undefined, {
    message: 'baseUrl is required for provider openai (the OpenAI-compatible endpoint, e.g. https://api.openai.com/v1)',
    path: ['baseUrl'],
  });
export type ModelEntry = z.infer<typeof ModelEntrySchema>;

/** The host config's `models`: a name for each, as requests and LLM_MODEL refer to them. */
export const ModelsSchema = z.record(z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, 'model names are letters, digits, dots, dashes and underscores'), ModelEntrySchema);

export interface ModelsEnv {
  LLM_PROVIDER?: (typeof PROVIDERS)[number] | undefined;
  LLM_BASE_URL?: string | undefined;
  LLM_MODEL?: string | undefined;
  LLM_API_KEY: string;
  LLM_TIMEOUT_MS: number;
}

export interface ResolvedModels {
  /** The model a request that names none gets. */
  defaultModel: LlmSettings;
  /** Where the default came from, for messages: `LLM_MODEL` or `models.<name>`. */
  defaultSource: string;
  named: Map<string, LlmSettings>;
}

/** The models to build clients for; a problem is a message naming the setting (thrown as Error). */
export function resolveModels(env: ModelsEnv, models: Record<string, ModelEntry>, variables: NodeJS.ProcessEnv): ResolvedModels {
  const named = new Map<string, LlmSettings>();
  for (const [name, m] of Object.entries(models)) {
    const apiKey = m.apiKeyEnv === undefined ? '' : variables[m.apiKeyEnv];
    if (apiKey === undefined || (m.apiKeyEnv !== undefined && apiKey === '')) {
      throw new Error(`host config: models.${name}.apiKeyEnv: the environment variable ${m.apiKeyEnv} is not set`);
    }
    named.set(name, {
      provider: m.provider,
      model: m.model,
      ...(m.baseUrl ? { baseUrl: m.baseUrl } : {}),
      apiKey: apiKey || 'not-needed',
      timeoutMs: m.timeoutMs ?? env.LLM_TIMEOUT_MS,
      ...(m.temperature !== undefined ? { temperature: m.temperature } : {}),
      ...(m.maxTokens !== undefined ? { maxTokens: m.maxTokens } : {}),
    });
  }
  if (!env.LLM_MODEL) throw new Error('environment: LLM_MODEL: required (a model id, or a name in the host config\'s models)');
  const chosen = named.get(env.LLM_MODEL);
  if (chosen) {
    if (env.LLM_PROVIDER || env.LLM_BASE_URL) {
      throw new Error(`environment: LLM_MODEL names the host config's model "${env.LLM_MODEL}", which has its own provider and endpoint: unset LLM_PROVIDER and LLM_BASE_URL`);
    }
    return { defaultModel: chosen, defaultSource: `models.${env.LLM_MODEL}`, named };
  }
  const provider = env.LLM_PROVIDER ?? 'openai';
  if (provider === 'openai' && !env.LLM_BASE_URL) {
    throw new Error('environment: LLM_BASE_URL: required for an OpenAI-compatible endpoint (npm start sets it to the demo model when unset)');
  }
  return {
    defaultModel: {
      provider,
      model: env.LLM_MODEL,
      ...(env.LLM_BASE_URL ? { baseUrl: env.LLM_BASE_URL } : {}),
      apiKey: env.LLM_API_KEY || 'not-needed',
      timeoutMs: env.LLM_TIMEOUT_MS,
    },
    defaultSource: 'LLM_MODEL',
    named,
  };
}

/**
 * The model a caller of `role` gets, by its name in the host config's `models` (`modelByRole`, checked
 * against `models` when the host config is read), as a turn's options carry it; none: the worker's default.
 */
export function modelForRole(role: string, byRole: Readonly<Record<string, string>> | undefined): { model?: string } {
  const name = byRole && Object.hasOwn(byRole, role) ? byRole[role] : undefined;
  return name === undefined ? {} : { model: name };
}
