/**
 * Follows one turn: its durable events (from a given event id on) merged with its live LLM text, as one
 * async iterable. SSE writes it; the WebSocket fans it out. This is the one place that decides their order.
 *
 * Durable events come from two places. The workflow's sink pushes a copy of each one through the live
 * channel into the hub (docs/decisions/0015-durable-events-pushed.md); the follower delivers those in
 * id order without asking Temporal. It reads the turn from the gateway (a workflow query) only when the
 * pushes cannot be trusted to be complete: before the hub has shown any event of the turn (another
 * replica's worker, a restarted API, no live channel), when the ids it holds have a hole (a lost push,
 * an event too large to carry), at once when the hub says its source was interrupted (the bus's
 * listening connection dropped or came back: pushes may be lost without a visible hole), and after
 * `quietPollMs` without news, as a safety net for a lost last event. Ids are dense per turn, so a hole is always visible; the first copy of an id wins.
 *
 * Ordering: live text of step s is held until the durable `status` event `calling_llm` of step s has
 * been delivered, so a client never sees a step's text before the events that lead to it (the end of
 * the previous step's tool calls, the step starting). Without pushed events, live chunks arrive long
 * before the next poll would find that event, so a held chunk wakes the poll early; with them, the
 * event is normally pushed before its step's text (one publisher, in order) and a held chunk waits
 * `pollMs` for it before polling.
 */
import { aboutToolCall, type LiveChunk } from '../live/chunk';
import { FINAL_EVENT_STATUS } from '../live/turn-events';
import type { LiveTextHub } from '../live/hub';
import { TERMINAL_STATUSES, type TurnEvent, type TurnState } from '../shared/turn';
import type { WaitingView } from './contract';
import type { TurnGateway } from './gateway';

export type FeedItem =
  | { type: 'event'; event: TurnEvent }
  /** A `delta` or `reset` chunk, normalized by the hub; the first may be the step's text so far (offset 0). */
  | { type: 'live'; chunk: LiveChunk }
  /** A queued turn: what it waits for, whenever that changes (not durable, no event id). */
  | { type: 'waiting'; waiting: WaitingView }
  | { type: 'end'; outcome: FeedOutcome };

/**
 * `finished`: the turn ended and all its events were delivered; `foreign`: `accept` refused it;
 * `gone`: not found (after `missingPolls` tries); `stopped`: stop() was called.
 */
export type FeedOutcome = 'finished' | 'foreign' | 'gone' | 'stopped';

export interface TurnFeed extends AsyncIterable<FeedItem> {
  /** The live text delivered so far of the current step and attempt as one chunk at offset 0, for late joiners. */
  liveSnapshot(): LiveChunk | undefined;
  /** Ends the feed (it yields `end: stopped`) and lets go of the hub. */
  stop(): void;
}

export interface FollowerDeps {
  gateway: Pick<TurnGateway, 'getTurn'>;
  live?: Pick<LiveTextHub, 'snapshot' | 'subscribe' | 'lastNotice' | 'events'>;
}

export interface FollowOptions {
  turnId: string;
  /** Events up to this id are not delivered (the client has them). */
  after?: number;
  /** The turn as already read (with its events after `after`); saves the first poll. */
  first?: TurnState;
  /** Poll interval while events come. */
  pollMs: number;
  /** A turn with nothing new is polled less often, doubling up to this; default pollMs. */
  maxIdlePollMs?: number;
  /** Polls that may find no turn before the feed ends `gone`; default 0. */
  missingPolls?: number;
  /** Checked on every read; false ends the feed `foreign` before any of its events leaves. */
  accept?: (state: TurnState) => boolean;
  /** A failed poll (Temporal blip): the feed keeps its place and tries again. */
  onPollError?: (err: unknown) => void;
  /** While the turn is queued (its last status is phase `queued`), asked every `waitingCheckMs` what it waits for. */
  waitingOn?: (state: TurnState) => Promise<WaitingView | undefined>;
  /** Default 1000: each check costs two Temporal queries (the session, the turn ahead). */
  waitingCheckMs?: number;
  /**
   * While events are pushed, how long without news before the turn is read anyway (a lost push of its
   * last event would otherwise hold the stream open); doubles up to 8× while nothing changes. Default 2000.
   */
  quietPollMs?: number;
  /** How long a stream of a turn the API just submitted waits for its first push before reading Temporal. Default 250. */
  expectedPushGraceMs?: number;
}

/** How long a stream of a turn the API just submitted waits for its first push before reading Temporal. */
const EXPECTED_PUSH_GRACE_MS = 250;

/** Early polls per held step: enough for one that raced the workflow task, bounded if the event never shows. */
const MAX_EARLY_POLLS = 3;

export function followTurn(deps: FollowerDeps, opts: FollowOptions): TurnFeed {
  const { turnId, pollMs } = opts;
  const maxIdlePollMs = Math.max(pollMs, opts.maxIdlePollMs ?? pollMs);
  let stopped = false;
  let lastId = opts.after ?? 0;
  /** The highest step whose `calling_llm` event the client has (delivered here, or before `after`). */
  let durableStep = 0;
  /** Live chunks not yet delivered, in hub order (steps never go back). */
  const pending: LiveChunk[] = [];
  let released: { step: number; attempt: number; text: string } | undefined;
  let pollSoon = false;
  let early = { step: 0, polls: 0 };
  let wake: (() => void) | undefined;
  /** The turn's last delivered status is phase `queued`: it waits for the session's turn ahead. */
  let queued = false;
  const waiting = { checkedAt: 0, last: '' };
  const quietPollMs = Math.max(pollMs, opts.quietPollMs ?? 2_000);
  const expectedPushGraceMs = opts.expectedPushGraceMs ?? EXPECTED_PUSH_GRACE_MS;
  /** Pushed events not delivered yet, by id; and the highest id known to exist (pushed or hinted). */
  const pushed = new Map<number, TurnEvent>();
  let knownId = 0;
  /** The hub has shown events of this turn: polls are the fallback, not the feed. */
  let pushing = false;
  /** Nothing leaves before a read of the turn passed `accept` (pushed events carry no owner check of their own). */
  let accepted = !opts.accept;
  let quiet = quietPollMs;
  /** The API expects the turn's pushes but none has come yet: the first read waits a little for them. */
  let expectedOnly = false;
  let nextPollAt = 0;
  let lastPollAt = 0;

  const takePushed = (events: readonly TurnEvent[], lastKnown: number): void => {
    for (const e of events) if (e.id > lastId && !pushed.has(e.id)) pushed.set(e.id, e);
    knownId = Math.max(knownId, lastKnown);
    // A turn the API only expects (just submitted, nothing pushed yet) is not proof the pushes flow.
    if (knownId > 0) pushing = true;
  };
  /** A pushed event is next in line. */
  const pushReady = (): boolean => accepted && pushed.has(lastId + 1);
  /** An event is known to exist beyond the next one we hold: a hole only a read of the turn can fill. */
  const gap = (): boolean => accepted && knownId > lastId && !pushed.has(lastId + 1);

  const onChunk = (c: LiveChunk): void => {
    if (stopped || c.kind === 'end') return;
    if (c.kind === 'event' || c.kind === 'poll') {
      takePushed(c.event ? [c.event] : [], c.event?.id ?? c.offset);
      wake?.();
      return;
    }
    pending.push(c);
    // Text arriving proves the pushes arrive: the safety-net read waits for a quiet spell counted from
    // now, at its shortest. Silence after text (its source died) is then found within quietPollMs,
    // not after a back-off that grew during a long step.
    if (pushing && (aboutToolCall(c) || c.step <= durableStep)) {
      quiet = quietPollMs;
      nextPollAt = Math.max(nextPollAt, Date.now() + quietPollMs);
    }
    if (!aboutToolCall(c) && c.step > durableStep) {
      if (early.step !== c.step) early = { step: c.step, polls: 0 };
      if (pollSoon || early.polls >= MAX_EARLY_POLLS) return;
      early.polls++;
      // Pushed events normally precede their step's text: give the push a poll interval to come.
      if (pushing) nextPollAt = Math.min(nextPollAt, Date.now() + pollMs);
      else pollSoon = true;
    }
    wake?.();
  };

  /** Chunks may have been lost on their way to the hub (its bus reconnected): read the turn now, not after the quiet spell. */
  const onInterrupted = (): void => {
    if (stopped) return;
    pollSoon = true;
    quiet = quietPollMs;
    wake?.();
  };

  let unsubscribe = (): void => {};
  if (deps.live && !(opts.first && TERMINAL_STATUSES.includes(opts.first.status))) {
    // Snapshot and subscription in one synchronous block: no chunk can fall between them (see src/live/hub.ts).
    const snap = deps.live.snapshot(turnId);
    const notice = deps.live.lastNotice(turnId);
    const held = deps.live.events.read(turnId, lastId);
    unsubscribe = deps.live.subscribe(turnId, onChunk, onInterrupted);
    if (held) takePushed(held.events, held.lastKnownId);
    // Just submitted through this API: its first push normally comes within milliseconds of the turn's
    // start, and a query now would wait for the turn's first workflow task to finish.
    expectedOnly = held !== undefined && held.lastKnownId === 0;
    if (snap?.text) onChunk({ turnId, step: snap.step, attempt: snap.attempt, kind: 'delta', offset: 0, text: snap.text });
    // The hub keeps a notice only until a later attempt speaks: one still held came after that text.
    if (notice) onChunk(notice);
  }

  const stop = (): void => {
    if (stopped) return;
    stopped = true;
    unsubscribe();
    wake?.();
  };

  function* release(): Generator<FeedItem> {
    // Progress reports and notices of tool calls are not about a step's text: they go out as they come.
    while (!stopped && pending.length > 0 && (aboutToolCall(pending[0] as LiveChunk) || (pending[0] as LiveChunk).step <= durableStep)) {
      const c = pending.shift() as LiveChunk;
      if (c.kind === 'notice' || c.kind === 'progress') {
        yield { type: 'live', chunk: c };
        continue;
      }
      if (!released || released.step !== c.step || released.attempt !== c.attempt || c.kind === 'reset') {
        released = { step: c.step, attempt: c.attempt, text: '' };
      }
      if (c.kind === 'delta') released.text = released.text.slice(0, c.offset) + c.text;
      yield { type: 'live', chunk: c };
    }
  }

  /** Sleeps until `until()`, delivering live text that may go out meanwhile; a held chunk or a pushed event cuts it short. */
  async function* pause(until: () => number, allowEarly: boolean): AsyncGenerator<FeedItem> {
    for (;;) {
      yield* release();
      if (stopped || (allowEarly && (pollSoon || pushReady()))) return;
      const left = until() - Date.now();
      if (left <= 0) return;
      await new Promise<void>((resolve) => {
        const done = (): void => {
          clearTimeout(timer);
          wake = undefined;
          resolve();
        };
        const timer = setTimeout(done, left);
        wake = done;
      });
    }
  }

  /** One durable event goes out; true if it was the turn's last. */
  function* deliver(event: TurnEvent): Generator<FeedItem, boolean> {
    lastId = event.id;
    pushed.delete(event.id);
    yield { type: 'event', event };
    if (event.type === 'status') queued = event.data.phase === 'queued';
    if (event.type === 'status' && event.data.phase === 'calling_llm' && typeof event.data.step === 'number') {
      durableStep = Math.max(durableStep, event.data.step);
      yield* release();
    }
    return FINAL_EVENT_STATUS[event.type] !== undefined;
  }

  /** While queued, what the turn waits for, when that changed. */
  async function* checkWaiting(state: TurnState): AsyncGenerator<FeedItem> {
    if (!queued || !opts.waitingOn || Date.now() - waiting.checkedAt < (opts.waitingCheckMs ?? 1_000)) return;
    waiting.checkedAt = Date.now();
    const now = await opts.waitingOn(state).catch((err: unknown) => void opts.onPollError?.(err));
    const key = now ? JSON.stringify(now) : '';
    if (now && key !== waiting.last && !stopped) yield { type: 'waiting', waiting: now };
    if (now) waiting.last = key;
  }

  async function* run(): AsyncGenerator<FeedItem> {
    // A turn whose every event the hub holds needs no first read either (its owner came with them).
    let state: TurnState | null | undefined = opts.first ?? deps.live?.events.streamView(turnId, lastId);
    /** The latest read of the turn (for `waitingOn`). */
    let known: TurnState | undefined;
    let missing = 0;
    let delay = pollMs;
    try {
      while (!stopped) {
        const due = !accepted || Date.now() >= nextPollAt || pollSoon || (gap() && Date.now() >= lastPollAt + pollMs);
        if (state === undefined && due) {
          pollSoon = false;
          lastPollAt = Date.now();
          try {
            // Followed turns are mostly running: the gateway can skip its describe round trip.
            state = await deps.gateway.getTurn(turnId, lastId, { likelyRunning: true });
          } catch (err) {
            opts.onPollError?.(err);
            nextPollAt = Date.now() + Math.max(pollMs, 500);
            yield* pause(() => nextPollAt, false);
            continue;
          }
          if (stopped) break;
        }
        if (state === null) {
          if (++missing > (opts.missingPolls ?? 0)) {
            yield { type: 'end', outcome: 'gone' };
            return;
          }
          state = undefined;
          nextPollAt = Date.now() + pollMs;
          yield* pause(() => nextPollAt, false);
          continue;
        }
        const before = lastId;
        if (state) {
          if (opts.accept && !opts.accept(state)) {
            yield { type: 'end', outcome: 'foreign' };
            return;
          }
          accepted = true;
          // Text of steps already announced that arrived while we polled came before these events.
          yield* release();
          for (const event of state.events) {
            if (event.id <= lastId) continue;
            yield* deliver(event);
          }
          // The turn's last event ends the stream: text still held is dropped (the `text` event has it all).
          if (TERMINAL_STATUSES.includes(state.status)) {
            yield { type: 'end', outcome: 'finished' };
            return;
          }
          // `steps` counts the calling_llm events so far, including those before `after`.
          durableStep = Math.max(durableStep, state.steps ?? 0);
          yield* release();
          known = state;
          state = undefined;
          delay = lastId > before ? pollMs : Math.min(delay * 2, maxIdlePollMs);
          if (pushing) quiet = lastId > before ? quietPollMs : Math.min(quiet * 2, quietPollMs * 8);
          nextPollAt = Date.now() + (pushing ? quiet : expectedOnly ? Math.max(delay, expectedPushGraceMs) : delay);
        }
        // Pushed events, in id order, as far as they run without a hole.
        const fromPush = lastId;
        while (pushReady()) {
          if (yield* deliver(pushed.get(lastId + 1) as TurnEvent)) {
            yield { type: 'end', outcome: 'finished' };
            return;
          }
        }
        for (const id of pushed.keys()) if (id <= lastId) pushed.delete(id);
        if (lastId > fromPush) {
          // News: the safety-net read moves back.
          quiet = quietPollMs;
          nextPollAt = Math.max(nextPollAt, Date.now() + quiet);
        }
        if (known) yield* checkWaiting(known);
        const waitFor = (): number => (gap() ? Math.min(nextPollAt, lastPollAt + pollMs) : nextPollAt);
        const waitUntil = queued && opts.waitingOn ? () => Math.min(waitFor(), waiting.checkedAt + (opts.waitingCheckMs ?? 1_000)) : waitFor;
        yield* pause(waitUntil, true);
      }
      yield { type: 'end', outcome: 'stopped' };
    } finally {
      stop();
    }
  }

  const items = run();
  return {
    [Symbol.asyncIterator]: () => items,
    liveSnapshot: () =>
      released && released.text !== ''
        ? { turnId, step: released.step, attempt: released.attempt, kind: 'delta', offset: 0, text: released.text }
        : undefined,
    stop,
  };
}
