/**
 * A connect under way, shared by every use of its slot that comes meanwhile (pool-state.ts
 * ConnectAttempt; connections.ts starts them and waits for them).
 *
 * The connect timeout bounds each use's wait, counted from when that use came, not the connect's
 * life: a use that comes while a connect is under way (a turn's listing on a worker that just started,
 * whose servers are slow to answer on a loaded machine) waits for it its own full timeout, and the
 * connect goes on for as long as a use still waits for it. Ending it at its first waiter's timeout
 * told the later ones "unavailable" a moment before the server answered, and killed the child that
 * was about to (issue 26). It lives at least one connect timeout, at most MAX_CONNECT_TIMEOUTS of
 * them, so a server that never answers its handshake still gets a fresh connect now and then.
 *
 * And when a slot whose connects failed is tried again: FAIL_FAST_MS, or a back-off for the health
 * reports' background checks (reconnectBackoffMs).
 */
import type { ConnectAttempt, Connection } from './pool-state';
import { noop } from './pool-state';

/** The longest a connect goes on while uses keep joining it, in connect timeouts. */
export const MAX_CONNECT_TIMEOUTS = 3;

/** A connect attempt that failed within this window is not retried yet: fail fast instead. */
export const FAIL_FAST_MS = 500;
/** The longest a background check leaves a failing server alone before it tries to connect again. */
export const MAX_RECONNECT_BACKOFF_MS = 60_000;

/**
 * How long after its last failed connect a background check (the worker's health reports, every
 * WORKER_REPORT_MS) leaves a failing server alone, reporting that failure instead of trying again:
 * FAIL_FAST_MS after the first, doubling with each failure in a row, at most MAX_RECONNECT_BACKOFF_MS.
 * A server with a wrong command is then tried about once a minute, not at every report. Uses by turns
 * (their catalog, calls, reads) keep FAIL_FAST_MS, so a server that came back is used at once (their
 * own retries back off in Temporal, and the circuit breaker counts their failures: resilience.ts).
 */
export function reconnectBackoffMs(failuresInARow: number): number {
  return Math.min(FAIL_FAST_MS * 2 ** Math.max(0, failuresInARow - 1), MAX_RECONNECT_BACKOFF_MS);
}

export class ConnectTimeoutError extends Error {
  constructor(ms: number) {
    super(`connect timed out after ${ms} ms`);
  }
}

/** How one connect may run: until `givenUp` rejects, and within `budgetMs()` for the SDK's own handshake timeout. */
export interface AttemptLimits {
  givenUp: Promise<never>;
  budgetMs(): number;
}

/** Starts `open` as an attempt that ends (`givenUp` rejects) once nobody waits for it any more. */
export function startConnectAttempt(connectMs: number, open: (limits: AttemptLimits) => Promise<Connection>): ConnectAttempt {
  const started = Date.now();
  const longestMs = MAX_CONNECT_TIMEOUTS * connectMs;
  let giveUp: (reason: Error) => void = noop;
  const givenUp = new Promise<never>((_, reject) => (giveUp = reject));
  givenUp.catch(noop);
  let settled = false;
  // Its own first timeout counts as a waiter: a use that gave up at once (aborted) does not end it.
  let waiting = 1;
  const leave = (): void => {
    waiting -= 1;
    if (waiting === 0 && !settled) giveUp(new ConnectTimeoutError(Date.now() - started));
  };
  const own = setTimeout(leave, connectMs);
  const longest = setTimeout(() => giveUp(new ConnectTimeoutError(longestMs)), longestMs);
  const conn = open({ givenUp, budgetMs: () => Math.max(1, started + longestMs - Date.now()) }).finally(() => {
    settled = true;
    clearTimeout(own);
    clearTimeout(longest);
  });
  return {
    conn,
    join() {
      waiting += 1;
      let left = false;
      return {
        leave: () => {
          if (left) return;
          left = true;
          leave();
        },
      };
    },
    abandon: (reason) => giveUp(reason),
  };
}
