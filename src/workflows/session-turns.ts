/**
 * How a session follows the turn it let go: the API started it, it announces its end through the
 * worker, and when it does not, Temporal is asked how it stands (docs/decisions/0016-the-session-hop.md).
 */
import { allHandlersFinished, CancellationScope, condition, getExternalWorkflowHandle, log, proxyLocalActivities, sleep } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { Transcript } from '../core/session-transcript';
import type { SessionSettings, TurnEnd, TurnSeen } from '../shared/session';
import type { ChatMessage } from '../shared/turn';
import { beginTurnSignal } from './definitions';

/**
 * A turn the API started is expected to announce its end. Without word from it for this long (it was
 * terminated, or never started), the session asks Temporal how it stands; then again at twice the
 * interval, up to the longest.
 */
const FIRST_TURN_CHECK_MS = 60_000;
const LONGEST_TURN_CHECK_MS = 30 * 60_000;

/** A message's turn as the session holds it between its registration and its end. */
export interface Pending {
  turnId: string;
  text: string;
  /** Started with its history already (the session was idle): no `beginTurn` signal needed. */
  begun: boolean;
  /** A turn the API started, once it may go: the memory its `turnAdmission` query answers with. */
  memory?: ChatMessage[];
}

export interface TurnFollowing {
  settings: SessionSettings;
  transcript: Transcript;
  /** How turns the API started ended, as they announced it (until the session has recorded it). */
  ended: Map<string, TurnEnd>;
  memoryForNextTurn(): ChatMessage[];
}

export function turnFollower(ctx: TurnFollowing) {
  const { transcript, ended } = ctx;
  const checks = proxyLocalActivities<Activities>({
    startToCloseTimeout: '30 seconds',
    retry: { maximumAttempts: 5, initialInterval: '1 second', maximumInterval: '10 seconds' },
  });

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
   * cancelled only after the activation's updates have answered (see `started`).
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

  return {
    /**
     * A turn the API started: gives it its go (unless it went at registration), then waits for its end.
     * Its announcement normally comes; if it does not, Temporal is asked how the turn stands.
     */
    async started(turn: Pending): Promise<void> {
      // Commands only once every update of this activation has answered: an update's answer is a command
      // too, and a workflow interceptor (the traced bundle's) changes how many microtasks it takes, so
      // without this wait the two bundles would record the same turn in different orders.
      await condition(allHandlersFinished);
      transcript.setStatus(turn.turnId, 'running');
      // A go that cannot be delivered means the turn is closed (its end is read at once) or not started yet.
      let checkNow = false;
      if (!turn.begun && !ended.has(turn.turnId)) {
        turn.memory = ctx.memoryForNextTurn();
        try {
          await getExternalWorkflowHandle(turn.turnId).signal(beginTurnSignal, { history: turn.memory });
        } catch (err) {
          log.info('turn could not be given its go', { turnId: turn.turnId, error: err instanceof Error ? err.message : String(err) });
          checkNow = true;
        }
      }
      let missing = 0;
      for (let wait = ctx.settings.turnCheckMs ?? FIRST_TURN_CHECK_MS; !ended.has(turn.turnId); wait = Math.min(wait * 2, LONGEST_TURN_CHECK_MS)) {
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
      transcript.ended(turn.turnId, end.status, end.content);
    },
  };
}
