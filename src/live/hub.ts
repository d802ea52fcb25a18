/**
 * The API's end of the live-text side channel: per turn, the partial text of the current LLM step,
 * fanned out to subscribers (SSE, WebSocket). Memory only, and only the latest (step, attempt) per
 * turn: the durable text is in workflow state, this is just what makes it appear while it is written.
 *
 * Chunks arrive best effort (see ./publisher.ts), so the hub normalizes them: listeners see exact
 * offsets, no duplicates, and a `reset` before the first chunk of a retried attempt. A chunk that
 * would leave a hole is dropped and the buffer marked `gap`; a client seeing that (or an offset it
 * does not expect) should wait for the final text instead.
 *
 * To follow a turn without missing or doubling text, call snapshot() and subscribe() in the same
 * synchronous block: chunks are ingested synchronously, so none can slip in between.
 *
 * Durable events pushed on the same channel (kinds `event` and `poll`) are kept per turn in an event
 * store (./turn-events.ts) and passed to subscribers once each, the first copy of an id winning.
 */
import { aboutToolCall, type LiveChunk } from './chunk';
import { createTurnEventStore, type TurnEventStore } from './turn-events';

export interface LiveSnapshot {
  step: number;
  attempt: number;
  text: string;
  ended: boolean;
  /** Some text of this attempt never arrived (or arrived out of order); `text` is only a prefix. */
  gap: boolean;
  /** The text reached maxTextChars; the rest is not kept. */
  truncated: boolean;
}

export type LiveListener = (chunk: LiveChunk) => void;

export interface LiveTextHub {
  ingest(chunks: readonly LiveChunk[]): void;
  /**
   * Listens for normalized chunks of a turn (also before its first chunk); returns the unsubscribe.
   * `onInterrupted` is called when chunks may have been lost on the way here (see interrupted()).
   */
  subscribe(turnId: string, listener: LiveListener, onInterrupted?: () => void): () => void;
  /**
   * The source of chunks was interrupted (the bus's listening connection dropped or came back): some
   * chunks of any turn may never arrive. Tells every subscriber, so streams read their turns at once.
   */
  interrupted(): void;
  snapshot(turnId: string): LiveSnapshot | undefined;
  /**
   * The turn's latest notice while it still holds (no later attempt or step has sent text since), so a
   * client that joins during a retry's backoff hears why it waits.
   */
  lastNotice(turnId: string): LiveChunk | undefined;
  /** The turn's pushed durable events (see ./turn-events.ts); read them in the block that subscribes, like snapshot(). */
  events: Pick<TurnEventStore, 'read' | 'streamView' | 'expect' | 'justEnded' | 'endOf' | 'memoryOf'>;
  /** Turns with a buffer. */
  size(): number;
  /** Listeners subscribed across all turns (open streams following live text). */
  subscribers(): number;
  close(): void;
}

export interface LiveTextHubOptions {
  /** How long an ended step's text stays readable (late subscribers, reconnects). */
  retainMs?: number;
  maxTurns?: number;
  /** Per step, in UTF-16 code units. */
  maxTextChars?: number;
  /** A turn without chunks for this long is dropped even if its step never ended (worker died). */
  idleMs?: number;
  /** Bounds of the durable events kept (see TurnEventStoreOptions). */
  maxEventsPerTurn?: number;
  maxEventChars?: number;
  /** For tests. */
  now?: () => number;
}

interface StepText extends LiveSnapshot {
  endedAt: number;
  touchedAt: number;
}

export function createLiveTextHub(opts: LiveTextHubOptions = {}): LiveTextHub {
  const retainMs = opts.retainMs ?? 60_000;
  const maxTurns = Math.max(1, opts.maxTurns ?? 10_000);
  const maxTextChars = opts.maxTextChars ?? 256 * 1024;
  const idleMs = opts.idleMs ?? 10 * 60_000;
  const now = opts.now ?? Date.now;
  /** Insertion order is recency order: a touched turn is moved to the end, the first is the oldest. */
  const turns = new Map<string, StepText>();
  const listeners = new Map<string, Set<LiveListener>>();
  const interruptions = new Set<() => void>();
  /** Per turn, the latest notice and when it came; dropped when a later attempt speaks, or after idleMs. */
  const notices = new Map<string, { chunk: LiveChunk; at: number }>();
  const store = createTurnEventStore({
    retainMs,
    idleMs,
    maxTurns,
    now,
    ...(opts.maxEventsPerTurn !== undefined ? { maxEventsPerTurn: opts.maxEventsPerTurn } : {}),
    ...(opts.maxEventChars !== undefined ? { maxChars: opts.maxEventChars } : {}),
  });
  let sweeper: NodeJS.Timeout | undefined;
  let closed = false;

  const expired = (b: StepText, t: number): boolean =>
    (b.ended && t - b.endedAt >= retainMs) || (!b.ended && t - b.touchedAt >= idleMs);

  const sweep = (): void => {
    const t = now();
    for (const [turnId, b] of turns) if (expired(b, t)) turns.delete(turnId);
    for (const [turnId, n] of notices) if (t - n.at >= idleMs) notices.delete(turnId);
    store.sweep();
    if (turns.size === 0 && notices.size === 0 && store.size() === 0 && sweeper) {
      clearInterval(sweeper);
      sweeper = undefined;
    }
  };

  const ensureSweeper = (): void => {
    if (sweeper || closed) return;
    // Often enough for retainMs to hold roughly; snapshot() checks expiry exactly anyway.
    sweeper = setInterval(sweep, Math.min(Math.max(Math.floor(retainMs / 2), 10), 5_000));
    sweeper.unref();
  };

  const emit = (turnId: string, chunk: LiveChunk): void => {
    const set = listeners.get(turnId);
    if (!set) return;
    for (const listener of [...set]) {
      try {
        listener(chunk);
      } catch {
        // One broken subscriber must not starve the others.
      }
    }
  };

  const ingestOne = (c: LiveChunk): void => {
    const t = now();
    let b = turns.get(c.turnId);
    if (b && expired(b, t)) {
      turns.delete(c.turnId);
      b = undefined;
    }
    // The memory a turn handed on is the API's alone: for the next message of its session, not for streams.
    if (c.kind === 'memory') {
      if (c.memory) store.handOn(c.turnId, c.memory);
      return;
    }
    if (c.kind === 'event' || c.kind === 'poll') {
      if (!store.add(c)) return;
      ensureSweeper();
      emit(c.turnId, c);
      return;
    }
    // Progress and notices of a tool call are about no step's text: they go to whoever listens now, nothing is kept.
    if (aboutToolCall(c)) {
      emit(c.turnId, c);
      return;
    }
    if (b && (c.step < b.step || (c.step === b.step && c.attempt < b.attempt))) return;
    // A notice changes no text: it goes to whoever listens now, and is kept for who joins until a
    // later attempt speaks.
    if (c.kind === 'notice') {
      notices.delete(c.turnId);
      notices.set(c.turnId, { chunk: c, at: t });
      while (notices.size > maxTurns) {
        const oldest = notices.keys().next().value;
        if (oldest === undefined) break;
        notices.delete(oldest);
      }
      ensureSweeper();
      emit(c.turnId, c);
      return;
    }
    const said = notices.get(c.turnId)?.chunk;
    if (said && (c.step > said.step || c.attempt > said.attempt)) notices.delete(c.turnId);
    if (!b || c.step > b.step || c.attempt > b.attempt) {
      b = { step: c.step, attempt: c.attempt, text: '', ended: false, gap: false, truncated: false, endedAt: 0, touchedAt: t };
      // Any attempt after the first may follow text a client already shows: tell it to discard that.
      if (c.attempt > 1) emit(c.turnId, { turnId: c.turnId, step: c.step, attempt: c.attempt, kind: 'reset', offset: 0, text: '' });
    }
    // Re-inserting keeps the map in recency order for the maxTurns eviction.
    turns.delete(c.turnId);
    turns.set(c.turnId, b);
    b.touchedAt = t;
    while (turns.size > maxTurns) {
      const oldest = turns.keys().next().value;
      if (oldest === undefined) break;
      turns.delete(oldest);
    }
    ensureSweeper();

    if (c.kind === 'reset') return; // the new buffer (and its reset) is all a reset means
    if (c.kind === 'end') {
      if (b.ended) return;
      if (c.offset > b.text.length && !b.truncated) b.gap = true; // the tail never arrived
      b.ended = true;
      b.endedAt = t;
      emit(c.turnId, { turnId: c.turnId, step: b.step, attempt: b.attempt, kind: 'end', offset: b.text.length, text: '' });
      return;
    }
    if (b.ended || b.truncated) return;
    const known = b.text.length;
    if (c.offset > known) {
      b.gap = true;
      return;
    }
    // An overlap repeats text already known: keep only what is new.
    let fresh = c.text.slice(known - c.offset);
    if (fresh === '') return;
    if (known + fresh.length > maxTextChars) {
      fresh = fresh.slice(0, Math.max(0, maxTextChars - known));
      b.truncated = true;
      if (fresh === '') return;
    }
    b.text += fresh;
    emit(c.turnId, { turnId: c.turnId, step: b.step, attempt: b.attempt, kind: 'delta', offset: known, text: fresh });
  };

  return {
    ingest(chunks) {
      if (closed) return;
      for (const c of chunks) ingestOne(c);
    },

    subscribers() {
      let n = 0;
      for (const set of listeners.values()) n += set.size;
      return n;
    },

    subscribe(turnId, listener, onInterrupted) {
      let set = listeners.get(turnId);
      if (!set) {
        set = new Set();
        listeners.set(turnId, set);
      }
      set.add(listener);
      // A function object per subscription, so one callback given twice is two subscriptions.
      const interrupt = onInterrupted ? () => onInterrupted() : undefined;
      if (interrupt) interruptions.add(interrupt);
      return () => {
        if (interrupt) interruptions.delete(interrupt);
        const current = listeners.get(turnId);
        if (!current) return;
        current.delete(listener);
        if (current.size === 0) listeners.delete(turnId);
      };
    },

    snapshot(turnId) {
      const b = turns.get(turnId);
      if (!b) return undefined;
      if (expired(b, now())) {
        turns.delete(turnId);
        return undefined;
      }
      return { step: b.step, attempt: b.attempt, text: b.text, ended: b.ended, gap: b.gap, truncated: b.truncated };
    },

    lastNotice(turnId) {
      const n = notices.get(turnId);
      if (!n) return undefined;
      if (now() - n.at >= idleMs) {
        notices.delete(turnId);
        return undefined;
      }
      return n.chunk;
    },

    events: {
      read: (turnId, afterId) => store.read(turnId, afterId),
      streamView: (turnId, afterId) => store.streamView(turnId, afterId),
      justEnded: (owner, sessionId, withinMs) => store.justEnded(owner, sessionId, withinMs),
      endOf: (turnId) => store.endOf(turnId),
      memoryOf: (turnId) => store.memoryOf(turnId),
      expect(turnId, turn, position) {
        if (closed) return;
        store.expect(turnId, turn, position);
        ensureSweeper();
      },
    },

    interrupted() {
      for (const interrupt of [...interruptions]) {
        try {
          interrupt();
        } catch {
          // One broken subscriber must not starve the others.
        }
      }
    },

    size: () => turns.size,

    close() {
      closed = true;
      if (sweeper) clearInterval(sweeper);
      sweeper = undefined;
      turns.clear();
      notices.clear();
      store.clear();
      listeners.clear();
      interruptions.clear();
    },
  };
}
