/**
 * Wiring: the worker's Temporal client behind the session-link activity (src/activities/session-link.ts)
 * and sink, for the turns of a session's chain (docs/decisions/0033-session-protocol-floor.md).
 */
import { type Client, WorkflowFailedError, WorkflowNotFoundError } from '@temporalio/client';
import { ApplicationFailure, CancelledFailure, type SignalDefinition, TerminatedFailure, TimeoutFailure } from '@temporalio/common';
import type { InjectedSinks } from '@temporalio/worker';
import type { SessionLink } from './activities/session-link';
import type { PredecessorSeen, TurnMemory } from './shared/session';
import { readLegacySession } from './legacy-sessions';
import { failedTurnRecord } from './shared/failures';
import type { TurnResult } from './shared/turn';
import { predecessorEndedSignal, type SessionSinks } from './workflows/definitions';

export function createSessionLink(client: Pick<Client, 'workflow' | 'withAbortSignal'>): SessionLink {
  return {
    tellFollower: (followerId, ended) => signalIfOpen(client, followerId, predecessorEndedSignal, ended),

    async predecessor(after, skip, legacySession) {
      const legacy = async (): Promise<PredecessorSeen> => {
        const memory = legacySession ? (await readLegacySession(client, legacySession))?.memory : undefined;
        return memory ? { state: 'ended', memory } : { state: 'ended' };
      };
      for (const turnId of after) {
        if (skip.includes(turnId)) continue;
        const seen = await lookAt(client, turnId);
        if (seen.state !== 'closed') return { state: seen.state, turnId };
        const found = memoryOf(seen.end);
        if (found === 'legacy') return await legacy();
        if (found) return { state: 'ended', memory: found };
        // Cancelled, terminated, or ended before it read a memory: the one before it holds the same.
      }
      return await legacy();
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

/** How a closed workflow ended, as its close event says. */
type ClosedTurn =
  | { status: 'COMPLETED'; value: unknown }
  | { status: 'FAILED' | 'CANCELLED' | 'TERMINATED' | 'TIMED_OUT'; cause?: Error };

type TurnLook = { state: 'running' } | { state: 'missing' } | { state: 'closed'; end: ClosedTurn };

type Settled = { ok: true; value: unknown } | { ok: false; error: unknown };

/**
 * Where a turn stands, in one round trip: its close event (the result read) and a describe go out
 * together. A closed turn is known from the close event, whichever answers first; the describe is
 * there for a turn still running, whose result read would wait for its end: it is then called off.
 */
async function lookAt(client: Pick<Client, 'workflow' | 'withAbortSignal'>, turnId: string): Promise<TurnLook> {
  const handle = client.workflow.getHandle(turnId);
  const stopResult = new AbortController();
  const stopDescribe = new AbortController();
  const result: Promise<Settled> = client.withAbortSignal(stopResult.signal, () => handle.result()).then(
    (value) => ({ ok: true, value }),
    (error: unknown) => ({ ok: false, error }),
  );
  const described: Promise<Settled> = client.withAbortSignal(stopDescribe.signal, () => handle.describe()).then(
    (d) => ({ ok: true, value: d.status.name }),
    (error: unknown) => ({ ok: false, error }),
  );
  const first = await Promise.race([result.then((r) => ({ from: 'result' as const, r })), described.then((r) => ({ from: 'describe' as const, r }))]);
  if (first.from === 'describe') {
    const { r } = first;
    const running = r.ok && r.value === 'RUNNING';
    const missing = !r.ok && r.error instanceof WorkflowNotFoundError;
    if (running || missing || !r.ok) {
      stopResult.abort();
      // A failed describe (Temporal unreachable) fails the look: the result read could wait for the turn's end.
      if (!r.ok && !missing) throw r.error;
      return { state: running ? 'running' : 'missing' };
    }
    // Closed: the close event says how.
  } else {
    stopDescribe.abort();
  }
  const r = await result;
  if (r.ok) return { state: 'closed', end: { status: 'COMPLETED', value: r.value } };
  if (r.error instanceof WorkflowNotFoundError) return { state: 'missing' };
  if (!(r.error instanceof WorkflowFailedError)) throw r.error;
  const cause = r.error.cause;
  const status = cause instanceof CancelledFailure ? 'CANCELLED' : cause instanceof TerminatedFailure ? 'TERMINATED' : cause instanceof TimeoutFailure ? 'TIMED_OUT' : 'FAILED';
  return { state: 'closed', end: { status, ...(cause ? { cause } : {}) } };
}

/**
 * The memory a closed turn of the chain ended with: a completed one's result carries the memory after
 * it, a failed one's failure the memory it began with; a cancelled one keeps no details (Temporal
 * drops them), and the turn before it holds the same memory.
 */
function memoryOf(end: ClosedTurn): TurnMemory | 'legacy' | undefined {
  // A completed turn without a memory ran in a session workflow (decision 0016), as did all before it.
  if (end.status === 'COMPLETED') return (end.value as TurnResult).memory ?? 'legacy';
  return end.status === 'FAILED' && end.cause instanceof ApplicationFailure ? failedTurnRecord(end.cause)?.memory : undefined;
}

/**
 * The worker's side of a turn's end: it signals the session as soon as the turn's last activation
 * ran, without holding up the workflow task (not awaited), tried again a few times. A signal lost
 * anyway costs the session a wait until it checks on the turn; it is never the turn's record.
 */
export function sessionSinks(
  link: SessionLink,
  onError: (target: string, turnId: string, err: unknown) => void,
  handOn: (turnId: string, memory: TurnMemory) => void = () => undefined,
): InjectedSinks<SessionSinks> {
  return {
    session: {
      // To the API beside the turn's events (the live publisher): it never throws.
      handedOn: { fn: (_info, turnId, memory) => handOn(turnId, memory), callDuringReplay: false },
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
