import { ApplicationFailure, allHandlersFinished, condition, continueAsNew, setHandler, workflowInfo } from '@temporalio/workflow';
import { llmMessagesOf, pruneForLlm, trimTranscript } from '../core/history';
import { transcriptOf } from '../core/session-transcript';
import { Failure } from '../shared/failures';
import { sessionStateQuery, submitMessageUpdate, turnAdmissionQuery, turnEndedSignal } from './definitions';
import { sessionSummarizer } from './session-summary';
import { type Pending, turnFollower } from './session-turns';
import type { SessionCarry, SessionInput, SubmitMessageResult, TurnAdmission, TurnEnd } from '../shared/session';

/**
 * One conversation. Serializes its turns: the API registers each message here and then starts its
 * turn workflow, with the pruned history when the session is idle; a turn queued behind another gets
 * its go (and the history) when the previous one has finished. Keeps the transcript and the running
 * summary, and continues as new when Temporal suggests it, carrying only that state. (The protocol
 * before, in which the session started its turns as children, is gone: decision 0016.)
 */
export async function sessionWorkflow(input: SessionInput): Promise<void> {
  const { settings, owner } = input;
  const carry: SessionCarry = input.carry ?? {
    summarizedUpTo: 0,
    transcript: [],
    totalMessages: 0,
    turnsCompleted: 0,
    recentTurnIds: [],
    run: 1,
  };
  const queue: Pending[] = [];
  let active: Pending | undefined;
  let turnsThisRun = 0;

  /** How turns the API started ended, as they announced it (until the loop has recorded it). */
  const ended = new Map<string, TurnEnd>();
  const transcript = transcriptOf(carry, () => new Date().toISOString());
  const follow = turnFollower({ settings, transcript, ended, memoryForNextTurn });
  const maybeSummarize = sessionSummarizer(input.sessionId, carry, settings);

  setHandler(sessionStateQuery, () => ({
    sessionId: input.sessionId,
    owner,
    ...(carry.summary ? { summary: carry.summary } : {}),
    messages: carry.transcript,
    totalMessages: carry.totalMessages,
    turnsCompleted: carry.turnsCompleted,
    ...(active ? { activeTurnId: active.turnId } : {}),
    queuedTurnIds: queue.map((p) => p.turnId),
    run: carry.run,
  }));

  /** The active or a queued turn: one whose end the session still waits for. */
  const waiting = (turnId: string): boolean => active?.turnId === turnId || queue.some((p) => p.turnId === turnId);
  const known = (turnId: string): boolean => waiting(turnId) || carry.recentTurnIds.includes(turnId);

  setHandler(turnAdmissionQuery, (turnId): TurnAdmission => {
    const pending = active?.turnId === turnId ? active : queue.find((p) => p.turnId === turnId);
    if (pending?.memory) return { state: 'begin', history: pending.memory };
    if (pending) return { state: 'queued', position: positionOf(turnId) };
    return carry.recentTurnIds.includes(turnId) ? { state: 'ended' } : { state: 'unknown' };
  });

  setHandler(turnEndedSignal, (end) => {
    // Only turns this session waits for; a repeated announcement keeps the first.
    if (waiting(end.turnId) && !ended.has(end.turnId)) ended.set(end.turnId, end);
  });


  setHandler(
    submitMessageUpdate,
    async (msg): Promise<SubmitMessageResult> => {
      if (known(msg.turnId)) {
        return { turnId: msg.turnId, created: false, position: positionOf(msg.turnId), ...(waiting(msg.turnId) ? { pending: true } : {}) };
      }
      // An idle session starts the turn with its history right away (one round trip less before the
      // model is called); otherwise the turn waits for its `beginTurn`.
      const idle = !active && queue.length === 0;
      // The API starts the turn itself: with this memory when it may begin now; otherwise the turn
      // joins the session when it starts (the turnAdmission query) and waits for its `beginTurn`.
      const memory = idle ? memoryForNextTurn() : undefined;
      queue.push({ turnId: msg.turnId, text: msg.text, begun: idle, ...(memory ? { memory } : {}) });
      transcript.remember(msg.turnId);
      transcript.append({ role: 'user', content: msg.text, turnId: msg.turnId, status: idle ? 'running' : 'queued' });
      return { turnId: msg.turnId, created: true, position: positionOf(msg.turnId), ...(memory ? { memory } : {}) };
    },
    {
      validator: (msg) => {
        if (msg.user.id !== owner.id || msg.user.tenant !== owner.tenant) {
          throw ApplicationFailure.create({ type: Failure.SessionForbidden, message: 'this session belongs to someone else', nonRetryable: true });
        }
        if (!known(msg.turnId) && queue.length >= settings.maxQueuedTurns) {
          throw ApplicationFailure.create({ type: Failure.SessionBusy, message: 'too many messages are waiting in this session', nonRetryable: true });
        }
      },
    },
  );

  for (;;) {
    await condition(() => queue.length > 0 || shouldContinueAsNew());
    if (queue.length === 0) {
      // Idle and history is long: hand the state to a fresh run. Update handlers must have finished
      // (Temporal refuses to lose them), and anything that arrived meanwhile is served first.
      await condition(allHandlersFinished);
      if (queue.length > 0) continue;
      await continueAsNew<typeof sessionWorkflow>({
        ...input,
        carry: { ...carry, run: carry.run + 1, transcript: trimTranscript(carry.transcript, settings.transcriptLimit, carry.summarizedUpTo) },
      });
    }
    active = queue.shift();
    if (!active) continue;
    await follow.started(active);
    active = undefined;
    turnsThisRun += 1;
    await maybeSummarize();
    carry.transcript = trimTranscript(carry.transcript, settings.transcriptLimit, carry.summarizedUpTo);
  }

  /** The summary and the newest completed exchanges that fit the model's budget. */
  function memoryForNextTurn() {
    return pruneForLlm(carry.summary, llmMessagesOf(carry.transcript, carry.summarizedUpTo), settings.history.maxTokenCount);
  }

  function shouldContinueAsNew(): boolean {
    return workflowInfo().continueAsNewSuggested || turnsThisRun >= settings.maxTurnsPerRun;
  }

  function positionOf(turnId: string): number {
    const i = queue.findIndex((p) => p.turnId === turnId);
    return i < 0 ? 0 : i + (active ? 1 : 0);
  }
}
