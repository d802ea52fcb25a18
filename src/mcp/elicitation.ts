/**
 * Elicitation as durable human input, the worker's half. A server's `elicitation/create` during a
 * tool call cannot be answered inside the activity (the user may take minutes, the worker may die), so
 * the call is abandoned and re-issued later with the answer:
 *
 *   1. no answer recorded for this request: remember what was asked, abort the tool call (the server
 *      gets `notifications/cancelled`) and answer `cancel`; the activity then fails with
 *      `McpInputRequired` and the turn waits for the user (src/workflows/inputs.ts);
 *   2. on the re-issued call (same idempotency key), the recorded answers are handed back in order,
 *      each to the request it answered (matched by its message).
 *
 * An answer never lives only in the worker: it is in the workflow's history, so a restarted worker
 * re-issues the call with it.
 */
import type { ElicitRequest, ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import type { ElicitationAnswer, InputAsked } from '../shared/turn';
import type { ElicitationRequest } from './pool';

/** One tool call's elicitation state (lives in the caller context of that call). */
export class ElicitationSession {
  private readonly abort = new AbortController();
  private readonly answers: ElicitationAnswer[];
  /** Set when the server asked something no recorded answer covers. */
  asked?: InputAsked;

  constructor(answers: readonly ElicitationAnswer[] = []) {
    this.answers = [...answers];
  }

  /** Aborts the tool call when the user has to be asked. */
  get signal(): AbortSignal {
    return this.abort.signal;
  }

  answer(params: ElicitRequest['params']): ElicitResult {
    const next = this.answers[0];
    if (next && next.message === params.message) {
      this.answers.shift();
      return { action: next.action, ...(next.action === 'accept' && next.content ? { content: next.content } : {}) };
    }
    // URL mode (the user visits a page) has no form to answer; it is declined rather than half-done.
    if (!('requestedSchema' in params) || !params.requestedSchema) return { action: 'decline' };
    this.asked ??= { message: params.message, requestedSchema: params.requestedSchema as Record<string, unknown> };
    this.abort.abort(new Error('the server asked the user for input'));
    return { action: 'cancel' };
  }
}

/**
 * The worker's elicitation handler for the pool: answers from the calling tool call's session, and
 * declines requests that arrive outside any tool call (a listing, a stray request).
 */
export function elicitFromCaller(request: ElicitationRequest): Promise<ElicitResult> {
  const session = request.caller?.elicitation;
  return Promise.resolve(session ? session.answer(request.params) : { action: 'decline' });
}
