/**
 * The host's MCP server, built per request for one verified caller (the SDK's v2 entry calls the
 * factory for every HTTP request; nothing is kept between them, so any replica answers any call).
 * Tools: `chat` (./chat.ts), the turn's and the approvals' tools, the sessions' tools. Resources: the
 * caller's transcripts and turn records. Every one of them goes through the turn service, which checks
 * ownership and tenant exactly as for /v1: a caller sees and does only what its role and tenant allow.
 */
import { McpServer, type ServerContext } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { SessionId, ToolCallId, TurnId } from '../contract';
import { registerResources } from './resources';
import { chatInput, chatResult, createChat, idempotencyKeyOf } from './chat';
import { asToolResult, jsonResult, toolError } from './results';
import type { HostMcpDeps } from './deps';

export type { HostMcpDeps } from './deps';


const SERVER_INFO = { name: 'durable-mcp-host', title: 'Durable MCP host', version: '0.1.0' };

export function createHostMcpServer(deps: HostMcpDeps): McpServer {
  const { service, user } = deps;
  const server = new McpServer(SERVER_INFO, {
    // `tasks`: chat runs as a task on the 2025-11-25 wire (./tasks.ts answers the task methods).
    // `resources.subscribe`: in a 2025 session, to a running turn's record (./resources.ts).
    capabilities: {
      tools: {},
      resources: deps.era === 'legacy' ? { subscribe: true } : {},
      logging: {},
      tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } },
    },
    instructions:
      'Each chat call is a durable turn of the host: it survives crashes of the host, tool calls run once, and calls that need a person wait for approval. Use list_approvals and decide_approval for calls waiting for a decision.',
  });
  const chat = createChat(deps);
  // Whether the client can answer a question: on 2026-07-28 it says so in each request's envelope; in a
  // 2025 session it declared elicitation at initialize (a stateless 2025 request has no session to ask on).
  const canAsk = (ctx: ServerContext): boolean => {
    if (deps.era === 'modern') {
      const caps = (ctx.mcpReq.envelope as Record<string, unknown> | undefined)?.['io.modelcontextprotocol/clientCapabilities'] as { elicitation?: unknown } | undefined;
      return caps?.elicitation !== undefined;
    }
    return ctx.sessionId !== undefined && server.server.getClientCapabilities()?.elicitation !== undefined;
  };
  const fault = (err: unknown) => deps.logger?.error({ err }, 'mcp: tool failed');
  const run = <T>(body: () => Promise<T>) => asToolResult(body, fault);

  const chatTool = server.registerTool(
    'chat',
    {
      title: 'Chat with the host',
      description:
        'Send a message to one of your sessions (a new one when sessionId is left out) and get the answer with the tool calls it made. The turn runs durably; a call that needs approval is asked of you when your client can answer, else the result lists it as pending.',
      inputSchema: chatInput(deps.maxMessageChars),
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
    },
    async (args, ctx: ServerContext) =>
      run(async () => {
        const key = idempotencyKeyOf(ctx.mcpReq._meta as Record<string, unknown> | undefined);
        if ('error' in key) return toolError(key.error);
        // In a 2025 session the token of this request, not the one that opened the session.
        const token = ctx.http?.authInfo?.token ?? deps.token;
        return await chat(user, token, canAsk(ctx), { message: args.message, sessionId: args.sessionId, idempotencyKey: key.key }, ctx);
      }),
  );

  // A long turn can run as a task (the 2025-11-25 wire, ./tasks.ts); a plain call waits for the answer.
  // registerTool takes no `execution`: set on the registered tool, which tools/list reads.
  chatTool.execution = { taskSupport: 'optional' };

  server.registerTool(
    'get_turn',
    {
      title: 'Read a turn',
      description: 'The state of one of your turns: status, answer, tool calls, pending approvals.',
      inputSchema: z.object({ turnId: TurnId }),
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    async ({ turnId }) => run(async () => chatResult(await service.view(user, turnId))),
  );

  server.registerTool(
    'cancel_turn',
    {
      title: 'Cancel a turn',
      description: 'Stops one of your running turns at its next step.',
      inputSchema: z.object({ turnId: TurnId }),
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    async ({ turnId }) =>
      run(async () => {
        await service.cancel(user, turnId);
        return jsonResult({ turnId, cancelled: true });
      }),
  );

  server.registerTool(
    'list_approvals',
    {
      title: 'Pending approvals',
      description: 'Tool calls waiting for a decision that you may take: your own turns, and your tenant’s if your role approves.',
      inputSchema: z.object({}),
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    async () => run(async () => jsonResult(await service.approvals(user))),
  );

  server.registerTool(
    'decide_approval',
    {
      title: 'Approve or deny a tool call',
      description: 'Decides a pending tool call (see list_approvals). The decision is audited under your name.',
      inputSchema: z.object({ turnId: TurnId, toolCallId: ToolCallId, approve: z.boolean() }),
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
    },
    async ({ turnId, toolCallId, approve }) => run(async () => jsonResult(await service.decideApproval(user, turnId, toolCallId, approve))),
  );

  server.registerTool(
    'list_sessions',
    {
      title: 'Your sessions',
      description: 'Your conversations with the host, newest first.',
      inputSchema: z.object({}),
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    async () => run(async () => jsonResult({ sessions: (await service.sessions(user, 100)).sessions })),
  );

  server.registerTool(
    'read_session',
    {
      title: 'Read a transcript',
      description: 'The messages of one of your sessions, oldest first, and what it is doing now.',
      inputSchema: z.object({ sessionId: SessionId }),
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    async ({ sessionId }) => run(async () => jsonResult(await service.session(user, sessionId))),
  );

  registerResources(server, deps);
  return server;
}
