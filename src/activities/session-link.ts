/**
 * The activity of a turn of the chain (docs/decisions/0033-session-protocol-floor.md): the memory of
 * the turn before it. It runs as a local activity; the Temporal calls behind it live in
 * src/session-link.ts (this ring uses @temporalio/activity only).
 */
import { ApplicationFailure } from '@temporalio/activity';
import type { PredecessorEnded, PredecessorSeen } from '../shared/session';

/** The turn workflows of a session as one worker reaches them (src/session-link.ts). */
export interface SessionLink {
  /** Signals `predecessorEnded` to a turn of the chain waiting for this one (the worker's sink calls it). */
  tellFollower(followerId: string, ended: PredecessorEnded): Promise<void>;
  /**
   * The chain (decision 0033): the first of `after` (nearest first, `skip` left out) that runs, is
   * missing, or ended with a memory; `ended` without one when none of them holds any.
   */
  predecessor(after: readonly string[], skip: readonly string[], legacySession?: string): Promise<PredecessorSeen>;
}

export interface PredecessorInput {
  after: string[];
  skip: string[];
  /** ChainInput.legacySession: where the memory is when the turns before hold none (a carrier, decision 0041). */
  legacySession?: string;
}

export function createSessionLinkActivities(link: SessionLink | undefined) {
  const linked = (): SessionLink => {
    if (link) return link;
    throw ApplicationFailure.nonRetryable('this worker has no link to session workflows', 'SessionLinkMissing');
  };
  return {
    /** The memory of the turn before, or that it still runs or is missing (a local activity of the chain). */
    async predecessorMemory(input: PredecessorInput): Promise<PredecessorSeen> {
      return await linked().predecessor(input.after, input.skip, input.legacySession);
    },
  };
}
