import { applyRead, type TurnRead } from './streams';
import type { TurnRecord } from './users';

/**
 * Lost or late (decision 0030): the clients stop following at the run's drain deadline, so a turn that
 * ends after it is counted lost by them. Before the topology stops, every such turn with a turn id is
 * read again from its record until it ends or an extra window runs out: one that ends is `late`, with
 * the time it was seen ended; one without a turn id or that never ends stays `lost`.
 */
export interface LateOptions {
  /** One read of the turn's record (as its user); undefined when no replica answered (read again next round). */
  read: (t: TurnRecord) => Promise<TurnRead | undefined>;
  /** The end of the extra window (ms since the epoch). */
  until: number;
  /** Pause between rounds (ms). */
  everyMs: number;
  now?: () => number;
  pause?: (ms: number) => Promise<void>;
}

/** Marks `t` (counted lost) late when `view` shows its turn ended; `at` is when the view was read. */
export function settleLate(t: TurnRecord, view: TurnRead, at: number): boolean {
  if (t.outcome !== 'lost' || !applyRead(t, view)) return false;
  t.outcome = 'late';
  t.endedAt = at;
  return true;
}

/** `fn` on every item, `size` at a time (the soak's reads after the run, so as not to flood a loaded topology). */
export async function inBatches<T>(items: T[], size: number, fn: (item: T) => Promise<void>): Promise<void> {
  for (let i = 0; i < items.length; i += size) await Promise.all(items.slice(i, i + size).map(fn));
}

/** Reads the lost turns with an id again (eight at a time) every `everyMs` until each ended or `until`; returns how many were late. */
export async function awaitLate(turns: TurnRecord[], o: LateOptions): Promise<number> {
  const now = o.now ?? Date.now;
  const pause = o.pause ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  let pending = turns.filter((t) => t.outcome === 'lost' && t.turnId);
  let late = 0;
  // At least one round, even when the window is already over (the turn may have ended since its last
  // read); then one every `everyMs`, the last at the window's end.
  for (let round = 0; pending.length > 0; round++) {
    if (round > 0) {
      const left = o.until - now();
      if (left <= 0) break;
      await pause(Math.min(o.everyMs, left));
    }
    await inBatches(pending, 8, async (t) => {
      const view = await o.read(t);
      if (view && settleLate(t, view, now())) late++;
    });
    pending = pending.filter((t) => t.outcome === 'lost');
  }
  return late;
}

/** One turn as result.json keeps it, for investigating a run (warm-up turns excluded). */
export function turnRow(t: TurnRecord) {
  return {
    turnId: t.turnId,
    user: t.user,
    kind: t.kind,
    via: t.via,
    outcome: t.outcome,
    submittedAt: t.submittedAt,
    // Seen ended (by the stream, the record, or for a late turn the extra window's read); a lost turn's client stopped following then.
    ...(t.outcome === 'lost' ? { followedUntil: t.endedAt } : { endedAt: t.endedAt }),
    serverStatus: t.serverStatus,
    lastEventId: t.lastEventId,
    eventsReceived: t.ids.length,
    streamEnded: t.streamEnded ?? false,
    reconnects: t.reconnects,
    reason: t.reason,
    ...(t.unanswered ? { unanswered: true } : {}),
  };
}
