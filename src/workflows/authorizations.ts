import { ApplicationFailure, condition, setHandler } from '@temporalio/workflow';
import { innermostCause } from './activity-failures';
import type { PlannedCall } from '../core/host-loop';
import type { TurnRecord } from '../core/turn-record';
import { AUTHORIZATION_WAIT_MS } from '../shared/turn';
import { authorizationCompletedSignal } from './definitions';

/** What the tool call's failure says: which server, and where the user goes to authorize it. */
export interface AuthorizationNeeded {
  server: string;
  authorizationUrl: string;
}

/**
 * Durable OAuth consent: a tool call whose server needs the user's authorization waits here, with an
 * `authorization_required` event carrying the URL, until the API's callback route signals that the
 * user came back (or the wait times out, or the turn is cancelled). The wait is a durable timer and a
 * signal, so it survives worker restarts; the code itself never enters history (it waits in the
 * sealed token store for the worker's next attempt).
 */
export function handleAuthorizations(record: TurnRecord) {
  /** Servers the user authorized since the turn started waiting, with how often. */
  const completed = new Map<string, number>();
  setHandler(authorizationCompletedSignal, ({ server }) => void completed.set(server, (completed.get(server) ?? 0) + 1));

  return {
    /**
     * Authorizations of `server` seen so far: taken before each attempt of a call, so a user who came
     * back while the failed attempt was still reporting is not waited for again.
     */
    seen: (server: string): number => completed.get(server) ?? 0,
    /** True when the user came back in time (after `before` was seen); the caller tries the call again. */
    async wait(p: Extract<PlannedCall, { kind: 'call' }>, step: number, needed: AuthorizationNeeded, before: number): Promise<boolean> {
      record.emit('authorization_required', {
        toolCallId: p.call.id,
        name: p.tool.name,
        server: needed.server,
        authorizationUrl: needed.authorizationUrl,
        step,
        expiresInMs: AUTHORIZATION_WAIT_MS,
      });
      const inTime = await condition(() => (completed.get(needed.server) ?? 0) > before, AUTHORIZATION_WAIT_MS);
      record.emit('authorization_completed', { toolCallId: p.call.id, server: needed.server, outcome: inTime ? 'authorized' : 'timed_out' });
      return inTime;
    },
  };
}

/** The server and URL of an `McpAuthorizationRequired` activity failure (its first detail). */
export function authorizationNeeded(err: unknown): AuthorizationNeeded | undefined {
  const current = innermostCause(err);
  if (!(current instanceof ApplicationFailure)) return undefined;
  const detail = current.details?.[0] as Partial<AuthorizationNeeded> | undefined;
  if (typeof detail?.server !== 'string' || typeof detail.authorizationUrl !== 'string') return undefined;
  return { server: detail.server, authorizationUrl: detail.authorizationUrl };
}
