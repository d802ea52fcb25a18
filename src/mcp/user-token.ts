import { AsyncLocalStorage } from 'node:async_hooks';
import type { CreateMessageRequest, CreateMessageResult, ElicitRequest, ElicitResult } from '@modelcontextprotocol/sdk/types.js';

/**
 * How a tool call answers its server's questions (src/mcp/elicitation.ts's ElicitationSession). Named
 * here by what the context needs of it, so this file depends on no handler.
 */
export interface CallElicitation {
  answer(params: ElicitRequest['params']): Promise<ElicitResult>;
}

/** What a tool call's server may ask of the host's model (src/mcp/sampling.ts's SamplingSession). */
export interface CallSampling {
  sample(params: CreateMessageRequest['params'], signal: AbortSignal): Promise<CreateMessageResult>;
}

/**
 * Who the MCP request being made right now is for. Connections are pooled and shared by all users,
 * so per-user credentials cannot live in a transport's fixed headers:
 * - `token`: the caller's own bearer token, sent only to servers with `forwardUserToken: true`;
 * - `principal`: the user id, which picks the user's own connection and OAuth tokens for servers
 *   with `auth: { type: "oauth" }` (src/mcp/pool.ts).
 */
export interface CallerContext {
  token?: string;
  principal?: string;
  /** The turn the request is for: an authorization it has to wait for names it (src/mcp/oauth). */
  turnId?: string;
  /** The tool call's answers to server questions, and where a new question is noted (src/mcp/elicitation.ts). */
  elicitation?: CallElicitation;
  /** What the tool call's server may ask of the host's model (src/mcp/sampling.ts). */
  sampling?: CallSampling;
}

export const callerContext = new AsyncLocalStorage<CallerContext>();

export function withCaller<T>(caller: CallerContext, fn: () => Promise<T>): Promise<T> {
  return caller.token || caller.principal || caller.turnId ? callerContext.run(caller, fn) : fn();
}

/** A fetch that adds `Authorization: Bearer <caller's token>` when a call carries one. */
export function forwardingFetch(base: typeof fetch = fetch): typeof fetch {
  return (input, init) => {
    const token = callerContext.getStore()?.token;
    if (!token) return base(input, init);
    const headers = new Headers(init?.headers);
    headers.set('authorization', `Bearer ${token}`);
    return base(input, { ...init, headers });
  };
}
