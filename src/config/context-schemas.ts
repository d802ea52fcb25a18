/**
 * The host config's schemas of what a turn reads and offers (./index.ts uses them): context specs, intent
 * rules (src/core/intents.ts), tool search (src/core/tool-search.ts) and adaptive context (src/core/adaptive-context.ts).
 */
import { z } from 'zod';
import { DEFAULT_ADAPTIVE_CONTEXT } from '../core/adaptive-context';
import { INTENT_FLAGS, type IntentRule } from '../core/intents';
import { DEFAULT_TOOL_SEARCH } from '../core/tool-search';
import type { ContextSpec } from '../shared/turn';

/** What the conversation asks to be gathered as context before the first LLM call. */
export const ContextSpecSchema = z.object({
  resources: z.array(z.object({ server: z.string(), uri: z.string() })).default([]),
  prompts: z
    .array(z.object({ server: z.string(), name: z.string(), arguments: z.record(z.string(), z.string()).optional() }))
    .default([]),
}) satisfies z.ZodType<ContextSpec, unknown>;

export const IntentSchema = ContextSpecSchema.extend({
  name: z.string().regex(/^[a-zA-Z0-9_.-]{1,64}$/, 'a name of 1-64 characters from [a-zA-Z0-9_.-]'),
  match: z.string().min(1).max(1_000),
  flags: z.string().regex(INTENT_FLAGS, 'flags from i, m, s, u').default('i'),
})
  .strict()
  .superRefine((rule, ctx) => {
    try {
      new RegExp(rule.match, rule.flags);
    } catch (err) {
      ctx.addIssue({ code: 'custom', path: ['match'], message: `not a regular expression: ${(err as Error).message}` });
    }
  }) satisfies z.ZodType<IntentRule, unknown>;

/**
 * Catalogs too large to offer whole (docs/decisions/0032): past `threshold` visible tools the model gets the
 * host's search tool and `offered` tools (the caller's most used), and each search returns up to `results`.
 */
export const ToolSearchSchema = z
  .object({
    threshold: z.number().int().min(1).max(10_000).default(DEFAULT_TOOL_SEARCH.threshold),
    offered: z.number().int().min(0).max(1_000).default(DEFAULT_TOOL_SEARCH.offered),
    results: z.number().int().min(1).max(100).default(DEFAULT_TOOL_SEARCH.results),
  })
  .strict()
  .refine((t) => t.offered <= t.threshold, { message: 'offered must not exceed threshold', path: ['offered'] });

/**
 * Adaptive context (docs/decisions/0036): when `enabled`, the model gets the host tools host__list_resources and
 * host__read_resource over the resources the caller's role may read (the policy's `resources`); a listing shows
 * at most `maxListed` resources and a read returns at most `maxResourceChars` characters (and never more than
 * maxToolResultChars).
 */
export const AdaptiveContextSchema = z
  .object({
    enabled: z.boolean().default(DEFAULT_ADAPTIVE_CONTEXT.enabled),
    maxListed: z.number().int().min(1).max(1_000).default(DEFAULT_ADAPTIVE_CONTEXT.maxListed),
    maxResourceChars: z.number().int().min(100).max(1_000_000).default(DEFAULT_ADAPTIVE_CONTEXT.maxResourceChars),
  })
  .strict();
