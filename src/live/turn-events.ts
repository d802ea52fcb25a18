/**
 * The API's copy of each turn's durable events, as the workers' sinks pushed them (kind `event` on the
 * live channel, see ./chunk.ts). A stream reads them here instead of querying the workflow, which on
 * a closed turn makes a worker replay its whole history.
 *
 * A copy, never the record: pushes are best effort (a lost push is a hole in the ids, which readers
 * detect and fill from Temporal), bounded (per turn and overall), and dropped a while after the turn
 * ends. The first copy of an id wins: a workflow task that failed after its sink ran is retried and
 * emits the same events again, possibly with slightly later `at` timestamps.
 */
import type { PushedTurn, TurnEvent, TurnMemory, TurnState, TurnStatus } from '../shared/turn';
import type { LiveChunk } from './chunk';

export interface TurnEventsRead {
  /** Held events with an id above the one asked for, in id order; there may be holes. */
  events: TurnEvent[];
  /** The highest event id known to exist (held, or announced by a `poll` hint). */
  lastKnownId: number;
  /**
   * Turns of its session ahead of it when this API accepted it (the POST's `position`): only while
   * nothing of the turn has been pushed yet (afterwards its events say where it stands).
   */
  acceptedPosition?: number;
}

export interface TurnEventStore {
  /** Takes an `event` or `poll` chunk; false when it tells nothing new (a repeat, or a turn already let go). */
  add(chunk: LiveChunk): boolean;
  read(turnId: string, afterId: number): TurnEventsRead | undefined;
  /**
   * The API just started this turn for its owner: a stream opened before the first push arrives starts
   * from an empty view instead of a Temporal read. Changes nothing the pushes already said.
   * `position`: turns of the session ahead of it, as the API answered the submission.
   */
  expect(turnId: string, turn: PushedTurn, position?: number): void;
  /**
   * The turn as its events show it, for a stream's first read: owner, session, status (running or how
   * it ended), steps and the events after `afterId`; no tool calls or approvals. Only when every event
   * from id 1 on is held, so the answer is complete; otherwise undefined (ask Temporal).
   */
  streamView(turnId: string, afterId: number): TurnState | undefined;
  /**
   * The owner's latest turn in `sessionId` held here, when its final event came less than `withinMs`
   * ago: its session may not have recorded the end yet (events are pushed as the turn's last workflow
   * task runs; the session hears of it after that task completes).
   */
  justEnded(owner: { id: string; tenant: string }, sessionId: string, withinMs: number): string | undefined;
  /**
   * How a turn held here ended, once its final event came (`done`, `error`, `cancelled`): the turn is
   * over then, though its workflow may close a moment later.
   */
  endOf(turnId: string): TurnEnding | undefined;
  /** Keeps the memory a turn held here handed on as it ended (a `memory` chunk); false when the turn is not held. */
  handOn(turnId: string, memory: TurnMemory): boolean;
  /** The memory the turn handed on, once it did: the next turn of its session starts with it. */
  memoryOf(turnId: string): TurnMemory | undefined;
  /** Turns held. */
  size(): number;
  /** Drops expired turns now (the hub's sweeper calls it). */
  sweep(): void;
  clear(): void;
}

export interface TurnEventStoreOptions {
  /** How long a finished turn's events stay readable (streams opened just after the end). */
  retainMs: number;
  /** A turn without pushes for this long is dropped (its worker died, the pushes stopped). */
  idleMs: number;
  maxTurns: number;
  /** Events kept per turn; beyond it the oldest go, and the turn is read from Temporal from then on. */
  maxEventsPerTurn?: number;
  /** JSON characters of events held across all turns; beyond it the least recently pushed turns go. */
  maxChars?: number;
  now: () => number;
}

interface Held {
  sessionId?: string;
  owner?: { id: string; tenant: string };
  events: Map<number, TurnEvent>;
  lastKnownId: number;
  /** Set by `expect`: the turns ahead of it when the API accepted it. */
  position?: number;
  /** The lowest id still held may be above 1: older events were let go. */
  trimmed: boolean;
  chars: number;
  endedAt?: number;
  /** What the final event said. */
  end?: TurnEnding;
  /** The memory it handed on. */
  memory?: TurnMemory;
  touchedAt: number;
}

/** The status a turn's final event stands for: nothing follows these. */
/** How a turn ended, by its final event. */
export type TurnEnding = Extract<TurnStatus, 'completed' | 'failed' | 'cancelled'>;

export const FINAL_EVENT_STATUS: Partial<Record<TurnEvent['type'], TurnEnding>> = { done: 'completed', error: 'failed', cancelled: 'cancelled' };

export function createTurnEventStore(opts: TurnEventStoreOptions): TurnEventStore {
  const maxEventsPerTurn = opts.maxEventsPerTurn ?? 1_000;
  const maxChars = opts.maxChars ?? 32 * 1024 * 1024;
  /** Insertion order is recency order, as in the hub. */
  const turns = new Map<string, Held>();
  let chars = 0;

  const drop = (turnId: string): void => {
    const h = turns.get(turnId);
    if (!h) return;
    chars -= h.chars;
    turns.delete(turnId);
  };
  const expired = (h: Held, t: number): boolean =>
    (h.endedAt !== undefined && t - h.endedAt >= opts.retainMs) || t - h.touchedAt >= opts.idleMs;
  const live = (turnId: string): Held | undefined => {
    const h = turns.get(turnId);
    if (h && expired(h, opts.now())) {
      drop(turnId);
      return undefined;
    }
    return h;
  };
  /** The latest turn of each owner's session seen here (key: tenant, user, session). */
  const latestOfSession = new Map<string, string>();
  const sessionKey = (owner: { id: string; tenant: string }, sessionId: string): string => `${owner.tenant}\n${owner.id}\n${sessionId}`;
  const noteSession = (turnId: string, h: Held): void => {
    if (h.sessionId === undefined || !h.owner) return;
    const key = sessionKey(h.owner, h.sessionId);
    latestOfSession.delete(key);
    latestOfSession.set(key, turnId);
    // Bounded like the turns: the oldest sessions go first.
    while (latestOfSession.size > opts.maxTurns) {
      const oldest = latestOfSession.keys().next().value;
      if (oldest === undefined) break;
      latestOfSession.delete(oldest);
    }
  };
  const sorted = (h: Held, afterId: number): TurnEvent[] =>
    [...h.events.values()].filter((e) => e.id > afterId).sort((a, b) => a.id - b.id);

  return {
    add(c) {
      const id = c.kind === 'event' ? c.event?.id : c.kind === 'poll' ? c.offset : undefined;
      if (id === undefined) return false;
      const t = opts.now();
      let h = live(c.turnId);
      if (!h) h = { events: new Map(), lastKnownId: 0, trimmed: false, chars: 0, touchedAt: t };
      if (h.events.has(id) || (c.kind === 'poll' && id <= h.lastKnownId)) return false;
      turns.delete(c.turnId);
      turns.set(c.turnId, h);
      h.touchedAt = t;
      if (c.turn) {
        const fresh = h.sessionId === undefined;
        h.sessionId = c.turn.sessionId;
        if (c.turn.owner) h.owner = c.turn.owner;
        if (fresh) noteSession(c.turnId, h);
      }
      h.lastKnownId = Math.max(h.lastKnownId, id);
      if (c.kind === 'event' && c.event) {
        const size = JSON.stringify(c.event).length;
        h.events.set(id, c.event);
        h.chars += size;
        chars += size;
        const end = FINAL_EVENT_STATUS[c.event.type];
        if (end) {
          h.endedAt = t;
          h.end = end;
        }
        if (h.events.size > maxEventsPerTurn) {
          const oldest = Math.min(...h.events.keys());
          const gone = h.events.get(oldest);
          h.events.delete(oldest);
          h.trimmed = true;
          const freed = gone ? JSON.stringify(gone).length : 0;
          h.chars -= freed;
          chars -= freed;
        }
      }
      while (turns.size > opts.maxTurns || (chars > maxChars && turns.size > 1)) {
        const oldest = turns.keys().next().value;
        if (oldest === undefined) break;
        drop(oldest);
      }
      return true;
    },

    expect(turnId, turn, position) {
      if (live(turnId)) return;
      const h: Held = {
        ...turn,
        ...(position !== undefined ? { position } : {}),
        events: new Map(),
        lastKnownId: 0,
        trimmed: false,
        chars: 0,
        touchedAt: opts.now(),
      };
      turns.set(turnId, h);
      noteSession(turnId, h);
      while (turns.size > opts.maxTurns) {
        const oldest = turns.keys().next().value;
        if (oldest === undefined) break;
        drop(oldest);
      }
    },

    read(turnId, afterId) {
      const h = live(turnId);
      if (!h) return undefined;
      const accepted = h.lastKnownId === 0 && h.position !== undefined ? { acceptedPosition: h.position } : {};
      return { events: sorted(h, afterId), lastKnownId: h.lastKnownId, ...accepted };
    },

    streamView(turnId, afterId) {
      const h = live(turnId);
      // Complete only if ids 1..lastKnownId are all held (no hole, nothing trimmed, no hint unfilled).
      if (!h || h.trimmed || h.sessionId === undefined || h.events.size !== h.lastKnownId) return undefined;
      const all = sorted(h, 0);
      const last = all.at(-1);
      const steps = all.reduce((n, e) => (e.type === 'status' && e.data.phase === 'calling_llm' && typeof e.data.step === 'number' ? Math.max(n, e.data.step) : n), 0);
      return {
        turnId,
        sessionId: h.sessionId,
        ...(h.owner ? { owner: h.owner } : {}),
        status: (last && FINAL_EVENT_STATUS[last.type]) ?? 'running',
        toolCalls: [],
        events: all.filter((e) => e.id > afterId),
        steps,
      };
    },

    justEnded(owner, sessionId, withinMs) {
      const turnId = latestOfSession.get(sessionKey(owner, sessionId));
      const h = turnId ? live(turnId) : undefined;
      return h?.endedAt !== undefined && opts.now() - h.endedAt < withinMs ? turnId : undefined;
    },

    endOf: (turnId) => live(turnId)?.end,

    handOn(turnId, memory) {
      const h = live(turnId);
      if (!h) return false;
      const size = JSON.stringify(memory).length - (h.memory ? JSON.stringify(h.memory).length : 0);
      h.memory = memory;
      h.chars += size;
      chars += size;
      return true;
    },

    memoryOf: (turnId) => live(turnId)?.memory,

    size: () => turns.size,

    sweep() {
      const t = opts.now();
      for (const [turnId, h] of turns) if (expired(h, t)) drop(turnId);
    },

    clear() {
      latestOfSession.clear();
      turns.clear();
      chars = 0;
    },
  };
}
