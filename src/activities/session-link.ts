/**
 * The activities of a turn the API started for its session (docs/decisions/0016-the-session-hop.md):
 * joining the session when it waited behind another turn, and the session's check on a turn that
 * never said how it ended. Both run as local activities; the Temporal calls behind them live in
 * src/session-link.ts (this ring uses @temporalio/activity only).
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { TurnAdmission, TurnEnd, TurnSeen } from '../shared/session';

/** The session and turn workflows as one worker reaches them (src/session-link.ts). */
export interface SessionLink {
  /** One `turnAdmission` query; `unknown` also when the session workflow does not exist (yet). */
  admission(sessionWorkflowId: string, turnId: string): Promise<TurnAdmission>;
  /** Signals `turnEnded` (the worker's sink calls it); nothing when the session is gone (nobody is left to tell). */
  announce(sessionWorkflowId: string, end: TurnEnd): Promise<void>;
  /** How a turn stands, from Temporal: running, gone (never started), or how it ended. */
  outcome(turnId: string): Promise<TurnSeen>;
}

export interface JoinSessionInput {
  sessionWorkflowId: string;
  turnId: string;
}

/**
 * How long a turn waits for its session to know it. The API registers the turn and starts it at the
 * same time, so the first query may come before the registration: it is asked again until then.
 */
export const JOIN_WAIT_MS = 10_000;

export function createSessionLinkActivities(link: SessionLink | undefined, opts: { joinWaitMs?: number } = {}) {
  const joinWaitMs = opts.joinWaitMs ?? JOIN_WAIT_MS;
  const linked = (): SessionLink => {
    if (link) return link;
    throw ApplicationFailure.nonRetryable('this worker has no link to session workflows', 'SessionLinkMissing');
  };
  return {
    /** The session's answer for this turn, once it has one; `unknown` after JOIN_WAIT_MS. */
    async joinSession(input: JoinSessionInput): Promise<TurnAdmission> {
      const signal = Context.current().cancellationSignal;
      const deadline = Date.now() + joinWaitMs;
      let lastError: unknown;
      // Finely at first: a session created together with the turn answers within a few milliseconds
      // of its first workflow task (until then the server refuses the query at once).
      for (let attempt = 0; ; attempt++) {
        const delay = attempt < 25 ? 2 : Math.min(2 ** (attempt - 22), 250);
        let admission: TurnAdmission = { state: 'unknown' };
        try {
          admission = await linked().admission(input.sessionWorkflowId, input.turnId);
        } catch (err) {
          // E.g. a session created a moment ago that has not completed its first workflow task.
          if (err instanceof ApplicationFailure) throw err;
          lastError = err;
        }
        if (admission.state !== 'unknown' || signal.aborted) return admission;
        if (Date.now() + delay > deadline) {
          if (lastError) throw lastError;
          return admission;
        }
        await new Promise((resolve) => setTimeout(resolve, delay));
      }
    },

    async turnOutcome(turnId: string): Promise<TurnSeen> {
      return await linked().outcome(turnId);
    },
  };
}
