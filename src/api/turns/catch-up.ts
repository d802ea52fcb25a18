/** A session records a turn's end a moment after the turn's stream said `done`: reads that wait for it. */
import type { UserContext } from '../../shared/user';
import type { TurnServiceOptions } from './options';

/** How long a session view may lag behind a turn that has ended before it is answered as it is. */
export const SESSION_CATCH_UP_MS = 2_000;

/**
 * Reads until `caughtUp` holds, or SESSION_CATCH_UP_MS has passed (then the last read stands): a
 * session records a turn's end a moment after the turn's stream said `done`.
 */
export async function untilCaughtUp<T>(read: () => Promise<T>, caughtUp: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + SESSION_CATCH_UP_MS;
  for (;;) {
    const value = await read();
    if (caughtUp(value) || Date.now() > deadline) return value;
    await new Promise((r) => setTimeout(r, 15));
  }
}

/**
 * A client that sends its next message as soon as the last turn's `done` arrives should find its
 * session idle, not queue behind a turn that has ended: the session records the end a moment after
 * the stream said so. When the hub saw the session's latest turn end just now, wait (bounded) until
 * the session no longer shows it as active. One query per round, only in that window.
 */
export async function sessionCaughtUp(opts: TurnServiceOptions, user: UserContext, sessionId: string): Promise<void> {
  const ended = opts.justEnded?.({ id: user.id, tenant: user.tenant }, sessionId, SESSION_CATCH_UP_MS);
  if (!ended) return;
  await untilCaughtUp(
    () => opts.gateway.getSession(user, sessionId).catch(() => null),
    (view) => !view || view.activeTurnId !== ended,
  );
}
