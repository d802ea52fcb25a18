/**
 * Follows one turn: its durable events (polled from the gateway, from a given event id on) merged with
 * its live LLM text (pushed by the LiveTextHub), as one async iterable. SSE writes it; the WebSocket
 * fans it out. This is the one place that decides their order.
 *
 * Ordering: live text of step s is held until the durable `status` event `calling_llm` of step s has
 * been delivered, so a client never sees a step's text before the events that lead to it (the end of
 * the previous step's tool calls, the step starting). Live chunks arrive long before the next poll
 * would find that event, so a held chunk wakes the poll early.
 */
import type { LiveChunk } from '../live/chunk';
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
  live?: Pick<LiveTextHub, 'snapshot' | 'subscribe' | 'lastNotice'>;
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
}

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

  const onChunk = (c: LiveChunk): void => {
    if (stopped || c.kind === 'end') return;
    pending.push(c);
    if (c.kind !== 'progress' && c.step > durableStep) {
      if (early.step !== c.step) early = { step: c.step, polls: 0 };
      if (pollSoon || early.polls >= MAX_EARLY_POLLS) return;
      early.polls++;
      pollSoon = true;
    }
    wake?.();
  };

  let unsubscribe = (): void => {};
  if (deps.live && !(opts.first && TERMINAL_STATUSES.includes(opts.first.status))) {
    // Snapshot and subscription in one synchronous block: no chunk can fall between them (see src/live/hub.ts).
    const snap = deps.live.snapshot(turnId);
    const notice = deps.live.lastNotice(turnId);
    unsubscribe = deps.live.subscribe(turnId, onChunk);
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
    // Progress reports are about tool calls, not a step's text: they go out as they come.
    while (!stopped && pending.length > 0 && ((pending[0] as LiveChunk).kind === 'progress' || (pending[0] as LiveChunk).step <= durableStep)) {
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

  /** Sleeps `ms`, delivering live text that may go out meanwhile; `early`: a held chunk cuts it short. */
  async function* pause(ms: number, allowEarly: boolean): AsyncGenerator<FeedItem> {
    const until = Date.now() + ms;
    for (;;) {
      yield* release();
      if (stopped || (allowEarly && pollSoon)) return;
      const left = until - Date.now();
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

  async function* run(): AsyncGenerator<FeedItem> {
    let state: TurnState | null | undefined = opts.first;
    let missing = 0;
    let delay = pollMs;
    try {
      while (!stopped) {
        if (state === undefined) {
          pollSoon = false;
          try {
            // Followed turns are mostly running: the gateway can skip its describe round trip.
            state = await deps.gateway.getTurn(turnId, lastId, { likelyRunning: true });
          } catch (err) {
            opts.onPollError?.(err);
            yield* pause(Math.max(pollMs, 500), false);
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
          yield* pause(pollMs, false);
          continue;
        }
        if (opts.accept && !opts.accept(state)) {
          yield { type: 'end', outcome: 'foreign' };
          return;
        }
        const before = lastId;
        // Text of steps already announced that arrived while we polled came before these events.
        yield* release();
        for (const event of state.events) {
          if (event.id <= lastId) continue;
          lastId = event.id;
          yield { type: 'event', event };
          if (event.type === 'status') queued = event.data.phase === 'queued';
          if (event.type === 'status' && event.data.phase === 'calling_llm' && typeof event.data.step === 'number') {
            durableStep = Math.max(durableStep, event.data.step);
            yield* release();
          }
        }
        // The turn's last event ends the stream: text still held is dropped (the `text` event has it all).
        if (TERMINAL_STATUSES.includes(state.status)) {
          yield { type: 'end', outcome: 'finished' };
          return;
        }
        // `steps` counts the calling_llm events so far, including those before `after`.
        durableStep = Math.max(durableStep, state.steps ?? 0);
        yield* release();
        if (queued && opts.waitingOn && Date.now() - waiting.checkedAt >= (opts.waitingCheckMs ?? 1_000)) {
          waiting.checkedAt = Date.now();
          const now = await opts.waitingOn(state).catch((err: unknown) => void opts.onPollError?.(err));
          const key = now ? JSON.stringify(now) : '';
          if (now && key !== waiting.last && !stopped) yield { type: 'waiting', waiting: now };
          if (now) waiting.last = key;
        }
        delay = lastId > before ? pollMs : Math.min(delay * 2, maxIdlePollMs);
        state = undefined;
        yield* pause(delay, true);
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
