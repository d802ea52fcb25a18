import { z } from 'zod';
import { DEFAULT_TOOL_SEARCH } from '../core/tool-search';
import { DEFAULT_ADAPTIVE_CONTEXT } from '../core/adaptive-context';
import { AdaptiveContextSchema, ContextSpecSchema, IntentSchema, ToolSearchSchema } from './context-schemas';
import { ModelsSchema } from './models';

/** The host config file's schema (HOST_CONFIG); loadHostConfig in ./index.ts reads the file and reports its errors. */

const RetrySchema = z.object({
  maximumAttempts: z.number().int().min(1).max(100),
  initialIntervalMs: z.number().int().min(1),
  maximumIntervalMs: z.number().int().min(1),
});

/** Host behaviour that belongs to the deployment, not the request: prompts, limits, context, retries. */
export const HostConfigSchema = z
  .object({
    systemPrompt: z.string().optional(),
    maxSteps: z.number().int().min(1).max(50).default(8),
    maxToolResultChars: z.number().int().min(100).default(20_000),
    context: ContextSpecSchema.default({ resources: [], prompts: [] }),
    /** Context per caller role (seed 000 §9.5); roles not listed get `context`. */
    contextByRole: z.record(z.string(), ContextSpecSchema).default({}),
    /** Context by intent (src/core/intents.ts): a message matching `match` also gathers the rule's resources and prompts. */
    intents: z.array(IntentSchema).max(200).default([]),
    /**
     * Catalogs too large to offer whole (docs/decisions/0032): past `threshold` visible tools the model gets the
     * host's search tool and `offered` tools (the caller's most used), and each search returns up to `results`.
     */
    toolSearch: ToolSearchSchema.default(DEFAULT_TOOL_SEARCH),
    /** Adaptive context (docs/decisions/0036): host tools to list and read the resources the caller may read. */
    adaptiveContext: AdaptiveContextSchema.default(DEFAULT_ADAPTIVE_CONTEXT),
    llmRetry: RetrySchema.default({ maximumAttempts: 6, initialIntervalMs: 1_000, maximumIntervalMs: 30_000 }),
    mcpRetry: RetrySchema.default({ maximumAttempts: 5, initialIntervalMs: 500, maximumIntervalMs: 10_000 }),
    timeouts: z
      .object({
        llmStartToCloseMs: z.number().int().min(1_000).default(120_000),
        llmHeartbeatMs: z.number().int().min(500).default(30_000),
        toolStartToCloseMs: z.number().int().min(1_000).default(600_000),
        /**
         * How long a tool call may go without a heartbeat before it is retried elsewhere: the window a
         * crashed worker stalls the call. A running call beats every third of it (ACTIVITY_HEARTBEAT_MS at
         * most), progress or not, so only a dead or frozen worker misses it (docs/SCALING.md, "A crashed worker").
         */
        toolHeartbeatMs: z.number().int().min(500).default(10_000),
      })
      .strict()
      .default({ llmStartToCloseMs: 120_000, llmHeartbeatMs: 30_000, toolStartToCloseMs: 600_000, toolHeartbeatMs: 10_000 }),
    /** Conversations (seed 004 HistoryManagementOptions plus the session workflow's limits). */
    sessions: z
      .object({
        maxTokenCount: z.number().int().min(100).default(8_000),
        summarizationThreshold: z.number().int().min(50).default(6_000),
        retainNewestMessages: z.number().int().min(0).max(1_000).default(10),
        maxQueuedTurns: z.number().int().min(0).max(1_000).default(16),
        transcriptLimit: z.number().int().min(10).max(10_000).default(200),
        maxTurnsPerRun: z.number().int().min(1).max(10_000).default(500),
        /** How long a session waits to hear that its running turn ended before it checks on it. */
        turnCheckMs: z.number().int().min(5_000).max(3_600_000).default(60_000),
      })
      .strict()
      .refine((s) => s.summarizationThreshold <= s.maxTokenCount, {
        message: 'summarizationThreshold must not exceed maxTokenCount',
        path: ['summarizationThreshold'],
      })
      .default({
        maxTokenCount: 8_000,
        summarizationThreshold: 6_000,
        retainNewestMessages: 10,
        maxQueuedTurns: 16,
        transcriptLimit: 200,
        maxTurnsPerRun: 500,
        turnCheckMs: 60_000,
      }),
    /** Tokens per day (UTC) a user or a tenant may use; a new turn past either is refused with 429. */
    budgets: z
      .object({
        tokensPerUserPerDay: z.number().int().positive().optional(),
        tokensPerTenantPerDay: z.number().int().positive().optional(),
      })
      .strict()
      .default({}),
    /** Models the worker can ask, by name, each with its provider (src/config/models.ts); LLM_MODEL may name one. */
    models: ModelsSchema.default({}),
    /**
     * The model per caller role, by its name in `models` (docs/decisions/0042); roles not listed get the
     * worker's default model (LLM_MODEL). The API puts the choice in each new turn's input.
     */
    modelByRole: z.record(z.string().min(1), z.string().min(1)).default({}),
    /**
     * Prices per model (its model id: LLM_MODEL or a `models` entry's `model`; `provider:model` for one provider's, which wins: src/usage/prices.ts),
     * per million tokens, for the cost in GET /v1/admin/usage and dmh_llm_cost_total. Sampling
     * tokens are priced as completion tokens (an upper bound: the endpoint reports them as one sum).
     */
    prices: z
      .record(
        z.string().min(1),
        z
          .object({
            promptPerMillion: z.number().nonnegative(),
            completionPerMillion: z.number().nonnegative(),
            currency: z.string().regex(/^[A-Z]{3}$/, 'must be an ISO 4217 code such as USD'),
          })
          .strict(),
      )
      .default({}),
  })
  .strict()
  .superRefine((host, ctx) => {
    for (const [role, name] of Object.entries(host.modelByRole)) {
      if (host.models[name]) continue;
      const known = Object.keys(host.models);
      ctx.addIssue({
        code: 'custom',
        path: ['modelByRole', role],
        message: `names no model in models ("${name}"; ${known.length ? `configured: ${known.join(', ')}` : 'none configured'})`,
      });
    }
  });
export type HostConfig = z.infer<typeof HostConfigSchema>;
