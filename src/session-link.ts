/**
 * Wiring: the worker's Temporal client behind the session-link activities (src/activities/session-link.ts),
 * for turns the API starts beside their session (docs/decisions/0016-the-session-hop.md).
 */
import { type Client, WorkflowFailedError, type WorkflowHandle, WorkflowNotFoundError } from '@temporalio/client';
import { ApplicationFailure, type SignalDefinition } from '@temporalio/common';
import type { InjectedSinks } from '@temporalio/worker';
import type { SessionLink } from './activities/session-link';
import { Failure } from './shared/failures';
import type { PredecessorSeen, TurnEnd, TurnMemory } from './shared/session';
import { llmMessagesOf } from './core/history';
import type { TurnResult, TurnState } from './shared/turn';
import { predecessorEndedSignal, type SessionSinks, sessionStateQuery, turnAdmissionQuery, turnEndedSignal } from './workflows/definitions';

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

    // Nobody is left to tell when the session, or a follower cancelled while it waited, has closed.
    announce: (sessionWorkflowId, end) => signalIfOpen(client, sessionWorkflowId, turnEndedSignal, end),

    tellFollower: (followerId, ended) => signalIfOpen(client, followerId, predecessorEndedSignal, ended),

    async predecessor(after, skip, legacySession) {
      const legacy = async (): Promise<PredecessorSeen> => {
        const memory = legacySession ? await legacyMemory(client, legacySession) : undefined;
        return memory ? { state: 'ended', memory } : { state: 'ended' };
      };
      for (const turnId of after) {
        if (skip.includes(turnId)) continue;
        const handle = client.workflow.getHandle(turnId);
        let status: string;
        try {
          status = (await handle.describe()).status.name;
        } catch (err) {
          if (err instanceof WorkflowNotFoundError) return { state: 'missing', turnId };
          throw err;
        }
        if (status === 'RUNNING') return { state: 'running', turnId };
        const found = await closedTurnMemory(handle, status);
        if (found === 'legacy') return await legacy();
        if (found) return { state: 'ended', memory: found };
        // Cancelled, terminated, or ended before it read a memory: the one before it holds the same.
      }
      return await legacy();
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

/** Signals `workflowId`; nothing when it has closed or never existed. */
async function signalIfOpen<T>(client: Pick<Client, 'workflow'>, workflowId: string, signal: SignalDefinition<[T]>, arg: T): Promise<void> {
  try {
    await client.workflow.getHandle(workflowId).signal(signal, arg);
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return;
    throw err;
  }
}

/**
 * The memory a closed turn of the chain ended with: a completed one's result carries the memory after
 * it, a failed one's failure the memory it began with; a cancelled one keeps no details (Temporal
 * drops them), and the turn before it holds the same memory.
 */
async function closedTurnMemory(handle: WorkflowHandle, status: string): Promise<TurnMemory | 'legacy' | undefined> {
  // A completed turn without a memory ran in a session workflow (decision 0016), as did all before it.
  if (status === 'COMPLETED') return ((await handle.result()) as TurnResult).memory ?? 'legacy';
  if (status !== 'FAILED') return undefined;
  try {
    await handle.result();
  } catch (err) {
    const cause = err instanceof WorkflowFailedError ? err.cause : undefined;
    if (cause instanceof ApplicationFailure && cause.type === Failure.TurnFailed) return (cause.details?.[0] as TurnResult | undefined)?.memory;
  }
  return undefined;
}

/**
 * The memory of a session begun before the chain, as its session workflow (decision 0016) holds it:
 * the summary and the completed exchanges of its transcript. None when it has no such workflow.
 */
async function legacyMemory(client: Pick<Client, 'workflow'>, sessionWorkflowId: string): Promise<TurnMemory | undefined> {
  try {
    const view = await client.workflow.getHandle(sessionWorkflowId).query(sessionStateQuery);
    return { ...(view.summary ? { summary: view.summary } : {}), messages: llmMessagesOf(view.messages, 0) };
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return undefined;
    throw err;
  }
}

/**
 * The worker's side of a turn's end: it signals the session as soon as the turn's last activation
 * ran, without holding up the workflow task (not awaited), tried again a few times. A signal lost
 * anyway costs the session a wait until it checks on the turn; it is never the turn's record.
 */
export function sessionSinks(link: SessionLink, onError: (target: string, turnId: string, err: unknown) => void): InjectedSinks<SessionSinks> {
  return {
    session: {
      turnEnded: {
        fn: (_info, sessionWorkflowId, end) => {
          void withRetries(() => link.announce(sessionWorkflowId, end)).catch((err: unknown) => onError(sessionWorkflowId, end.turnId, err));
        },
        callDuringReplay: false,
      },
      predecessorEnded: {
        fn: (_info, followerId, ended) => {
          void withRetries(() => link.tellFollower(followerId, ended)).catch((err: unknown) => onError(followerId, ended.turnId, err));
        },
        callDuringReplay: false,
      },
    },
  };
}

/** A few quick tries: a transient error should not cost the waiting workflow a whole check interval. */
async function withRetries(send: () => Promise<void>): Promise<void> {
  for (const pause of [250, 1_000, 4_000]) {
    try {
      return await send();
    } catch {
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }
  await send();
}
