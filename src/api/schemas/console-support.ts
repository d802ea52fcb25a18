/**
 * What a client such as the console needs beside turns: the sentences the model in use answers,
 * reconnecting an MCP server that is down, and a turn's MCP messages for debugging.
 */
import { z } from 'zod';
import { DateTime } from './common';
import { ServerStatusSchema } from './catalog-health';

export const Suggestions = z.object({
  suggestions: z
    .array(z.string())
    .describe("Messages the model in use answers, for a client to offer as examples: the demo model's (each script's `example` in its rules), none for a real model."),
});

export const ServerParams = z.object({ server: z.string().min(1).max(100).describe("The MCP server's name in the MCP config.") });
export const ServerReconnected = ServerStatusSchema;

const McpMessage = z.object({
  at: DateTime.optional().describe('When the turn recorded it (absent for an answer not received yet).'),
  server: z.string(),
  toolCallId: z.string(),
  direction: z.enum(['host_to_server', 'server_to_host']),
  message: z
    .record(z.string(), z.unknown())
    .describe(
      "The JSON-RPC message (without `id`) as the turn recorded it, redacted as in the audit log: `tools/call` and its result as the model saw it (cut to " +
        "the host's limit); `elicitation/create` and the user's action (never the answers' content).",
    ),
});

export const McpMessages = z.object({
  turnId: z.string(),
  messages: z.array(McpMessage).describe("In the turn's order: each request followed by its answer."),
});
