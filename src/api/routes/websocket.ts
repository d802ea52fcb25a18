/**
 * GET /ws: the WebSocket interface of seed 004 §2.1 on top of the durable turns.
 *
 * A connection belongs to one session of its (authenticated) user. Messages it sends become turns
 * through the same path as `POST /v1/sessions/:sessionId/messages` (rate limits, turn ids, 409/503);
 * every turn of the session, whoever started it, reaches all sockets of that session through the
 * session watchers (../session-watchers.ts). Sockets are pinged; a silent one is terminated.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import websocket from '@fastify/websocket';
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { RawData, WebSocket } from 'ws';
import type { LiveTextHub } from '../../live/hub';
import { sessionOfTurn } from '../../shared/ids';
import { wsMaxFrameBytes } from '../../shared/message-limits';
import { describeProblem, type ServerMessage, WsApprovePayload, WsCancelPayload, WsClientFrame, WsErrorCode, WsMessagePayload, WsQuery } from '../contract';
import { HttpError } from '../errors';
import type { TurnGateway } from '../gateway';
import { routeSchemas } from '../openapi';
import { SYSTEM_MESSAGES } from '../system-messages';
import { createSessionWatchers, type SessionListener } from '../session-watchers';
import type { Accepted, TurnService } from '../turns';

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

interface Conn extends SessionListener {
  meta: ConnectionMetadata;
  socket: WebSocket;
  token?: string;
  closed: boolean;
}

async function webSocket(app: FastifyInstance, deps: WebSocketOptions): Promise<void> {
  const pingIntervalMs = deps.pingIntervalMs ?? 15_000;
  const staleAfterMs = deps.staleAfterMs ?? 45_000;
  const conns = new Set<Conn>();
  let closing = false;
  /** Polls and reads in flight: closing waits for them, so none outlives the gateway's connection. */
  const inFlight = new Set<Promise<unknown>>();
  const track = (p: Promise<unknown>): void => {
    const settled = p.catch(() => undefined).finally(() => inFlight.delete(settled));
    inFlight.add(settled);
  };

  // Room for the longest message (not the ws default of 100 MiB); the documented limit is the same value.
  const maxFrameBytes = wsMaxFrameBytes(deps.maxMessageChars);
  await app.register(websocket, {
    options: { maxPayload: maxFrameBytes },
    // A socket error (client vanished mid-frame, ...) is routine: log it quietly and drop the socket.
    errorHandler: (err, socket, request) => {
      request.log.debug({ err }, 'websocket error');
      socket.terminate();
    },
  });

  // A frame over the limit makes ws close the socket with 1009 on its own; its sockets say why first.
  const server = app.websocketServer;
  if (server.options.WebSocket) server.options.WebSocket = explainingFrameLimit(server.options.WebSocket, maxFrameBytes);

  const watchers = createSessionWatchers({
    gateway: deps.gateway,
    ...(deps.live ? { live: deps.live } : {}),
    pollMs: deps.pollMs,
    log: app.log,
    track,
    waitingOn: (state) => deps.service.waitingOn(state),
  });

  const send = (conn: Conn, message: ServerMessage): void => {
    if (conn.closed || conn.socket.readyState !== conn.socket.OPEN) return;
    if (conn.socket.bufferedAmount > MAX_BUFFERED_BYTES) {
      conn.socket.terminate();
      return;
    }
    conn.socket.send(JSON.stringify(message));
  };

  const leave = (conn: Conn): void => {
    if (conn.closed) return;
    conn.closed = true;
    conns.delete(conn);
    watchers.leave(conn);
  };

  const errorOf = (err: unknown): { code: WsErrorCode; message: string } => {
    const known = err instanceof HttpError ? WsErrorCode.safeParse(err.code) : undefined;
    if (err instanceof HttpError && known?.success) return { code: known.data, message: err.message };
    // A code missing from WS_ERROR_CODES would be undocumented: a bug, answered as one.
    app.log.error({ err }, 'websocket: request failed');
    return { code: 'internal', message: 'The server could not complete the request.' };
  };

  /** Runs a request for a turn; a refusal is the service's HttpError, anything else means Temporal is unreachable. */
  const settle = async <T>(turnId: string, what: string, work: () => Promise<T>): Promise<{ ok: true; value: T } | { ok: false; code: WsErrorCode; message: string }> => {
    try {
      return { ok: true, value: await work() };
    } catch (err) {
      if (err instanceof HttpError) return { ok: false, ...errorOf(err) };
      app.log.warn({ err, turnId }, `websocket: ${what} failed`);
      return { ok: false, code: 'unavailable', message: 'The workflow service is unavailable; try again shortly.' };
    }
  };

  const onMessage = async (conn: Conn, data: RawData, isBinary: boolean): Promise<void> => {
    conn.meta.lastActiveAt = Date.now();
    const fail = (code: WsErrorCode, message: string, turnId?: string) =>
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
        await watchers.submitted(conn, accepted);
        return;
      }
      case 'cancel': {
        const parsed = WsCancelPayload.safeParse(payload);
        if (!parsed.success) return fail('invalid_message', describeProblem('payload', parsed.error));
        const { turnId } = parsed.data;
        const done = await settle(turnId, 'cancel', () => deps.service.cancel(conn.user, turnId));
        if (!done.ok) return fail(done.code, done.message, turnId);
        return send(conn, { type: 'status', payload: { state: 'processing', message: 'Cancelling', turnId, status: 'cancelling' } });
      }
      case 'approve': {
        // The rules of POST /v1/turns/:turnId/approvals/:toolCallId: the owner or an approver role decides.
        const parsed = WsApprovePayload.safeParse(payload);
        if (!parsed.success) return fail('invalid_message', describeProblem('payload', parsed.error));
        const { turnId, toolCallId, approve } = parsed.data;
        const done = await settle(turnId, 'approve', () => deps.service.decideApproval(conn.user, turnId, toolCallId, approve));
        if (!done.ok) return fail(done.code, done.message, turnId);
        return send(conn, { type: 'approval', payload: done.value });
      }
      default:
        return fail('unknown_type', `Unknown message type ${JSON.stringify(type.slice(0, 40))}; use message, cancel, approve or ping.`);
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
      sessionId,
      send: (message) => send(conn, message),
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
    watchers.join(conn, resumeFrom);
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
    watchers.stopAll();
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
 * `Base` (ws's socket class), whose sockets send an `error` frame `frame_too_large` before ws closes
 * them with 1009 (message too big) for a frame over `maxFrameBytes`: ws detects it from the frame's
 * header and calls `close(1009)` itself, with the socket still open for one more frame.
 */
function explainingFrameLimit(Base: typeof WebSocket, maxFrameBytes: number): typeof WebSocket {
  return class extends Base {
    override close(code?: number, data?: string | Buffer): void {
      if (code === 1009 && this.readyState === this.OPEN) {
        const frame: ServerMessage = {
          type: 'error',
          payload: { code: 'frame_too_large', message: `A frame may carry at most ${maxFrameBytes} bytes; the socket is closed (1009).` },
        };
        this.send(JSON.stringify(frame));
        super.close(code, data ?? 'frame too large');
        return;
      }
      super.close(code, data);
    }
  };
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
