/**
 * GET /ws: the WebSocket interface of seed 004 §2.1 on top of the durable turns.
 *
 * A connection belongs to one session of its (authenticated) user. Messages it sends become turns
 * through the same path as `POST /v1/sessions/:sessionId/messages` (rate limits, turn ids, 409/503);
 * every turn of the session, whoever started it (this socket, another one, plain HTTP), is followed by
 * polling its durable events, like the SSE route, and fanned out to all sockets of that session:
 * lossless `event` frames plus the seed's `status` / `text` / `system` messages, and the live LLM text
 * (`text_delta` / `text_reset`) from the LiveTextHub while it is written.
 *
 * One watcher per (user, tenant, session) in this process polls Temporal, however many sockets follow
 * it; it stops with the last of them. Sockets are pinged; a silent one is terminated.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import websocket from '@fastify/websocket';
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { RawData, WebSocket } from 'ws';
import type { UserContext } from '../../core/policy';
import type { LiveTextHub } from '../../live/hub';
import { sessionOfTurn } from '../../shared/ids';
import { TERMINAL_STATUSES, type TurnState } from '../../shared/turn';
import { wsMessages } from '../client-events';
import { describeProblem, type ServerMessage, WsCancelPayload, WsClientFrame, WsMessagePayload, WsQuery } from '../contract';
import { HttpError } from '../errors';
import type { TurnGateway } from '../gateway';
import { routeSchemas } from '../openapi';
import { SYSTEM_MESSAGES } from '../system-messages';
import { followTurn, type TurnFeed } from '../turn-follower';
import { type Accepted, ownedBy, type TurnService } from '../turn-service';

export interface WebSocketOptions {
  service: TurnService;
  /** Read-only: the watchers poll sessions and turns. */
  gateway: Pick<TurnGateway, 'getTurn' | 'getSession'>;
  live?: LiveTextHub;
  /** How often a followed turn is polled for new events; sessions are polled every 4 × pollMs. */
  pollMs: number;
  /** WebSocket ping frames; default 15 s. */
  pingIntervalMs?: number;
  /** A socket silent (no pong, no message) this long is terminated; default 45 s. */
  staleAfterMs?: number;
  maxMessageChars: number;
}

/** Seed 004 ConnectionMetadata, plus whose connection it is. */
export interface ConnectionMetadata {
  sessionId: string;
  clientId: string;
  connectedAt: number;
  lastActiveAt: number;
  userAgent?: string;
  userId: string;
  tenant: string;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The open WebSocket connections (seed 004 getActiveConnections), optionally of one session id. */
    activeConnections(sessionId?: string): ConnectionMetadata[];
  }
}

/** Past this much unsent data a client is too slow to follow its session: it is disconnected. */
const MAX_BUFFERED_BYTES = 16 * 1024 * 1024;
/** Finished turns remembered per watcher, so a late answer from a poll does not replay them. */
const MAX_DONE_TURNS = 1_000;
/** Polls of a turn that does not exist (yet) before it is given up. */
const MAX_MISSING_POLLS = 40;

interface Conn {
  meta: ConnectionMetadata;
  socket: WebSocket;
  user: UserContext;
  token?: string;
  /** Per turn: events up to this id were already seen by the client (?lastEventId). */
  skip: Map<string, number>;
  watcher?: Watcher;
  closed: boolean;
}

interface LogEntry {
  eventId: number;
  message: ServerMessage;
}

interface Follower {
  turnId: string;
  log: LogEntry[];
  feed: TurnFeed;
}

interface Watcher {
  key: string;
  user: UserContext;
  sessionId: string;
  conns: Set<Conn>;
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

async function webSocket(app: FastifyInstance, deps: WebSocketOptions): Promise<void> {
  const pingIntervalMs = deps.pingIntervalMs ?? 15_000;
  const staleAfterMs = deps.staleAfterMs ?? 45_000;
  const conns = new Set<Conn>();
  const watchers = new Map<string, Watcher>();
  let closing = false;
  /** Polls and reads in flight: closing waits for them, so none outlives the gateway's connection. */
  const inFlight = new Set<Promise<unknown>>();
  const track = (p: Promise<unknown>): void => {
    const settled = p.catch(() => undefined).finally(() => inFlight.delete(settled));
    inFlight.add(settled);
  };

  await app.register(websocket, {
    // Room for the longest message even if every character is JSON-escaped, not the ws default of 100 MiB.
    options: { maxPayload: Math.max(64 * 1024, deps.maxMessageChars * 6 + 4_096) },
    // A socket error (client vanished mid-frame, ...) is routine: log it quietly and drop the socket.
    errorHandler: (err, socket, request) => {
      request.log.debug({ err }, 'websocket error');
      socket.terminate();
    },
  });

  const send = (conn: Conn, message: ServerMessage): void => {
    if (conn.closed || conn.socket.readyState !== conn.socket.OPEN) return;
    if (conn.socket.bufferedAmount > MAX_BUFFERED_BYTES) {
      conn.socket.terminate();
      return;
    }
    conn.socket.send(JSON.stringify(message));
  };

  const sendEntry = (conn: Conn, turnId: string, entry: LogEntry): void => {
    if (entry.eventId <= (conn.skip.get(turnId) ?? 0)) return;
    send(conn, entry.message);
  };

  const markDone = (w: Watcher, turnId: string): void => {
    w.done.add(turnId);
    if (w.done.size > MAX_DONE_TURNS) {
      const oldest = w.done.values().next().value;
      if (oldest !== undefined) w.done.delete(oldest);
    }
  };

  /** Follows one turn of a session until it ends, fanning its events and live text out to the session's sockets. */
  const follow = (w: Watcher, turnId: string): void => {
    if (w.stopped || w.followers.has(turnId) || w.done.has(turnId)) return;
    const feed = followTurn(
      { gateway: deps.gateway, ...(deps.live ? { live: deps.live } : {}) },
      {
        turnId,
        pollMs: deps.pollMs,
        // A turn with nothing new (queued, a long tool call) is read less often until it moves again.
        maxIdlePollMs: deps.pollMs * 4,
        missingPolls: MAX_MISSING_POLLS,
        // Sessions are per user, so this holds; checked anyway: nobody else's events ever leave.
        accept: (state) => ownedBy(state, w.user),
        onPollError: (err) => app.log.warn({ err, turnId }, 'websocket: polling turn failed; retrying'),
      },
    );
    const follower: Follower = { turnId, log: [], feed };
    w.followers.set(turnId, follower);
    const run = async (): Promise<boolean> => {
      for await (const item of feed) {
        // Ended, or not the caller's: settled. Not found (yet) or stopped: a later poll may find it.
        if (item.type === 'end') return item.outcome === 'finished' || item.outcome === 'foreign';
        for (const message of wsMessages(turnId, item)) {
          if (item.type === 'live') {
            for (const c of w.conns) send(c, message);
            continue;
          }
          const entry = { eventId: item.event.id, message };
          follower.log.push(entry);
          for (const c of w.conns) sendEntry(c, turnId, entry);
        }
      }
      return false;
    };
    track(
      run()
        .catch((err: unknown) => {
          app.log.error({ err, turnId }, 'websocket: following turn failed');
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
          const view = await deps.gateway.getSession(w.user, w.sessionId);
          if (view && !w.stopped) for (const id of [view.activeTurnId, ...view.queuedTurnIds]) if (id) follow(w, id);
        } catch (err) {
          app.log.warn({ err, sessionId: w.sessionId }, 'websocket: polling session failed; retrying');
        }
        if (w.stopped) break;
        await nap.sleep(deps.pollMs * 4);
      }
    };
    track(loop());
  };

  const stopWatcher = (w: Watcher): void => {
    w.stopped = true;
    w.wake?.();
    for (const f of w.followers.values()) f.feed.stop();
    if (watchers.get(w.key) === w) watchers.delete(w.key);
  };

  /**
   * A turn the client asked for (?lastEventId, or a repeated idempotency key: `again`) that the watcher
   * does not follow: read once; followed if still running, else the rest of it to this client only.
   */
  const resume = async (w: Watcher, conn: Conn, turnId: string, from: number, again = false): Promise<void> => {
    let state: TurnState | null;
    try {
      state = await deps.gateway.getTurn(turnId, from);
    } catch (err) {
      app.log.warn({ err, turnId }, 'websocket: reading turn to resume failed');
      follow(w, turnId);
      return;
    }
    if (!state || !ownedBy(state, w.user) || w.stopped || conn.closed) return;
    if (w.followers.has(turnId) || (w.done.has(turnId) && !again)) return;
    if (!TERMINAL_STATUSES.includes(state.status)) {
      follow(w, turnId);
      return;
    }
    // Ended while the client was away: the rest of it to this client only.
    for (const e of state.events) {
      if (e.id <= from) continue;
      for (const message of wsMessages(turnId, { type: 'event', event: e })) sendEntry(conn, turnId, { eventId: e.id, message });
    }
    markDone(w, turnId);
  };

  const join = (conn: Conn, resumeFrom?: { turnId: string; from: number }): Watcher => {
    const key = `${conn.user.tenant}\n${conn.user.id}\n${conn.meta.sessionId}`;
    let w = watchers.get(key);
    const fresh = !w;
    if (!w) {
      w = { key, user: conn.user, sessionId: conn.meta.sessionId, conns: new Set(), followers: new Map(), done: new Set(), stopped: false };
      watchers.set(key, w);
    }
    if (resumeFrom) conn.skip.set(resumeFrom.turnId, resumeFrom.from);
    w.conns.add(conn);
    conn.watcher = w;
    // Turns already followed: from their first event (or where the client left off), then the live text.
    for (const f of w.followers.values()) {
      for (const entry of f.log) sendEntry(conn, f.turnId, entry);
      const live = f.feed.liveSnapshot();
      if (live) for (const message of wsMessages(f.turnId, { type: 'live', chunk: live })) send(conn, message);
    }
    if (resumeFrom && !w.followers.has(resumeFrom.turnId)) {
      const target = w;
      track(resume(target, conn, resumeFrom.turnId, resumeFrom.from));
    }
    if (fresh) startDiscovery(w);
    return w;
  };

  const leave = (conn: Conn): void => {
    if (conn.closed) return;
    conn.closed = true;
    conns.delete(conn);
    const w = conn.watcher;
    if (!w) return;
    w.conns.delete(conn);
    if (w.conns.size === 0) stopWatcher(w);
  };

  const errorOf = (err: unknown): { code: string; message: string } => {
    if (err instanceof HttpError) return { code: err.code, message: err.message };
    app.log.error({ err }, 'websocket: request failed');
    return { code: 'internal', message: 'The server could not complete the request.' };
  };

  const onMessage = async (conn: Conn, data: RawData, isBinary: boolean): Promise<void> => {
    conn.meta.lastActiveAt = Date.now();
    const fail = (code: string, message: string, turnId?: string) =>
      send(conn, { type: 'error', payload: { code, message, ...(turnId ? { turnId } : {}) } });
    if (isBinary) return fail('invalid_message', 'Send JSON text frames: { "type": "message", "payload": { "text": "..." } }');
    const raw = Array.isArray(data) ? Buffer.concat(data).toString('utf8') : Buffer.isBuffer(data) ? data.toString('utf8') : Buffer.from(data).toString('utf8');
    let frame: unknown;
    try {
      frame = JSON.parse(raw);
    } catch {
      return fail('invalid_json', 'The frame is not valid JSON.');
    }
    const envelope = WsClientFrame.safeParse(frame);
    if (!envelope.success) return fail('invalid_message', 'A frame is a JSON object { "type", "payload" }.');
    const { type, payload } = envelope.data;

    switch (type) {
      case 'ping':
        return send(conn, { type: 'pong', payload: { at: new Date().toISOString() } });
      case 'message': {
        const parsed = WsMessagePayload.safeParse(payload);
        if (!parsed.success) return fail('invalid_message', describeProblem('payload', parsed.error));
        const body = parsed.data.text.trim();
        if (body === '') return fail('invalid_message', 'payload.text: must not be empty');
        if (parsed.data.text.length > deps.maxMessageChars) {
          return fail('payload_too_large', `The message is too long: at most ${deps.maxMessageChars} characters.`);
        }
        let accepted: Accepted;
        try {
          // The rules of POST /v1/sessions/:id/messages: limits first, then the turn.
          await deps.service.admit(conn.user);
          accepted = await deps.service.submit(conn.user, {
            sessionId: conn.meta.sessionId,
            text: body,
            ...(parsed.data.idempotencyKey ? { idempotencyKey: parsed.data.idempotencyKey } : {}),
            ...(conn.token ? { token: conn.token } : {}),
          });
        } catch (err) {
          const e = errorOf(err);
          return fail(e.code, e.message);
        }
        send(conn, {
          type: 'status',
          payload: { state: 'processing', message: 'Working on it', turnId: accepted.turnId, position: accepted.position, created: accepted.created },
        });
        const w = conn.watcher;
        if (!w || w.stopped) return;
        if (w.done.has(accepted.turnId) && !accepted.created) {
          // The same idempotency key again for a finished turn: this client gets its events once more.
          await resume(w, conn, accepted.turnId, conn.skip.get(accepted.turnId) ?? 0, true);
          return;
        }
        follow(w, accepted.turnId);
        return;
      }
      case 'cancel': {
        const parsed = WsCancelPayload.safeParse(payload);
        if (!parsed.success) return fail('invalid_message', describeProblem('payload', parsed.error));
        const { turnId } = parsed.data;
        try {
          await deps.service.cancel(conn.user, turnId);
        } catch (err) {
          const e = err instanceof HttpError ? errorOf(err) : { code: 'unavailable', message: 'The workflow service is unavailable; try again shortly.' };
          if (!(err instanceof HttpError)) app.log.warn({ err, turnId }, 'websocket: cancel failed');
          return fail(e.code, e.message, turnId);
        }
        return send(conn, { type: 'status', payload: { state: 'processing', message: 'Cancelling', turnId, status: 'cancelling' } });
      }
      default:
        return fail('unknown_type', `Unknown message type ${JSON.stringify(type.slice(0, 40))}; use message, cancel or ping.`);
    }
  };

  const onConnection = async (socket: WebSocket, request: FastifyRequest): Promise<void> => {
    const user = request.user;
    if (!user || closing) {
      socket.close(closing ? 1001 : 1008, closing ? 'server shutting down' : 'authentication required');
      return;
    }
    const query = WsQuery.parse(request.query ?? {});
    const sessionId = query.sessionId ?? `ws-${randomBytes(9).toString('base64url')}`;
    const header = request.headers.authorization;
    const token = header ? header.replace(/^Bearer\s+/i, '') : query.access_token;
    const now = Date.now();
    const userAgent = request.headers['user-agent'];
    const conn: Conn = {
      meta: {
        sessionId,
        clientId: randomUUID(),
        connectedAt: now,
        lastActiveAt: now,
        ...(userAgent ? { userAgent: userAgent.slice(0, 200) } : {}),
        userId: user.id,
        tenant: user.tenant,
      },
      socket,
      user,
      ...(token ? { token } : {}),
      skip: new Map(),
      closed: false,
    };
    conns.add(conn);

    // Frames are handled one at a time, in order (two messages become turns in the order sent), and
    // those that arrive before the session is read wait for it.
    let ready!: () => void;
    let queue = new Promise<void>((r) => (ready = r));
    socket.on('message', (data, isBinary) => {
      conn.meta.lastActiveAt = Date.now();
      queue = queue
        .then(() => onMessage(conn, data, isBinary))
        .catch((err: unknown) => app.log.error({ err }, 'websocket: handling a frame failed'));
      track(queue);
    });
    socket.on('pong', () => {
      conn.meta.lastActiveAt = Date.now();
    });
    socket.on('close', () => leave(conn));

    let existing = false;
    try {
      existing = await deps.service.hasSession(user, sessionId);
    } catch (err) {
      request.log.warn({ err, sessionId }, 'websocket: reading the session failed');
      send(conn, { type: 'error', payload: { code: 'unavailable', message: 'The workflow service is unavailable; the session will be followed once it is back.' } });
    }
    if (conn.closed) {
      ready(); // frames it sent before it went are still handled
      return;
    }
    send(conn, {
      type: 'connection',
      payload: {
        state: existing ? 'reconnected' : 'connected',
        sessionId,
        clientId: conn.meta.clientId,
        message: existing ? `Reconnected to session ${sessionId}; the conversation continues.` : `Connected to session ${sessionId}.`,
      },
    });
    if (!existing) send(conn, { type: 'system', payload: { code: 'welcome', message: SYSTEM_MESSAGES.WELCOME } });

    let resumeFrom: { turnId: string; from: number } | undefined;
    if (query.lastEventId) {
      const at = query.lastEventId.lastIndexOf(':');
      const turnId = query.lastEventId.slice(0, at);
      // Only a turn of this session; whose it is, is checked when it is read.
      if (sessionOfTurn(turnId) === sessionId) resumeFrom = { turnId, from: Number(query.lastEventId.slice(at + 1)) };
    }
    join(conn, resumeFrom);
    ready();
  };

  // Heartbeats: ping everyone; whoever stayed silent too long is dropped.
  const pinger = setInterval(() => {
    for (const c of conns) if (c.socket.readyState === c.socket.OPEN) c.socket.ping();
  }, pingIntervalMs);
  pinger.unref();
  const cleanup = setInterval(
    () => {
      const now = Date.now();
      for (const c of [...conns]) {
        if (now - c.meta.lastActiveAt > staleAfterMs) {
          c.socket.terminate();
          leave(c);
        }
      }
    },
    Math.max(10, Math.min(pingIntervalMs, Math.floor(staleAfterMs / 3))),
  );
  cleanup.unref();

  // An upgrade refused before the plugin's own hooks ran (401 from the auth hook, 400 below) is
  // answered over the raw socket, which nothing else would close: a client keeping it open would hold
  // app.close() up. Upgrades that succeed are hijacked and never get here.
  app.addHook('onResponse', async (request) => {
    if (String(request.headers.upgrade ?? '').toLowerCase() === 'websocket') request.raw.socket?.destroy();
  });

  app.decorate('activeConnections', (sessionId?: string): ConnectionMetadata[] =>
    [...conns].filter((c) => sessionId === undefined || c.meta.sessionId === sessionId).map((c) => ({ ...c.meta })),
  );

  app.addHook('onClose', async () => {
    closing = true;
    clearInterval(pinger);
    clearInterval(cleanup);
    for (const w of [...watchers.values()]) stopWatcher(w);
    for (const c of [...conns]) {
      c.socket.terminate();
      leave(c);
    }
    // The loops stop at their next step; a gateway call in flight (maybe retrying) is awaited, briefly.
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all([...inFlight]), new Promise<void>((r) => (timer = setTimeout(r, 5_000)))]);
    clearTimeout(timer);
  });

  app.route({
    method: 'GET',
    url: '/ws',
    // A copy: the plugin writes into the schema object of websocket routes.
    schema: { ...routeSchemas.websocket },
    // Checked before the upgrade, so a bad query is an HTTP 400 like everywhere else.
    preHandler: async (request) => {
      const result = WsQuery.safeParse(request.query ?? {});
      if (!result.success) {
        throw new HttpError(400, 'invalid_request', describeProblem('query', result.error));
      }
    },
    handler: async (_request, reply: FastifyReply) =>
      reply.status(426).header('upgrade', 'websocket').send({ error: { code: 'upgrade_required', message: 'GET /ws needs a WebSocket upgrade.' } }),
    wsHandler: onConnection,
  });
}

/**
 * The plugin, registered without encapsulation (what fastify-plugin does, by the same symbols):
 * `activeConnections` is a decorator of the app itself, and the upgrade clean-up hook covers every
 * route an upgrade may be refused on.
 */
export const webSocketRoutes: FastifyPluginAsync<WebSocketOptions> = Object.assign(webSocket, {
  [Symbol.for('skip-override')]: true,
  [Symbol.for('fastify.display-name')]: 'websocket',
});
