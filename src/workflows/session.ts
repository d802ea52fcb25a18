import {
  ApplicationFailure,
  allHandlersFinished,
  ChildWorkflowFailure,
  type ChildWorkflowHandle,
  CancellationScope,
  CancelledFailure,
  condition,
  continueAsNew,
  getExternalWorkflowHandle,
  log,
  ParentClosePolicy,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  sleep,
  startChild,
  workflowInfo,
} from '@temporalio/workflow';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import type { Activities } from '../activities';
import { fallbackSummary, llmMessagesOf, planSummary, pruneForLlm, trimTranscript } from '../core/history';
import type { ChatMessage, TurnInput, TurnState } from '../shared/turn';
import { Failure, NON_RETRYABLE } from '../shared/failures';
import { beginTurnSignal, SessionIdKey, sessionStateQuery, submitMessageUpdate, TenantIdKey, turnAdmissionQuery, turnEndedSignal, UserIdKey } from './definitions';
import { turnWorkflow } from './turn';
import type { SessionCarry, SessionInput, SubmitMessageResult, TranscriptMessage, TurnAdmission, TurnEnd, TurnSeen } from '../shared/session';

/** Longest summary kept; the summarizer is asked for less, the fallback is cut to this. */
const MAX_SUMMARY_CHARS = 4_000;

interface Pending {
  turnId: string;
  text: string;
  /** Started with its history already (the session was idle): no `beginTurn` signal needed. */
  begun: boolean;
  /**
   * A child turn: resolves once the child exists; undefined when the turn id was already taken (a
   * duplicate). Absent for a turn the API started (see `memory`).
   */
  started?: Promise<ChildWorkflowHandle<typeof turnWorkflow> | undefined>;
  /** A turn the API started, once it may go: the memory its `turnAdmission` query answers with. */
  memory?: ChatMessage[];
}

/**
 * A turn the API started is expected to announce its end. Without word from it for this long (it was
 * terminated, or never started), the session asks Temporal how it stands; then again at twice the
 * interval, up to the longest.
 */
const FIRST_TURN_CHECK_MS = 60_000;
const LONGEST_TURN_CHECK_MS = 30 * 60_000;

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
  const checks = proxyLocalActivities<Activities>({
    startToCloseTimeout: '30 seconds',
    retry: { maximumAttempts: 5, initialInterval: '1 second', maximumInterval: '10 seconds' },
  });

  const summarizer = proxyActivities<Activities>({
    startToCloseTimeout: '2 minutes',
    heartbeatTimeout: '30 seconds',
    retry: { maximumAttempts: 3, initialInterval: '1 second', maximumInterval: '10 seconds', nonRetryableErrorTypes: [...NON_RETRYABLE.llm] },
  });

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
        remember(msg.turnId);
        appendMessage({ role: 'user', content: msg.text, turnId: msg.turnId, status: idle ? 'running' : 'queued' });
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
        remember(msg.turnId);
        appendMessage({ role: 'user', content: msg.text, turnId: msg.turnId, status: idle ? 'running' : 'queued' });
        return { turnId: msg.turnId, created: true, position: positionOf(msg.turnId) };
      }
      const handle = await started;
      if (!handle) {
        const i = queue.indexOf(pending);
        if (i >= 0) queue.splice(i, 1);
        return { turnId: msg.turnId, created: false, position: 0 };
      }
      remember(msg.turnId);
      appendMessage({ role: 'user', content: msg.text, turnId: msg.turnId, status: idle ? 'running' : 'queued' });
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
      await followStartedTurn(active);
      active = undefined;
      turnsThisRun += 1;
      await maybeSummarize();
      carry.transcript = trimTranscript(carry.transcript, settings.transcriptLimit, carry.summarizedUpTo);
      continue;
    }
    const handle = await active.started.catch((err: unknown) => {
      // Starting the child failed outright (not a duplicate): the message is answered as failed.
      log.warn('turn could not be started', { turnId: active?.turnId, error: err instanceof Error ? err.message : String(err) });
      if (active) notStarted(active.turnId, 'The turn could not be started.');
      return undefined;
    });
    if (handle) await runTurn(active, handle);
    // Answered at once, then its id turned out to be taken (an Idempotency-Key older than the ids
    // this session remembers): the existing turn stands, and this message is not a new one.
    else if (transcriptHas(active.turnId, 'user')) notStarted(active.turnId, 'This message repeats an earlier one; its turn already exists.');
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

  function remember(turnId: string): void {
    carry.recentTurnIds.push(turnId);
    if (carry.recentTurnIds.length > 200) carry.recentTurnIds.splice(0, carry.recentTurnIds.length - 200);
  }

  function appendMessage(m: Omit<TranscriptMessage, 'index' | 'at'>): void {
    carry.transcript.push({ ...m, index: carry.totalMessages, at: new Date().toISOString() });
    carry.totalMessages += 1;
  }

  function transcriptHas(turnId: string, role: TranscriptMessage['role']): boolean {
    return carry.transcript.some((m) => m.turnId === turnId && m.role === role);
  }

  /** A message whose turn never ran: its transcript entry says so, without an answer to remember. */
  function notStarted(turnId: string, why: string): void {
    if (!transcriptHas(turnId, 'user') || transcriptHas(turnId, 'assistant')) return;
    setStatus(turnId, 'failed');
    appendMessage({ role: 'assistant', content: why, turnId, status: 'failed' });
  }

  function setStatus(turnId: string, status: TranscriptMessage['status']): void {
    for (const m of carry.transcript) if (m.turnId === turnId) m.status = status;
  }

  async function runTurn(turn: Pending, handle: ChildWorkflowHandle<typeof turnWorkflow>): Promise<void> {
    setStatus(turn.turnId, 'running');
    let state: TurnState | undefined;
    let status: TranscriptMessage['status'] = 'failed';
    if (!turn.begun) {
      try {
        await handle.signal(beginTurnSignal, { history: memoryForNextTurn() });
      } catch (err) {
        // Cancelled while it waited: the turn is already closed. Its result below says how it ended.
        log.info('turn closed before its start', { turnId: turn.turnId, error: err instanceof Error ? err.message : String(err) });
      }
    }
    try {
      state = await handle.result();
      status = 'completed';
    } catch (err) {
      const cause = err instanceof ChildWorkflowFailure ? err.cause : err;
      if (cause instanceof CancelledFailure) {
        status = 'cancelled';
        state = cause.details?.[0] as TurnState | undefined;
      } else if (cause instanceof ApplicationFailure && cause.type === Failure.TurnFailed) {
        state = cause.details?.[0] as TurnState | undefined;
      }
      // Anything else (terminated, timed out) is a failed turn; the session itself carries on.
      log.info('turn did not complete', { turnId: turn.turnId, status });
    }
    setStatus(turn.turnId, status);
    appendMessage({
      role: 'assistant',
      content: status === 'completed' ? (state?.text ?? '') : (state?.error?.message ?? `The turn was ${status}.`),
      turnId: turn.turnId,
      status,
    });
    if (status === 'completed') carry.turnsCompleted += 1;
  }

  /**
   * A turn the API started: gives it its go (unless it went at registration), then waits for its end.
   * Its announcement normally comes; if it does not, Temporal is asked how the turn stands.
   */
  async function followStartedTurn(turn: Pending): Promise<void> {
    // Commands only once every update of this activation has answered: an update's answer is a command
    // too, and a workflow interceptor (the traced bundle's) changes how many microtasks it takes, so
    // without this wait the two bundles would record the same turn in different orders.
    await condition(allHandlersFinished);
    setStatus(turn.turnId, 'running');
    // A go that cannot be delivered means the turn is closed (its end is read at once) or not started yet.
    let checkNow = false;
    if (!turn.begun && !ended.has(turn.turnId)) {
      turn.memory = memoryForNextTurn();
      try {
        await getExternalWorkflowHandle(turn.turnId).signal(beginTurnSignal, { history: turn.memory });
      } catch (err) {
        log.info('turn could not be given its go', { turnId: turn.turnId, error: err instanceof Error ? err.message : String(err) });
        checkNow = true;
      }
    }
    let missing = 0;
    for (let wait = settings.turnCheckMs ?? FIRST_TURN_CHECK_MS; !ended.has(turn.turnId); wait = Math.min(wait * 2, LONGEST_TURN_CHECK_MS)) {
      if (!checkNow && (await announcedWithin(turn.turnId, wait))) break;
      checkNow = false;
      const seen = await checkOn(turn.turnId);
      if (seen.state === 'ended') ended.set(turn.turnId, seen.end);
      // Missing twice in a row, a check interval apart: its start is not merely late.
      else if (seen.state === 'missing' && ++missing >= 2) ended.set(turn.turnId, { turnId: turn.turnId, status: 'failed', content: 'The turn could not be started.' });
      else if (seen.state !== 'missing') missing = 0;
    }
    const end = ended.get(turn.turnId) as TurnEnd;
    ended.delete(turn.turnId);
    setStatus(turn.turnId, end.status);
    appendMessage({ role: 'assistant', content: end.content, turnId: turn.turnId, status: end.status });
    if (end.status === 'completed') carry.turnsCompleted += 1;
  }

  /** How a turn stands in Temporal; a check that fails (Temporal unreachable) counts as "running". */
  async function checkOn(turnId: string): Promise<TurnSeen> {
    try {
      return await checks.turnOutcome.executeWithOptions({ summary: `check on turn ${turnId}` }, [turnId]);
    } catch (err) {
      log.warn('checking on a turn failed; waiting for it again', { turnId, error: err instanceof Error ? err.message : String(err) });
      return { state: 'running' };
    }
  }

  /**
   * Whether the turn announced its end within `ms`. Like `condition(fn, ms)`, except that the timer is
   * cancelled only after the activation's updates have answered (see followStartedTurn).
   */
  async function announcedWithin(turnId: string, ms: number): Promise<boolean> {
    let fired = false;
    const timer = new CancellationScope();
    void timer.run(() => sleep(ms)).then(
      () => void (fired = true),
      () => undefined,
    );
    await condition(() => fired || ended.has(turnId));
    await condition(allHandlersFinished);
    if (fired) return ended.has(turnId);
    timer.cancel();
    return true;
  }

  async function maybeSummarize(): Promise<void> {
    const plan = planSummary(carry.transcript, carry.summarizedUpTo, carry.summary, settings.history);
    if (plan.toSummarize.length === 0) {
      if (plan.nextSummarizedUpTo !== carry.summarizedUpTo) carry.summarizedUpTo = plan.nextSummarizedUpTo;
      return;
    }
    let summary: string;
    try {
      const result = await summarizer.summarizeConversation.executeWithOptions(
        { summary: `summarize ${plan.toSummarize.length} older messages` },
        [{ sessionId: input.sessionId, previousSummary: carry.summary, messages: plan.toSummarize, maxChars: MAX_SUMMARY_CHARS }],
      );
      summary = result.summary.slice(0, MAX_SUMMARY_CHARS);
    } catch (err) {
      log.warn('summarizing failed; keeping an extract instead', { error: err instanceof Error ? err.message : String(err) });
      summary = fallbackSummary(carry.summary, plan.toSummarize, MAX_SUMMARY_CHARS);
    }
    carry.summary = summary;
    carry.summarizedUpTo = plan.nextSummarizedUpTo;
  }
}
