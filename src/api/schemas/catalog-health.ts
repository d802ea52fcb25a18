/** The tool catalog, the MCP servers' states and the host's health. */
import { z } from 'zod';
import { CIRCUIT_STATES, SERVER_STATES, SERVER_TRANSPORTS } from '../../shared/tool-types';

export const ServerStatusSchema = z.object({
  server: z.string(),
  transport: z.enum(SERVER_TRANSPORTS),
  state: z.enum(SERVER_STATES),
  toolCount: z.number().int().nonnegative(),
  error: z.string().optional().describe('Why the server is unavailable; never includes secrets.'),
  authorizationUrl: z
    .string()
    .optional()
    .describe("An OAuth-protected server whose tools cannot be listed yet: open this to authorize the host's listing (users authorize their own calls on first use)."),
  circuit: z
    .object({
      state: z.enum(CIRCUIT_STATES),
      consecutiveFailures: z.number().int().nonnegative(),
      retryAt: z.string().optional(),
    })
    .optional()
    .describe("The worker's circuit breaker for this server: `open` means calls are refused until `retryAt`."),
});

export const CatalogSchema = z.object({
  tools: z.array(
    z.object({
      name: z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/).describe('The name the LLM sees: `server__tool`, stable across restarts.'),
      server: z.string(),
      tool: z.string(),
      description: z.string().optional(),
      inputSchema: z.record(z.string(), z.unknown()),
      annotations: z
        .object({
          title: z.string(),
          readOnlyHint: z.boolean(),
          destructiveHint: z.boolean(),
          idempotentHint: z.boolean(),
          openWorldHint: z.boolean(),
        })
        .partial()
        .optional()
        .describe("The server's hints, as it declared them (not checked: a server may say read-only and not be)."),
      needsApproval: z.boolean().describe("The policy's `approval.tools` names it: each of the caller's calls waits for a person's decision."),
    }),
  ),
  servers: z.array(ServerStatusSchema),
});
export const ServersList = z.object({ servers: z.array(ServerStatusSchema) });

export const Health = z.object({
  status: z.enum(['ok', 'degraded', 'down']),
  temporal: z.object({ ok: z.boolean(), error: z.string().optional() }),
  mcp: z
    .object({ ok: z.boolean(), servers: z.array(ServerStatusSchema), error: z.string().optional() })
    .describe("Every MCP server over all workers' reports: `unavailable` if any reporting worker cannot use it."),
  workers: z
    .array(
      z.object({
        worker: z.string().describe("The worker's Temporal identity."),
        reportedAt: z.string(),
        servers: z.array(ServerStatusSchema),
        phase: z.enum(['connecting', 'ready']).optional().describe('`connecting`: still opening its MCP servers (`servers` is empty, `detail` says what it does).'),
        detail: z.string().optional(),
      }),
    )
    .describe('Each worker that reported in its last three intervals, with its own view of the servers.'),
});

const ReadinessCheck = z.object({ ok: z.boolean(), detail: z.string().optional() });
export const Readiness = z.object({
  status: z.enum(['ready', 'not_ready']),
  checks: z.object({
    temporal: ReadinessCheck.describe('The Temporal frontend answers; one failed call is tolerated (`detail` says so), failures for 5 s are not.'),
    bus: ReadinessCheck.optional().describe('With POSTGRES_URL: this replica LISTENs for live text (down for more than 1 s: not ready).'),
    workers: ReadinessCheck.extend({ ready: z.number().int(), connecting: z.number().int() }).describe(
      'Workers that reported within their interval: `ready` ones have connected their MCP servers; at least one is needed.',
    ),
  }),
  pending: z.array(z.string()).describe('What is still missing, one sentence per check; empty when ready.'),
  mcp: z
    .object({ ok: z.boolean(), servers: z.array(ServerStatusSchema), error: z.string().optional() })
    .describe("The MCP servers over all workers' reports: detail only, never a reason to be not ready."),
});
export const Liveness = z.object({
  status: z.literal('live'),
  uptimeSeconds: z.number().int(),
  eventLoopDelayMs: z.number().int().describe('The longest event-loop delay since the previous ask.'),
});
