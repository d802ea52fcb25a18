import {
  ApplicationFailure,
  allHandlersFinished,
  condition,
  continueAsNew,
  log,
  ParentClosePolicy,
  patched,
  setHandler,
  startChild,
  workflowInfo,
} from '@temporalio/workflow';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import { llmMessagesOf, pruneForLlm, trimTranscript } from '../core/history';
import { transcriptOf } from '../core/session-transcript';
import type { TurnInput } from '../shared/turn';
import { Failure } from '../shared/failures';
import { SessionIdKey, sessionStateQuery, submitMessageUpdate, TenantIdKey, turnAdmissionQuery, turnEndedSignal, UserIdKey } from './definitions';
import { sessionSummarizer } from './session-summary';
import { type Pending, turnFollower } from './session-turns';
import { turnWorkflow } from './turn';
import type { SessionCarry, SessionInput, SubmitMessageResult, TurnAdmission, TurnEnd } from '../shared/session';

/**
 * One conversation. Serializes its turns: the API registers each message here and then starts its
 * turn workflow, with the pruned history when the session is idle; a turn queued behind another gets
 * its go (and the history) when the previous one has finished. Messages of the earlier protocol become
 * child turn workflows the same way. Keeps the transcript and the running summary, and continues as
 * new when Temporal suggests it, carrying only that state.
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
      if (msg.startedTurn) {
        // The API starts the turn itself: with this memory when it may begin now; otherwise the turn
        // joins the session when it starts (the turnAdmission query) and waits for its `beginTurn`.
        const memory = idle ? memoryForNextTurn() : undefined;
        queue.push({ turnId: msg.turnId, text: msg.text, begun: idle, ...(memory ? { memory } : {}) });
        transcript.remember(msg.turnId);
        transcript.append({ role: 'user', content: msg.text, turnId: msg.turnId, status: idle ? 'running' : 'queued' });
        return { turnId: msg.turnId, created: true, position: positionOf(msg.turnId), ...(memory ? { memory } : {}) };
      }
      const turnInput: TurnInput = {
        turnId: msg.turnId,
        sessionId: input.sessionId,
        userText: msg.text,
        ...(msg.directCall ? { directCall: msg.directCall } : {}),
        user: msg.user,
        policy: msg.policy,
        ...(msg.sealedToken ? { sealedToken: msg.sealedToken } : {}),
        history: idle ? memoryForNextTurn() : [],
        ...(idle ? {} : { queued: true }),
        options: msg.options,
      };
      // Queued before the child exists, so concurrent submissions keep their arrival order.
      const started = startChild(turnWorkflow, {
        workflowId: msg.turnId,
        args: [turnInput],
        // A turn still running when its session is terminated is asked to stop cleanly (the MCP call
        // in flight is cancelled); sessions only continue as new between turns.
        parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
        typedSearchAttributes: [
          { key: SessionIdKey, value: input.sessionId },
          { key: UserIdKey, value: owner.id },
          { key: TenantIdKey, value: owner.tenant },
        ],
        // Summaries stay in clear when payloads are encrypted: ids only, never the user's text
        // (docs/decisions/0019-payload-encryption.md).
        staticSummary: `Turn ${msg.turnId} of session ${input.sessionId}`,
      }).catch((err: unknown) => {
        // The same Idempotency-Key from an earlier run of this session: that turn already exists.
        if (err instanceof WorkflowExecutionAlreadyStartedError) return undefined;
        throw err;
      });
      // Awaited by the loop, maybe a task later: a failure must not count as unhandled meanwhile.
      started.catch(() => undefined);
      const pending: Pending = { turnId: msg.turnId, text: msg.text, begun: idle, started };
      queue.push(pending);
      // The answer no longer waits for the child to exist: the update completes in the workflow task
      // that accepted it, a round trip sooner for the API (the turn is started in the same task; the
      // loop below deals with a turn id already taken). Sessions that began before answer as recorded.
      if (patched('submit-answers-at-once')) {
        transcript.remember(msg.turnId);
        transcript.append({ role: 'user', content: msg.text, turnId: msg.turnId, status: idle ? 'running' : 'queued' });
        return { turnId: msg.turnId, created: true, position: positionOf(msg.turnId) };
      }
      const handle = await started;
      if (!handle) {
        const i = queue.indexOf(pending);
        if (i >= 0) queue.splice(i, 1);
        return { turnId: msg.turnId, created: false, position: 0 };
      }
      transcript.remember(msg.turnId);
      transcript.append({ role: 'user', content: msg.text, turnId: msg.turnId, status: idle ? 'running' : 'queued' });
      return { turnId: msg.turnId, created: true, position: positionOf(msg.turnId) };
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
    if (!active.started) {
      await follow.started(active);
      active = undefined;
      turnsThisRun += 1;
      await maybeSummarize();
      carry.transcript = trimTranscript(carry.transcript, settings.transcriptLimit, carry.summarizedUpTo);
      continue;
    }
    const handle = await active.started.catch((err: unknown) => {
      // Starting the child failed outright (not a duplicate): the message is answered as failed.
      log.warn('turn could not be started', { turnId: active?.turnId, error: err instanceof Error ? err.message : String(err) });
      if (active) transcript.notStarted(active.turnId, 'The turn could not be started.');
      return undefined;
    });
    if (handle) await follow.child(active, handle);
    // Answered at once, then its id turned out to be taken (an Idempotency-Key older than the ids
    // this session remembers): the existing turn stands, and this message is not a new one.
    else if (transcript.has(active.turnId, 'user')) transcript.notStarted(active.turnId, 'This message repeats an earlier one; its turn already exists.');
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
