import { z } from 'zod';

/**
 * One tool as the host knows it: the name the LLM sees, where it really lives, and its schema.
 * Produced by the MCP layer (worker side), carried through workflow history, so it must stay
 * plain JSON and must never hold secrets.
 */
export const CatalogToolSchema = z.object({
  /** LLM-visible name, `server__tool` sanitized to ^[a-zA-Z0-9_-]{1,64}$ and stable across restarts. */
  name: z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/),
  server: z.string(),
  tool: z.string(),
  description: z.string().optional(),
  inputSchema: z.record(z.string(), z.unknown()),
  annotations: z
    .object({
      title: z.string().optional(),
      readOnlyHint: z.boolean().optional(),
      destructiveHint: z.boolean().optional(),
      idempotentHint: z.boolean().optional(),
      openWorldHint: z.boolean().optional(),
    })
    .partial()
    .optional(),
});
export type CatalogTool = z.infer<typeof CatalogToolSchema>;

export const ServerStateSchema = z.enum(['connected', 'unavailable', 'disabled']);
export type ServerState = z.infer<typeof ServerStateSchema>;

/** Health of one configured MCP server, as reported to /healthz, /v1/servers and the LLM. */
export const ServerStatusSchema = z.object({
  server: z.string(),
  transport: z.enum(['stdio', 'streamable-http', 'sse']),
  state: ServerStateSchema,
  toolCount: z.number().int().nonnegative(),
  /** Why the server is unavailable; never includes secrets (headers, env values). */
  error: z.string().optional(),
  /** The worker's circuit breaker for this server: `open` means calls are refused until `retryAt`. */
  circuit: z
    .object({
      state: z.enum(['closed', 'open', 'half_open']),
      consecutiveFailures: z.number().int().nonnegative(),
      retryAt: z.string().optional(),
    })
    .optional(),
});
export type ServerStatus = z.infer<typeof ServerStatusSchema>;

export const CatalogSchema = z.object({
  tools: z.array(CatalogToolSchema),
  servers: z.array(ServerStatusSchema),
});
export type Catalog = z.infer<typeof CatalogSchema>;

/**
 * The outcome of one tool call, normalized for the LLM. `isError` results are data for the model
 * (the tool said no, arguments invalid, tool unknown); they are never retried.
 */
export const ToolOutcomeSchema = z.object({
  isError: z.boolean(),
  /** Text rendering of the result content, ready to hand to the LLM as a tool message. */
  text: z.string(),
  structuredContent: z.record(z.string(), z.unknown()).optional(),
});
export type ToolOutcome = z.infer<typeof ToolOutcomeSchema>;
