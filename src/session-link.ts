/**
 * Wiring: the worker's Temporal client behind the session-link activities (src/activities/session-link.ts),
 * for turns the API starts beside their session (docs/decisions/0016-the-session-hop.md).
 */
import { type Client, WorkflowFailedError, WorkflowNotFoundError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { InjectedSinks } from '@temporalio/worker';
import type { SessionLink } from './activities/session-link';
import { Failure } from './shared/failures';
import type { TurnEnd } from './shared/session';
import type { TurnState } from './shared/turn';
import { type SessionSinks, turnAdmissionQuery, turnEndedSignal } from './workflows/definitions';

export function createSessionLink(client: Pick<Client, 'workflow'>): SessionLink {
  return {
    async admission(sessionWorkflowId, turnId) {
      try {
        return await client.workflow.getHandle(sessionWorkflowId).query(turnAdmissionQuery, turnId);
      } catch (err) {
        if (err instanceof WorkflowNotFoundError) return { state: 'unknown' };
        throw err;
      }
    },

    async announce(sessionWorkflowId, end) {
      try {
        await client.workflow.getHandle(sessionWorkflowId).signal(turnEndedSignal, end);
      } catch (err) {
        if (err instanceof WorkflowNotFoundError) return;
        throw err;
      }
    },

    async outcome(turnId) {
      const handle = client.workflow.getHandle(turnId);
      let status: string;
      try {
        status = (await handle.describe()).status.name;
      } catch (err) {
        if (err instanceof WorkflowNotFoundError) return { state: 'missing' };
        throw err;
      }
      const ended = (s: TurnEnd['status'], content: string) => ({ state: 'ended' as const, end: { turnId, status: s, content } });
      switch (status) {
        case 'RUNNING':
          return { state: 'running' };
        case 'COMPLETED':
          return ended('completed', ((await handle.result()) as TurnState).text ?? '');
        case 'CANCELLED':
          return ended('cancelled', 'The turn was cancelled.');
        case 'FAILED':
          try {
            await handle.result();
          } catch (err) {
            const cause = err instanceof WorkflowFailedError ? err.cause : undefined;
            const state = cause instanceof ApplicationFailure && cause.type === Failure.TurnFailed ? (cause.details?.[0] as TurnState | undefined) : undefined;
            return ended('failed', state?.error?.message ?? cause?.message ?? 'The turn failed.');
          }
          return ended('failed', 'The turn failed.');
        default:
          // Terminated or timed out: the turn never said how it ended.
          return ended('failed', `The turn was ${status.toLowerCase().replace('_', ' ')}.`);
      }
    },
  };
}

/**
 * The worker's side of a turn's end: it signals the session as soon as the turn's last activation
 * ran, without holding up the workflow task (not awaited), tried again a few times. A signal lost
 * anyway costs the session a wait until it checks on the turn; it is never the turn's record.
 */
export function sessionSinks(link: SessionLink, onError: (sessionWorkflowId: string, end: TurnEnd, err: unknown) => void): InjectedSinks<SessionSinks> {
  return {
    session: {
      turnEnded: {
        fn: (_info, sessionWorkflowId, end) => {
          void announceWithRetries(link, sessionWorkflowId, end).catch((err: unknown) => onError(sessionWorkflowId, end, err));
        },
        callDuringReplay: false,
      },
    },
  };
}

/** A few quick tries: a transient error should not cost the session a whole check interval. */
async function announceWithRetries(link: SessionLink, sessionWorkflowId: string, end: TurnEnd): Promise<void> {
  for (const pause of [250, 1_000, 4_000]) {
    try {
      return await link.announce(sessionWorkflowId, end);
    } catch {
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }
  await link.announce(sessionWorkflowId, end);
}
