/**
 * Who follows which turns for the WebSocket: one watcher per (user, tenant, session) in this process,
 * however many sockets listen to that session. It finds the session's running and queued turns (every
 * 4 × pollMs), follows each with the turn follower, and fans the messages out to every listener:
 * turns sent on this socket, another one, or over HTTP alike. It stops with its last listener.
 */
import type { UserContext } from '../shared/user';
import type { LiveTextHub } from '../live/hub';
import { TERMINAL_STATUSES, type TurnState } from '../shared/turn';
import { wsMessages } from './client-events';
import type { ServerMessage } from './contract';
import type { TurnGateway } from './gateway';
import { type FollowOptions, followTurn, type TurnFeed } from './turn-follower';
import { ownedBy } from './turns';

/** One socket, as a watcher sees it. */
export interface SessionListener {
  readonly user: UserContext;
  readonly sessionId: string;
  /** Per turn: events up to this id were already seen by the client (?lastEventId). */
  readonly skip: Map<string, number>;
  readonly closed: boolean;
  send(message: ServerMessage): void;
}

export interface SessionWatchersOptions {
  gateway: Pick<TurnGateway, 'getTurn' | 'getSession'>;
  live?: LiveTextHub;
  /** How often a followed turn is polled for new events; sessions are polled every 4 × pollMs. */
  pollMs: number;
  log: { warn(obj: object, msg: string): void; error(obj: object, msg: string): void };
  /** Registers work in flight, so closing the app can wait for it. */
  track(p: Promise<unknown>): void;
  /** What a queued turn waits for (see FollowOptions.waitingOn). */
  waitingOn?: FollowOptions['waitingOn'];
}

/** Finished turns remembered per watcher, so a late answer from a poll does not replay them. */
const MAX_DONE_TURNS = 1_000;
/** Polls of a turn that does not exist (yet) before it is given up. */
const MAX_MISSING_POLLS = 40;

interface LogEntry {
  eventId: number;
  message: ServerMessage;
}

interface Follower {
  turnId: string;
  /** Every durable message so far, for listeners that join while the turn runs. */
  log: LogEntry[];
  feed: TurnFeed;
}

interface Watcher {
  key: string;
  user: UserContext;
  sessionId: string;
  listeners: Set<SessionListener>;
  followers: Map<string, Follower>;
  done: Set<string>;
  stopped: boolean;
  wake?: () => void;
}

function sleeper() {
  let timer: NodeJS.Timeout | undefined;
  let resolve: (() => void) | undefined;
  return {
    sleep(ms: number): Promise<void> {
      return new Promise<void>((r) => {
        resolve = r;
        timer = setTimeout(r, ms);
      });
    },
    wake(): void {
      if (timer) clearTimeout(timer);
      resolve?.();
    },
  };
}

export type SessionWatchers = ReturnType<typeof createSessionWatchers>;

export function createSessionWatchers(opts: SessionWatchersOptions) {
  const watchers = new Map<string, Watcher>();
  const joined = new Map<SessionListener, Watcher>();

  const sendEntry = (l: SessionListener, turnId: string, entry: LogEntry): void => {
    if (entry.eventId <= (l.skip.get(turnId) ?? 0)) return;
    l.send(entry.message);
  };

  const markDone = (w: Watcher, turnId: string): void => {
    w.done.add(turnId);
    if (w.done.size > MAX_DONE_TURNS) {
      const oldest = w.done.values().next().value;
      if (oldest !== undefined) w.done.delete(oldest);
    }
  };

  /** Follows one turn of a session until it ends, fanning its events and live text out to the session's listeners. */
  const follow = (w: Watcher, turnId: string): void => {
    if (w.stopped || w.followers.has(turnId) || w.done.has(turnId)) return;
    const feed = followTurn(
      { gateway: opts.gateway, ...(opts.live ? { live: opts.live } : {}) },
      {
        turnId,
        pollMs: opts.pollMs,
        // A turn with nothing new (queued, a long tool call) is read less often until it moves again.
        maxIdlePollMs: opts.pollMs * 4,
        missingPolls: MAX_MISSING_POLLS,
        // Sessions are per user, so this holds; checked anyway: nobody else's events ever leave.
        accept: (state) => ownedBy(state, w.user),
        onPollError: (err) => opts.log.warn({ err, turnId }, 'websocket: polling turn failed; retrying'),
        ...(opts.waitingOn ? { waitingOn: opts.waitingOn } : {}),
      },
    );
    const follower: Follower = { turnId, log: [], feed };
    w.followers.set(turnId, follower);
    const run = async (): Promise<boolean> => {
      for await (const item of feed) {
        // Ended, or not the caller's: settled. Not found (yet) or stopped: a later poll may find it.
        if (item.type === 'end') return item.outcome === 'finished' || item.outcome === 'foreign';
        for (const message of wsMessages(turnId, item)) {
          // Live text and waiting notes are of the moment: sent to who is connected, never replayed.
          if (item.type === 'live' || item.type === 'waiting') {
            for (const l of w.listeners) l.send(message);
            continue;
          }
          const entry = { eventId: item.event.id, message };
          follower.log.push(entry);
          for (const l of w.listeners) sendEntry(l, turnId, entry);
        }
      }
      return false;
    };
    opts.track(
      run()
        .catch((err: unknown) => {
          opts.log.error({ err, turnId }, 'websocket: following turn failed');
          return false;
        })
        .then((settled) => {
          feed.stop();
          if (w.followers.get(turnId) === follower) w.followers.delete(turnId);
          if (settled) markDone(w, turnId);
        }),
    );
  };

  /** Finds the session's running and queued turns (every 4 × pollMs while anyone listens). */
  const startDiscovery = (w: Watcher): void => {
    const nap = sleeper();
    w.wake = () => nap.wake();
    const loop = async () => {
      while (!w.stopped) {
        try {
          const view = await opts.gateway.getSession(w.user, w.sessionId);
          if (view && !w.stopped) for (const id of [view.activeTurnId, ...view.queuedTurnIds]) if (id) follow(w, id);
        } catch (err) {
          opts.log.warn({ err, sessionId: w.sessionId }, 'websocket: polling session failed; retrying');
        }
        if (w.stopped) break;
        await nap.sleep(opts.pollMs * 4);
      }
    };
    opts.track(loop());
  };

  const stopWatcher = (w: Watcher): void => {
    w.stopped = true;
    w.wake?.();
    for (const f of w.followers.values()) f.feed.stop();
    if (watchers.get(w.key) === w) watchers.delete(w.key);
  };

  /**
   * A turn the client asked for (?lastEventId, or a repeated idempotency key: `again`) that the watcher
   * does not follow: read once; followed if still running, else the rest of it to this listener only.
   */
  const resume = async (w: Watcher, l: SessionListener, turnId: string, from: number, again = false): Promise<void> => {
    let state: TurnState | null;
    try {
      state = await opts.gateway.getTurn(turnId, from);
    } catch (err) {
      opts.log.warn({ err, turnId }, 'websocket: reading turn to resume failed');
      follow(w, turnId);
      return;
    }
    if (!state || !ownedBy(state, w.user) || w.stopped || l.closed) return;
    if (w.followers.has(turnId) || (w.done.has(turnId) && !again)) return;
    if (!TERMINAL_STATUSES.includes(state.status)) {
      follow(w, turnId);
      return;
    }
    // Ended while the client was away: the rest of it to this listener only.
    for (const e of state.events) {
      if (e.id <= from) continue;
      for (const message of wsMessages(turnId, { type: 'event', event: e })) sendEntry(l, turnId, { eventId: e.id, message });
    }
    markDone(w, turnId);
  };

  return {
    /** Adds a listener to its session; turns in progress come from their first event (or after `resumeFrom`). */
    join(l: SessionListener, resumeFrom?: { turnId: string; from: number }): void {
      const key = `${l.user.tenant}\n${l.user.id}\n${l.sessionId}`;
      let w = watchers.get(key);
      const fresh = !w;
      if (!w) {
        w = { key, user: l.user, sessionId: l.sessionId, listeners: new Set(), followers: new Map(), done: new Set(), stopped: false };
        watchers.set(key, w);
      }
      if (resumeFrom) l.skip.set(resumeFrom.turnId, resumeFrom.from);
      w.listeners.add(l);
      joined.set(l, w);
      // Turns already followed: their events so far, then the live text the others have seen.
      for (const f of w.followers.values()) {
        for (const entry of f.log) sendEntry(l, f.turnId, entry);
        const live = f.feed.liveSnapshot();
        if (live) for (const message of wsMessages(f.turnId, { type: 'live', chunk: live })) l.send(message);
      }
      if (resumeFrom && !w.followers.has(resumeFrom.turnId)) opts.track(resume(w, l, resumeFrom.turnId, resumeFrom.from));
      if (fresh) startDiscovery(w);
    },

    /** The listener's own message became (or named again) this turn: follow it now, not at the next discovery. */
    async submitted(l: SessionListener, accepted: { turnId: string; created: boolean }): Promise<void> {
      const w = joined.get(l);
      if (!w || w.stopped) return;
      if (w.done.has(accepted.turnId) && !accepted.created) {
        // The same idempotency key again for a finished turn: this client gets its events once more.
        await resume(w, l, accepted.turnId, l.skip.get(accepted.turnId) ?? 0, true);
        return;
      }
      follow(w, accepted.turnId);
    },

    leave(l: SessionListener): void {
      const w = joined.get(l);
      if (!w) return;
      joined.delete(l);
      w.listeners.delete(l);
      if (w.listeners.size === 0) stopWatcher(w);
    },

    stopAll(): void {
      for (const w of [...watchers.values()]) stopWatcher(w);
    },
  };
}
