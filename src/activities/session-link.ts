/**
 * The activities of a turn the API started for its session (docs/decisions/0016-the-session-hop.md):
 * joining the session when it waited behind another turn, and the session's check on a turn that
 * never said how it ended. Both run as local activities; the Temporal calls behind them live in
 * src/session-link.ts (this ring uses @temporalio/activity only).
 */
import { ApplicationFailure } from '@temporalio/activity';
import type { PredecessorEnded, PredecessorSeen, TurnAdmission, TurnEnd, TurnSeen } from '../shared/session';

/** The session and turn workflows as one worker reaches them (src/session-link.ts). */
export interface SessionLink {
  /** One `turnAdmission` query; `unknown` also when the session workflow does not exist (yet). */
  admission(sessionWorkflowId: string, turnId: string): Promise<TurnAdmission>;
  /** Signals `turnEnded` (the worker's sink calls it); nothing when the session is gone (nobody is left to tell). */
  announce(sessionWorkflowId: string, end: TurnEnd): Promise<void>;
  /** Signals `predecessorEnded` to a turn of the chain waiting for this one (the worker's sink calls it). */
  tellFollower(followerId: string, ended: PredecessorEnded): Promise<void>;
  /** How a turn stands, from Temporal: running, gone (never started), or how it ended. */
  outcome(turnId: string): Promise<TurnSeen>;
  /**
   * The chain (decision 0033): the first of `after` (nearest first, `skip` left out) that runs, is
   * missing, or ended with a memory; `ended` without one when none of them holds any.
   */
  predecessor(after: readonly string[], skip: readonly string[], legacySession?: string): Promise<PredecessorSeen>;
}

export interface PredecessorInput {
  after: string[];
  skip: string[];
  /** ChainInput.legacySession: where the memory is when the turns before hold none. */
  legacySession?: string;
}

export interface JoinSessionInput {
  sessionWorkflowId: string;
  turnId: string;
}

export function createSessionLinkActivities(link: SessionLink | undefined) {
  const linked = (): SessionLink => {
    if (link) return link;
    throw ApplicationFailure.nonRetryable('this worker has no link to session workflows', 'SessionLinkMissing');
  };
  return {
    /**
     * The session's answer for a turn queued behind another. The API started the turn after the
     * session registered it, so one query suffices; an error is retried by the activity's policy.
     */
    async joinSession(input: JoinSessionInput): Promise<TurnAdmission> {
      return await linked().admission(input.sessionWorkflowId, input.turnId);
    },

    /** The memory of the turn before, or that it still runs or is missing (a local activity of the chain). */
    async predecessorMemory(input: PredecessorInput): Promise<PredecessorSeen> {
      return await linked().predecessor(input.after, input.skip, input.legacySession);
    },

    async turnOutcome(turnId: string): Promise<TurnSeen> {
      return await linked().outcome(turnId);
    },
  };
}
