import { ApplicationFailure, condition, deprecatePatch, patched, setHandler } from '@temporalio/workflow';
import { innermostCause } from './activity-failures';
import type { PlannedCall } from '../core/host-loop';
import type { TurnRecord } from '../core/turn-record';
import type { AuditRequest } from '../shared/audit';
import { Failure } from '../shared/failures';
import type { Policy } from '../shared/policy';
import { INPUT_WAIT_MS, sameQuestion, type ElicitationAnswer, type InputAsked, type InputMode } from '../shared/user-input';
import type { UserContext } from '../shared/user';
import { inputAnswerQuery, inputAskedSignal, inputTakenUpdate, provideInputUpdate } from './definitions';

type AuditInput = (entry: Omit<AuditRequest, 'actor' | 'workflowId' | 'runId'>) => Promise<void>;

/**
 * Elicitation as durable human input. A server asks the user something during a tool call:
 *
 * - held (issue 22 §2): the call's activity keeps the server's request open and says so with
 *   `inputAsked`; the turn shows the question (`input_required`), the owner answers through the
 *   `provideInput` update, and the activity, reading `inputAnswer`, hands the answer to the server in
 *   the same call;
 * - re-issued (decision 0011), when no hold is possible or it ran out (the call's own timeout, a worker
 *   restart): the call fails with `McpInputRequired`, the turn waits for the answer (a durable timer and
 *   the update) and issues the call again with the answers so far (src/mcp/elicitation.ts hands them
 *   back to the server's repeated questions).
 *
 * A question is shown and answered once, whichever way it goes. Policy decides which servers may ask;
 * every question and answer is audited.
 */
export function handleInputs(record: TurnRecord, owner: UserContext | undefined, policy: Policy | undefined, audit: AuditInput) {
  type Call = Extract<PlannedCall, { kind: 'call' }>;
  type Question = Pick<ElicitationAnswer, 'message' | 'mode' | 'url'>;
  /** The question waiting on each tool call; its answer once given, `settled` once said and audited. */
  type Entry = Question & { answer?: ElicitationAnswer; settled?: boolean; held?: boolean; taken?: boolean };
  const waiting = new Map<string, Entry>();
  /** Calls running now, which may ask while their activity holds the server's request. */
  const running = new Map<string, { p: Call; step: number }>();
  /** Answers given while a call held its question, kept for a re-issue of that call. */
  const heldAnswers = new Map<string, ElicitationAnswer[]>();
  /** Answers being said and audited (from the update), awaited by the call they belong to. */
  const settling = new Map<string, Promise<ElicitationAnswer>>();
  /**
   * Questions being opened (audited before they are shown): the same question asked again meanwhile
   * (the next attempt of a call whose worker died while the first was being opened) is that one.
   */
  const opening = new Map<string, Question>();

  const questionOf = (asked: InputAsked): Question => ({ message: asked.message, ...(asked.mode ? { mode: asked.mode } : {}), ...(asked.url !== undefined ? { url: asked.url } : {}) });

  /** Audits and shows the question; a server the policy does not let ask gets `decline` at once. */
  async function open(p: Call, step: number, asked: InputAsked): Promise<ElicitationAnswer | undefined> {
    const server = p.tool.server;
    // The sampling policy already chose who may ask for the model; the question is only the user's leave.
    const allowed = asked.mode === 'sampling' || mayElicit(policy, server, owner);
    const question = questionOf(asked);
    await audit({ kind: 'elicitation_requested', server, tool: p.tool.tool, toolCallId: p.call.id, detail: `${asked.mode && asked.mode !== 'form' ? `${asked.mode}: ` : ''}${asked.message}`.slice(0, 200), ...(allowed ? {} : { outcome: 'denied' }) });
    if (!allowed) return { ...question, action: 'decline' };
    waiting.set(p.call.id, question);
    record.emit('input_required', { toolCallId: p.call.id, name: p.tool.name, server, ...question, requestedSchema: asked.requestedSchema, step, expiresInMs: INPUT_WAIT_MS });
    return undefined;
  }

  /** Says the answer (or that nobody answered in time) and audits it, once per question. */
  async function settle(p: Call, entry: Entry | undefined, inTime: boolean): Promise<ElicitationAnswer> {
    const { answer: given, settled, held: _held, taken: _taken, ...question } = entry ?? { message: '' };
    const answer = given ?? { ...question, action: 'cancel' as const };
    if (settled) return answer;
    if (entry) entry.settled = true;
    const server = p.tool.server;
    record.emit('input_provided', { toolCallId: p.call.id, server, action: answer.action, ...(inTime ? {} : { timedOut: true }) });
    await audit({
      kind: 'elicitation_answered',
      server,
      tool: p.tool.tool,
      toolCallId: p.call.id,
      outcome: answer.action === 'accept' ? 'ok' : answer.action === 'decline' ? 'declined' : 'cancelled',
      ...(answer.content ? { args: answer.content } : {}),
      ...(inTime ? {} : { detail: 'timed out' }),
    });
    return answer;
  }

  setHandler(
    provideInputUpdate,
    (input) => {
      const entry = waiting.get(input.toolCallId);
      if (entry) {
        const { answer: _none, settled: _not, held: _held, taken: _taken, ...question } = entry;
        entry.answer = { ...question, action: input.action, ...(input.content ? { content: input.content } : {}) };
        // A held call reads the answer now: said now (the event at once, the audit awaited by the call), not when the call ends.
        // Turns recorded before that (no marker) are folded (decision 0017): the marker stays, deprecated.
        const call = running.get(input.toolCallId);
        if (call) {
          deprecatePatch('elicitation-held');
          settling.set(input.toolCallId, settle(call.p, entry, true));
        }
      }
      return { toolCallId: input.toolCallId, action: input.action };
    },
    {
      validator: (input) => {
        const entry = waiting.get(input.toolCallId);
        if (!entry || entry.answer) throw ApplicationFailure.create({ type: Failure.InputNotPending, message: 'no question waits for an answer on that tool call', nonRetryable: true });
        if (!owner || input.by.id !== owner.id || input.by.tenant !== owner.tenant) {
          throw ApplicationFailure.create({ type: Failure.InputForbidden, message: 'only the user who started the turn answers its questions', nonRetryable: true });
        }
      },
    },
  );

  // A running call's activity holds the server's question: show it (once, however often its attempts ask).
  setHandler(inputAskedSignal, async ({ toolCallId, question: asked }) => {
    const call = running.get(toolCallId);
    if (!call) return;
    const question = questionOf(asked);
    // Asked again while being opened: shown once (turns recorded before this opened it twice).
    const pending = opening.get(toolCallId);
    if (pending && sameQuestion(pending, question) && patched('input-asked-once')) return;
    const entry = waiting.get(toolCallId);
    if (entry && sameQuestion(entry, question)) return;
    // The call's question before was answered and the server asks the next one: keep that answer.
    if (entry?.answer) heldAnswers.set(toolCallId, [...(heldAnswers.get(toolCallId) ?? []), entry.answer]);
    waiting.delete(toolCallId);
    opening.set(toolCallId, question);
    let refused: ElicitationAnswer | undefined;
    try {
      refused = await open(call.p, call.step, asked);
    } finally {
      if (opening.get(toolCallId) === question) opening.delete(toolCallId);
    }
    const opened = waiting.get(toolCallId);
    if (refused) waiting.set(toolCallId, { ...question, answer: refused, settled: true, held: true });
    else if (opened) opened.held = true;
  });
  setHandler(inputAnswerQuery, ({ toolCallId }) => {
    const entry = waiting.get(toolCallId);
    return entry?.held ? { answer: entry.answer ?? null, taken: entry.taken === true } : null;
  });
  setHandler(
    inputTakenUpdate,
    ({ toolCallId }) => {
      const entry = waiting.get(toolCallId) as Entry & { answer: ElicitationAnswer };
      entry.taken = true;
      return entry.answer;
    },
    {
      validator: ({ toolCallId }) => {
        const entry = waiting.get(toolCallId);
        if (!entry?.held || !entry.answer) throw ApplicationFailure.create({ type: Failure.InputNotPending, message: 'no answer waits on that tool call', nonRetryable: true });
      },
    },
  );

  return {
    /** A call of `step` starts: its activity may hold a question (the handlers above know the call). */
    running(p: Call, step: number): void {
      running.set(p.call.id, { p, step });
    },

    /** The call ended: a question it held and nobody answered is closed as `cancel` (the call no longer waits); a re-issue's question left by a cancellation is dropped as before. */
    async ended(p: Call): Promise<void> {
      running.delete(p.call.id);
      heldAnswers.delete(p.call.id);
      await settling.get(p.call.id);
      settling.delete(p.call.id);
      const entry = waiting.get(p.call.id);
      waiting.delete(p.call.id);
      if (entry?.held) await settle(p, entry, true);
    },

    /** Answers the owner gave while the call held its questions, in order (for the call issued again). */
    takeHeld(p: Call): ElicitationAnswer[] {
      const answers = heldAnswers.get(p.call.id) ?? [];
      heldAnswers.delete(p.call.id);
      return answers;
    },

    /** The owner's answer to what the server asked (`cancel` when nobody answered in time). */
    async ask(p: Call, step: number, asked: InputAsked): Promise<ElicitationAnswer> {
      // Being opened for the call's hold: the same question, shown once it is (turns before this opened it again).
      const pending = opening.get(p.call.id);
      if (pending && sameQuestion(pending, questionOf(asked)) && patched('input-asked-once')) await condition(() => !opening.has(p.call.id));
      const held = waiting.get(p.call.id);
      // Asked already while the call held it (then its hold ran out): the same question, shown once.
      if (!held || !sameQuestion(held, questionOf(asked))) {
        waiting.delete(p.call.id);
        const refused = await open(p, step, asked);
        if (refused) return refused;
      }
      const inTime = await condition(() => waiting.get(p.call.id)?.answer !== undefined, INPUT_WAIT_MS);
      await settling.get(p.call.id);
      settling.delete(p.call.id);
      const answer = await settle(p, waiting.get(p.call.id), inTime);
      waiting.delete(p.call.id);
      return answer;
    },
  };
}

/** May `server` ask this turn's user questions? Policy `elicitation` names servers, and optionally roles. */
function mayElicit(policy: Policy | undefined, server: string, owner: UserContext | undefined): boolean {
  const rule = policy?.elicitation;
  if (!rule) return true;
  if (!rule.servers.includes('*') && !rule.servers.includes(server)) return false;
  return !rule.roles || (owner !== undefined && rule.roles.includes(owner.role));
}

const MODES: readonly string[] = ['form', 'url', 'sampling'] satisfies InputMode[];

/** What the server asked, from an `McpInputRequired` activity failure (its first detail). */
export function inputAsked(err: unknown): InputAsked | undefined {
  const current = innermostCause(err);
  if (!(current instanceof ApplicationFailure)) return undefined;
  const detail = current.details?.[0] as Partial<InputAsked> | undefined;
  if (typeof detail?.message !== 'string' || typeof detail.requestedSchema !== 'object' || detail.requestedSchema === null) return undefined;
  if (detail.mode !== undefined && !MODES.includes(detail.mode)) return undefined;
  if (detail.mode === 'url' && typeof detail.url !== 'string') return undefined;
  return {
    ...(detail.mode ? { mode: detail.mode } : {}),
    message: detail.message,
    requestedSchema: detail.requestedSchema,
    ...(detail.mode === 'url' ? { url: detail.url } : {}),
  };
}
