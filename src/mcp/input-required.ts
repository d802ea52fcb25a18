/**
 * A 2026-07-28 server asks for input inside the answer to a call (`input_required`: elicitation,
 * sampling, roots) instead of sending requests of its own. The v2 client runs in manual mode, so the
 * pool answers them here, with the same handlers as a 2025 server's requests (server-requests.ts):
 *
 * - the question is the call's for sure (it came in the call's own answer), so the handler hears the
 *   caller the call runs for; its `ElicitationSession` hands back a recorded answer, or notes the
 *   question and aborts the call (decision 0011): the activity then ends with `McpInputRequired` and
 *   the turn asks the user durably, exactly as for a 2025 server;
 * - with every answer at hand, the call is sent again with `inputResponses` and the server's opaque
 *   `requestState`, echoed byte for byte (decision 0024).
 */
import type { CreateMessageRequest, ElicitRequest, Root } from '@modelcontextprotocol/sdk/types.js';
import type { ServerRequestOptions } from './server-requests';
import type { CallerContext } from './user-token';

/** The rounds one call may take before the server is thought to be looping. */
export const MAX_INPUT_ROUNDS = 8;

/** What an `input_required` answer asked for (the result's own shape, not trusted further than this). */
export interface InputRequired {
  inputRequests?: Record<string, unknown>;
  requestState?: string;
}

/** What the call is sent again with. */
export type InputRetry = {
  inputResponses: Record<string, unknown>;
  requestState?: string;
};

export interface InputContext {
  serverRequests: ServerRequestOptions;
  roots(): Root[];
  /** The call the answer came to (its async context when it was made). */
  caller?: CallerContext;
  signal?: AbortSignal;
}

export class InputRefused extends Error {
  override readonly name = 'InputRefused';
}

/** The answer is a request for input rather than a result (the v2 client's neutral shape). */
export function isInputRequired(value: unknown): value is InputRequired & { resultType: 'input_required' } {
  return typeof value === 'object' && value !== null && (value as { resultType?: unknown }).resultType === 'input_required';
}

/**
 * Answers every request of one `input_required` round. Throws the call's abort when a handler stopped
 * the call to ask the user (the caller's signal says so), and `InputRefused` for a request no handler takes.
 */
export async function answerInputRequests(asked: InputRequired, ctx: InputContext): Promise<InputRetry> {
  const { serverRequests: opts } = ctx;
  const signal = ctx.signal ?? new AbortController().signal;
  const caller = ctx.caller ? { caller: ctx.caller } : {};
  const inputResponses: Record<string, unknown> = {};
  for (const [key, request] of Object.entries(asked.inputRequests ?? {})) {
    const { method, params } = (request ?? {}) as { method?: unknown; params?: unknown };
    if (method === 'roots/list') {
      inputResponses[key] = { roots: ctx.roots() };
    } else if (method === 'elicitation/create') {
      inputResponses[key] = opts.elicit
        ? await opts.elicit({ server: opts.server, ...(opts.principal ? { principal: opts.principal } : {}), params: params as ElicitRequest['params'], signal, ...caller })
        : { action: 'decline' };
    } else if (method === 'sampling/createMessage') {
      if (!opts.sample) throw new InputRefused(`${opts.server} asked for the host's model, which this host does not offer`);
      const sample = opts.sample;
      inputResponses[key] = await sample({ server: opts.server, params: params as CreateMessageRequest['params'], signal, ...caller }).catch((error: unknown) => {
        // A refusal (policy, budget) ends the call as the server's refusal would; an abort is the user being asked.
        if (signal.aborted) throw signal.reason instanceof Error ? signal.reason : new Error('the call was aborted');
        throw new InputRefused(error instanceof Error ? error.message : 'sampling was refused');
      });
    } else {
      throw new InputRefused(`${opts.server} asked for input this host does not know (${typeof method === 'string' ? method : 'no method'})`);
    }
    // The handler stopped the call to ask the user: its question is noted, nothing is sent again.
    if (signal.aborted) throw signal.reason instanceof Error ? signal.reason : new Error('the call was aborted');
  }
  return { inputResponses, ...(asked.requestState !== undefined ? { requestState: asked.requestState } : {}) };
}
