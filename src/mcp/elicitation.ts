/**
 * Elicitation as durable human input, the worker's half. A server's `elicitation/create` during a
 * tool call cannot be answered inside the activity (the user may take minutes, the worker may die), so
 * the call is abandoned and re-issued later with the answer:
 *
 *   1. no answer recorded for this request: remember what was asked, abort the tool call (the server
 *      gets `notifications/cancelled`) and answer `cancel`; the activity then fails with
 *      `McpInputRequired` and the turn waits for the user (src/workflows/inputs.ts);
 *   2. on the re-issued call (same idempotency key), the recorded answers are handed back in order,
 *      each to the request it answered (matched by its mode, message and URL).
 *
 * Three kinds of question take that path: a form (`requestedSchema`), a URL the user should open (URL
 * mode, asked by request or by a tools/call error -32042), and, when the policy wants it, the user's
 * leave for a server's sampling request (src/mcp/sampling.ts).
 *
 * An answer never lives only in the worker: it is in the workflow's history, so a restarted worker
 * re-issues the call with it.
 */
import type { ElicitRequest, ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import { NO_CONTENT_SCHEMA, type ElicitationAnswer, type InputAsked } from '../shared/turn';
import type { ElicitationRequest } from './server-requests';
import type { CallElicitation } from './user-token';

/** One tool call's elicitation state (lives in the caller context of that call). */
export class ElicitationSession implements CallElicitation {
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
    if (params.mode === 'url') {
      const action = this.ask({ mode: 'url', message: params.message, url: params.url, requestedSchema: NO_CONTENT_SCHEMA });
      return { action: action?.action ?? 'cancel' };
    }
    const schema = 'requestedSchema' in params ? params.requestedSchema : undefined;
    if (!schema) return { action: 'decline' };
    const recorded = this.ask({ message: params.message, requestedSchema: schema as Record<string, unknown> });
    if (!recorded) return { action: 'cancel' };
    return { action: recorded.action, ...(recorded.action === 'accept' && recorded.content ? { content: recorded.content } : {}) };
  }

  /**
   * The user's recorded answer to `question` (the next one in order), or undefined after asking for it:
   * the question is remembered and the call aborted, so the turn asks the user and issues it again.
   */
  ask(question: InputAsked): ElicitationAnswer | undefined {
    const next = this.answers[0];
    if (next && sameQuestion(next, question)) {
      this.answers.shift();
      return next;
    }
    this.asked ??= question;
    this.abort.abort(new Error('the server asked the user for input'));
    return undefined;
  }
}

function sameQuestion(answer: ElicitationAnswer, question: InputAsked): boolean {
  return answer.message === question.message && (answer.mode ?? 'form') === (question.mode ?? 'form') && answer.url === question.url;
}

/**
 * The worker's elicitation handler for the pool: answers from the calling tool call's session, and
 * declines requests that arrive outside any tool call (a listing, a stray request).
 */
export function elicitFromCaller(request: ElicitationRequest): Promise<ElicitResult> {
  const session = request.caller?.elicitation;
  return Promise.resolve(session ? session.answer(request.params) : { action: 'decline' });
}
