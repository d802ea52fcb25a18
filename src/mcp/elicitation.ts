/**
 * Elicitation as durable human input, the worker's half. A server's `elicitation/create` during a
 * tool call is answered in one of three ways:
 *
 *   1. a recorded answer (the call was issued again after the user answered): handed back in order,
 *      each to the request it answered (matched by its mode, message and URL);
 *   2. held (issue 22 §2): the activity tells its turn, which asks the user, and keeps the request open
 *      while it waits for the answer, within the call's own timeouts; the answer goes to the server in
 *      the same call;
 *   3. otherwise (no hold, or it ran out): remember what was asked, abort the tool call (the server
 *      gets `notifications/cancelled`) and answer `cancel`; the activity then fails with
 *      `McpInputRequired` and the turn waits for the user and issues the call again (decision 0011).
 *
 * Three kinds of question take that path: a form (`requestedSchema`), a URL the user should open (URL
 * mode, asked by request or by a tools/call error -32042), and, when the policy wants it, the user's
 * leave for a server's sampling request (src/mcp/sampling.ts; never held).
 *
 * An answer never lives only in the worker: it is in the workflow's history, so a restarted worker
 * re-issues the call with it.
 */
import type { ElicitRequest, ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import { NO_CONTENT_SCHEMA, sameQuestion, type ElicitationAnswer, type InputAsked } from '../shared/user-input';
import type { ElicitationRequest } from './server-requests';
import type { CallElicitation } from './user-token';

/** Waits for the user's answer to `question` while the request stays open; undefined when none came in time. */
export type HoldQuestion = (question: InputAsked, matches: (answer: ElicitationAnswer) => boolean) => Promise<ElicitationAnswer | undefined>;

/** One tool call's elicitation state (lives in the caller context of that call). */
export class ElicitationSession implements CallElicitation {
  private readonly abort = new AbortController();
  private readonly answers: ElicitationAnswer[];
  /** Set when the server asked something no recorded answer covers. */
  asked?: InputAsked;

  constructor(answers: readonly ElicitationAnswer[] = [], private readonly hold?: HoldQuestion) {
    this.answers = [...answers];
  }

  /** Aborts the tool call when the user has to be asked. */
  get signal(): AbortSignal {
    return this.abort.signal;
  }

  async answer(params: ElicitRequest['params']): Promise<ElicitResult> {
    if (params.mode === 'url') {
      const action = await this.askHeld({ mode: 'url', message: params.message, url: params.url, requestedSchema: NO_CONTENT_SCHEMA });
      return { action: action?.action ?? 'cancel' };
    }
    const schema = 'requestedSchema' in params ? params.requestedSchema : undefined;
    if (!schema) return { action: 'decline' };
    const recorded = await this.askHeld({ message: params.message, requestedSchema: schema as Record<string, unknown> });
    if (!recorded) return { action: 'cancel' };
    if (recorded.action !== 'accept' || !recorded.content) return { action: recorded.action };
    // The worker declares `applyDefaults`: fields the answer leaves out get the form's defaults, on both
    // revisions (the 1.x client fills them only for a 2025-11-25 server's request; input_required has no SDK step).
    return { action: 'accept', content: withDefaults(schema, recorded.content) };
  }

  /** A recorded answer, else the user's while the request is held, else ask() (abort and re-issue). */
  private async askHeld(question: InputAsked): Promise<ElicitationAnswer | undefined> {
    const next = this.answers[0];
    if ((!next || !sameQuestion(next, question)) && this.hold && !this.asked) {
      const held = await this.hold(question, (a) => sameQuestion(a, question));
      if (held) return held;
    }
    return this.ask(question);
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

type FormContent = NonNullable<ElicitationAnswer['content']>;

/** `content` with each top-level field it lacks that the form gives a default for. */
function withDefaults(schema: { properties?: Record<string, unknown> }, content: FormContent): FormContent {
  const filled: FormContent = { ...content };
  for (const [name, property] of Object.entries(schema.properties ?? {})) {
    const fallback = (property as { default?: unknown }).default;
    if (filled[name] === undefined && fallback !== undefined) filled[name] = fallback as FormContent[string];
  }
  return filled;
}

/**
 * The worker's elicitation handler for the pool: answers from the calling tool call's session, and
 * declines requests that arrive outside any tool call (a listing, a stray request).
 */
export function elicitFromCaller(request: ElicitationRequest): Promise<ElicitResult> {
  const session = request.caller?.elicitation;
  return session ? session.answer(request.params) : Promise.resolve({ action: 'decline' });
}
