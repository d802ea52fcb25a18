/** GET /v1/admin/usage: token usage of the caller's tenant over a period (defaults: today, UTC). */
import { z } from 'zod';

export const UsageQuery = z
  .object({
    from: z.iso.datetime({ offset: true }).optional().describe('Start (inclusive), ISO 8601; default: 00:00 UTC today.'),
    to: z.iso.datetime({ offset: true }).optional().describe('End (exclusive), ISO 8601; default: now.'),
    groupBy: z
      .enum(['user', 'session', 'tenant'])
      .default('user')
      .describe("`session`: per session, with its owner's id (a session id is its owner's own: two users may use the same one)."),
    userId: z.string().min(1).max(256).optional().describe('Only this user (callers without `usage.read` or the super scope see only themselves).'),
  })
  .strict();
const UsageFigures = {
  turns: z.number().int().nonnegative(),
  summaries: z.number().int().nonnegative().describe("Summarizations of sessions' older messages: their tokens are in the sums, beside the turns'."),
  promptTokens: z.number().int().nonnegative(),
  completionTokens: z.number().int().nonnegative(),
  samplingTokens: z.number().int().nonnegative().describe("Tokens MCP servers' sampling requests used through the host's model."),
  totalTokens: z.number().int().nonnegative(),
};
const Cost = z.object({ amount: z.number().nonnegative(), currency: z.string() });
export const UsageReport = z.object({
  tenant: z.string(),
  from: z.string(),
  to: z.string(),
  groupBy: z.enum(['user', 'session', 'tenant']),
  rows: z.array(
    z.object({
      userId: z.string().optional(),
      sessionId: z.string().optional(),
      provider: z.string().optional().describe('The provider that served the model (`openai`, `anthropic`, `gemini`); absent for usage recorded before providers were.'),
      model: z.string(),
      ...UsageFigures,
      cost: Cost.optional().describe("From the host config's `prices` for this provider and model (`provider:model`, else the model id); absent when it has none."),
    }),
  ),
  totals: z.object({ ...UsageFigures, cost: z.array(Cost).describe('Per currency.') }),
});
