/**
 * What the activity files share: heartbeats while work runs, the fields of a turn's log lines, the
 * caller in servers' `_meta`, and an error's message.
 */
import { Context } from '@temporalio/activity';
import { sessionOfTurn } from '../shared/ids';
import { USER_CONTEXT_META_KEY } from '../shared/meta';
import type { UserContext } from '../shared/user';

/**
 * Sends `details` (repeated by the timer from then on) at once; with `{ now: false }` only keeps them
 * for the timer's next beat.
 */
export type Beat = (details?: unknown, opts?: { now?: boolean }) => void;

/**
 * Runs `work`, heartbeating on a timer meanwhile; `beat` sends details (repeated by the timer) at once.
 * `initial`: what the timer sends until `beat` says otherwise. Each heartbeat replaces the details the
 * next attempt reads, so a beat without them would forget what an earlier attempt recorded.
 */
export type WithHeartbeats = <T>(work: (beat: Beat) => Promise<T>, initial?: unknown) => Promise<T>;

/** How often a long call heartbeats even without progress, so a dead worker is noticed quickly. */
export function heartbeatsEvery(heartbeatEveryMs: number): WithHeartbeats {
  return async function withHeartbeats<T>(work: (beat: Beat) => Promise<T>, initial?: unknown): Promise<T> {
    const ctx = Context.current();
    // The timer repeats the latest details: they carry what a retry needs (a tool call's MCP task).
    let last: unknown = initial;
    const beat: Beat = (details, opts) => {
      if (details !== undefined) last = details;
      if (opts?.now !== false) ctx.heartbeat(last);
    };
    // A local activity has no heartbeats (nothing reads them): its work simply runs.
    if (ctx.info.isLocal) return await work(() => undefined);
    // Beat well inside the activity's own heartbeat timeout, whatever the deployment configured.
    const timeoutMs = ctx.info.heartbeatTimeoutMs;
    const every = timeoutMs ? Math.max(100, Math.min(heartbeatEveryMs, Math.floor(timeoutMs / 3))) : heartbeatEveryMs;
    const timer = setInterval(() => beat(), every);
    try {
      return await work(beat);
    } finally {
      clearInterval(timer);
    }
  };
}

/** What every log line about a turn carries. */
export function turnFields(turnId: string, user?: UserContext): Record<string, string> {
  const sessionId = sessionOfTurn(turnId);
  return { turnId, ...(sessionId ? { sessionId } : {}), ...(user ? { userId: user.id } : {}) };
}

/** The caller as servers see it in `_meta`: identity and scopes, never a token. */
export function userMeta(user: UserContext, traceId?: string): Record<string, unknown> {
  return {
    [USER_CONTEXT_META_KEY]: { id: user.id, role: user.role, tenant: user.tenant, scopes: user.scopes, ...(traceId ? { traceId } : {}) },
  };
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
