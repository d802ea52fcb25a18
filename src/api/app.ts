import { createHash, randomBytes } from 'node:crypto';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import Fastify, { type FastifyBaseLogger, type FastifyError, type FastifyInstance, type FastifyReply, type FastifyServerOptions } from 'fastify';
import { type Logger, withSafeRequestLog } from '../logger';
import { turnId as makeTurnId } from '../shared/ids';
import { ApprovalBody, ApprovalParams, EventsQuery, IdempotencyKey, messageBody, parseRequest, SessionParams, TurnParams } from './contract';
import { TERMINAL_STATUSES, type TurnState } from '../shared/turn';
import { frameworkErrorCode, HttpError, notFound } from './errors';
import { SYSTEM_MESSAGES, toolErrorMessage } from './system-messages';
import type { LiveTextHub } from '../live/hub';
import type { LiveChunk } from '../live/chunk';
import { registerLiveIngest } from './routes/live-ingest';
import { registerOpenApi, routeSchemas } from './openapi';
import type { TurnGateway } from './gateway';
import { registerWebSocket } from './ws';
import type { UserContext } from '../core/policy';

declare module 'fastify' {
  interface FastifyRequest {
    user?: UserContext;
  }
}

export interface Authenticator {
  /** Verifies the Authorization header; throws HttpError(401) with a clear reason otherwise. */
  authenticate(authorization: string | undefined): Promise<UserContext>;
}

export interface AppDeps {
  gateway: TurnGateway;
  auth: Authenticator;
  /** Per-user and per-tenant limits on message submission (requests per minute). */
  rateLimits?: { userPerMinute: number; tenantPerMinute: number };
  logger?: Logger | false;
  /** Longest accepted message text, in characters. */
  maxMessageChars: number;
  /** How often an SSE stream polls the turn for new events. */
  ssePollMs: number;
  /** Interval of SSE keep-alive comments. */
  sseKeepAliveMs?: number;
  /**
   * Live LLM text. With `secret`, workers push deltas to POST /internal/live (see src/live);
   * streams then carry text_delta / text_reset events besides the durable ones.
   */
  live?: { hub: LiveTextHub; secret?: string };
  /** WebSocket heartbeats (GET /ws): ping interval and how long a silent socket may live. */
  ws?: { pingIntervalMs?: number; staleAfterMs?: number };
}

const parse = parseRequest;

/** The public view of a turn (ARCHITECTURE.md §9); events are served by the /events stream. */
function turnView(state: TurnState) {
  return {
    turnId: state.turnId,
    sessionId: state.sessionId,
    status: state.status,
    ...(state.text !== undefined ? { text: state.text } : {}),
    toolCalls: state.toolCalls,
    ...(state.error ? { error: state.error } : {}),
    steps: state.steps,
    lastEventId: state.events.at(-1)?.id ?? 0,
  };
}

export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const options: FastifyServerOptions = {
    bodyLimit: 1024 * 1024,
    // Turn ids reach ~110 characters (64-character session ids); the default limit is 100.
    routerOptions: { maxParamLength: 256 },
    // Router-level rejections (bad URL encoding, over-long parameters) get the same JSON error shape.
    frameworkErrors: (err, _request, reply) => {
      void (reply as unknown as FastifyReply).status(err.statusCode ?? 400).send({
        error: { code: err.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 'uri_too_long' : 'bad_url', message: err.message.slice(0, 200) },
      });
    },
  };
  // Request lines log the url with secret query parameters (the WebSocket ?access_token) redacted.
  const app: FastifyInstance = deps.logger
    ? Fastify({ ...options, loggerInstance: withSafeRequestLog(deps.logger) as unknown as FastifyBaseLogger })
    : Fastify({ ...options, logger: false });
  const MessageBody = messageBody(deps.maxMessageChars);

  // One error handler: everything is logged, only 4xx messages are shown, never a stack trace.
  app.setErrorHandler((err: FastifyError | HttpError, request, reply) => {
    if (err instanceof HttpError) {
      if (err.statusCode >= 500) request.log.error({ err: (err as { cause?: unknown }).cause ?? err }, err.message);
      return reply.status(err.statusCode).send({ error: { code: err.code, message: err.message } });
    }
    const status = typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 600 ? err.statusCode : 500;
    if (status < 500) {
      return reply.status(status).send({ error: { code: frameworkErrorCode(err), message: err.message } });
    }
    request.log.error({ err }, 'request failed');
    return reply.status(status === 503 ? 503 : 500).send({
      error: { code: status === 503 ? 'unavailable' : 'internal', message: 'The server could not complete the request.' },
    });
  });
  app.setNotFoundHandler((request, reply) =>
    reply.status(404).send({ error: { code: 'not_found', message: `No route for ${request.method} ${request.url.split('?')[0]}` } }),
  );
  // GET /openapi.json; the route schemas below document the API, they do not validate (see openapi.ts).
  // Internal, for workers only (a shared secret, not a user token); registered before the OpenAPI
  // plugin so it stays out of the public document.
  if (deps.live?.secret) registerLiveIngest(app, { hub: deps.live.hub, secret: deps.live.secret });
  await registerOpenApi(app);

  // Every /v1 route needs a verified caller; /healthz stays open for load balancers.
  app.addHook('onRequest', async (request) => {
    if (!request.url.startsWith('/v1/') && !request.url.startsWith('/ws')) return;
    // Browsers cannot set headers on a WebSocket: /ws also takes the token as ?access_token (never logged).
    const queryToken = (request.query as { access_token?: unknown } | undefined)?.access_token;
    const fromQuery = request.url.split('?')[0] === '/ws' && !request.headers.authorization && typeof queryToken === 'string';
    request.user = await deps.auth.authenticate(fromQuery ? `Bearer ${queryToken}` : request.headers.authorization);
  });
  const caller = (request: { user?: UserContext }): UserContext => {
    if (!request.user) throw new HttpError(401, 'missing_token', 'Authentication required');
    return request.user;
  };
  /** A turn as its owner sees it; anyone else (other user or tenant) gets the same 404 as for a missing turn. */
  const ownTurn = async (
    request: { user?: UserContext },
    turnId: string,
    afterEventId?: number,
    opts?: { likelyRunning?: boolean },
  ): Promise<TurnState> => {
    const user = caller(request);
    const state = await unavailableOnError(() => deps.gateway.getTurn(turnId, afterEventId, opts));
    if (!state || !state.owner || state.owner.id !== user.id || state.owner.tenant !== user.tenant) throw notFound(`turn ${turnId}`);
    return state;
  };

  // Message submission is what costs (LLM tokens, tool side effects): limited per user and per tenant,
  // in fixed one-minute windows. A user over budget does not consume the tenant's.
  const limits = deps.rateLimits ?? { userPerMinute: 60, tenantPerMinute: 600 };
  const perUser = new RateLimiterMemory({ keyPrefix: 'user', points: limits.userPerMinute, duration: 60 });
  const perTenant = new RateLimiterMemory({ keyPrefix: 'tenant', points: limits.tenantPerMinute, duration: 60 });
  const submissionLimits = async (request: { user?: UserContext }, reply: { header(k: string, v: string): unknown }) => {
    const user = caller(request);
    for (const [scope, limiter, key] of [
      ['user', perUser, `${user.tenant}/${user.id}`],
      ['tenant', perTenant, user.tenant],
    ] as const) {
      try {
        await limiter.consume(key);
      } catch (err) {
        if (!(err instanceof RateLimiterRes)) throw err;
        const seconds = Math.max(1, Math.ceil(err.msBeforeNext / 1000));
        reply.header('retry-after', String(seconds));
        throw new HttpError(429, 'rate_limited', `${SYSTEM_MESSAGES.RATE_LIMITED} (This ${scope} may send at most ${limiter.points} messages per minute; retry in ${seconds} s.)`);
      }
    }
  };

  /**
   * Starts the caller's turn for a validated message (POST /v1/sessions/:id/messages and WebSocket
   * `message` frames): turn id from the idempotency key, 503 when Temporal is down, 409 when busy.
   */
  const submitFor = async (user: UserContext, sessionId: string, text: string, key: unknown, token: string | undefined) => {
    // A client retrying with the same idempotency key gets the same turn, not a second one.
    // The key is scoped to the caller: two users sending the same key get two turns.
    const requestKey =
      key === undefined
        ? `${Date.now().toString(36)}${randomBytes(5).toString('hex')}`
        : createHash('sha256')
            .update(`${user.tenant}\n${user.id}\n${parse(IdempotencyKey, key, 'Idempotency-Key header')}`)
            .digest('hex')
            .slice(0, 24);
    const turnId = makeTurnId(sessionId, requestKey);
    const outcome = await unavailableOnError(() => deps.gateway.submitMessage({ turnId, sessionId, text, user, token }));
    if (outcome.kind === 'busy') {
      throw new HttpError(409, 'session_busy', `Too many messages are waiting in session ${sessionId}; retry when its current turns finish.`);
    }
    return { turnId, position: outcome.position, created: outcome.created };
  };

  app.post('/v1/sessions/:sessionId/messages', { schema: routeSchemas.postMessage, preHandler: submissionLimits }, async (request, reply) => {
    const { sessionId } = parse(SessionParams, request.params, 'path');
    const contentType = request.headers['content-type'] ?? '';
    if (!/^application\/json\s*(;|$)/i.test(contentType)) {
      throw new HttpError(415, 'unsupported_media_type', 'Send the message as application/json: { "text": "..." }');
    }
    const text = (request.body as { text?: unknown } | null)?.text;
    if (typeof text === 'string' && text.length > deps.maxMessageChars) {
      throw new HttpError(413, 'payload_too_large', `The message is too long: at most ${deps.maxMessageChars} characters.`);
    }
    const body = parse(MessageBody, request.body, 'body');
    const token = request.headers.authorization?.replace(/^Bearer\s+/i, '');
    const { turnId, ...outcome } = await submitFor(caller(request), sessionId, body.text, request.headers['idempotency-key'], token);
    return reply
      .status(outcome.created ? 202 : 200)
      .header('location', `/v1/turns/${turnId}`)
      .send({ sessionId, turnId, position: outcome.position, eventsUrl: `/v1/turns/${turnId}/events`, statusUrl: `/v1/turns/${turnId}` });
  });

  app.get('/v1/sessions/:sessionId/messages', { schema: routeSchemas.listMessages }, async (request) => {
    const { sessionId } = parse(SessionParams, request.params, 'path');
    const user = caller(request);
    const view = await unavailableOnError(() => deps.gateway.getSession(user, sessionId));
    if (!view) throw notFound(`session ${sessionId}`);
    return {
      sessionId,
      messages: view.messages,
      totalMessages: view.totalMessages,
      firstRetainedIndex: view.messages[0]?.index ?? view.totalMessages,
      ...(view.summary ? { summary: view.summary } : {}),
      ...(view.activeTurnId ? { activeTurnId: view.activeTurnId } : {}),
      queuedTurnIds: view.queuedTurnIds,
    };
  });

  app.get('/v1/turns/:turnId', { schema: routeSchemas.getTurn }, async (request) => {
    const { turnId } = parse(TurnParams, request.params, 'path');
    return turnView(await ownTurn(request, turnId));
  });

  app.get('/v1/turns/:turnId/events', { schema: routeSchemas.turnEvents }, async (request, reply) => {
    const { turnId } = parse(TurnParams, request.params, 'path');
    const query = parse(EventsQuery, request.query ?? {}, 'query');
    const header = request.headers['last-event-id'];
    const lastIdHeader = typeof header === 'string' && /^\d+$/.test(header) ? Number(header) : undefined;
    let lastId = lastIdHeader ?? query.after ?? 0;

    // A stream is usually opened on a running turn: read it by query first (one round trip).
    const first = await ownTurn(request, turnId, lastId, { likelyRunning: true });

    reply.hijack();
    const res = reply.raw;
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    res.write('retry: 1000\n\n');
    let closed = false;
    request.raw.on('close', () => {
      closed = true;
    });
    const keepAlive = setInterval(() => {
      if (!closed) res.write(': keep-alive\n\n');
    }, deps.sseKeepAliveMs ?? 15_000);

    const send = (state: TurnState): boolean => {
      for (const e of state.events) {
        if (e.id <= lastId) continue;
        const data: Record<string, unknown> = { ...e.data, turnId, at: e.at };
        if (e.type === 'tool_call_finished' && e.data['isError'] === true) {
          data['message'] = toolErrorMessage(String(e.data['name'] ?? 'a'), e.data['result']);
        }
        res.write(`id: ${e.id}\nevent: ${e.type}\ndata: ${JSON.stringify(data)}\n\n`);
        lastId = e.id;
      }
      return TERMINAL_STATUSES.includes(state.status) && state.events.every((e) => e.id <= lastId);
    };

    // Live text: deltas of the LLM step in progress, pushed as they arrive. They carry no SSE id
    // (Last-Event-ID keeps naming the last durable event); `offset` lets a client drop repeats, and
    // a (re)connect starts with everything streamed so far for the current step (offset 0).
    const hub = deps.live?.hub;
    let unsubscribe = () => {};
    if (hub && !TERMINAL_STATUSES.includes(first.status)) {
      const writeLive = (c: LiveChunk): void => {
        if (closed || res.writableEnded) return;
        if (c.kind === 'delta') {
          res.write(`event: text_delta\ndata: ${JSON.stringify({ turnId, step: c.step, attempt: c.attempt, offset: c.offset, text: c.text })}\n\n`);
        } else if (c.kind === 'reset') {
          res.write(`event: text_reset\ndata: ${JSON.stringify({ turnId, step: c.step, attempt: c.attempt, reason: 'llm_retry' })}\n\n`);
        }
      };
      // Snapshot and subscription in one synchronous block: no chunk can fall between them.
      const snap = hub.snapshot(turnId);
      unsubscribe = hub.subscribe(turnId, writeLive);
      if (snap && snap.text) writeLive({ turnId, step: snap.step, attempt: snap.attempt, kind: 'delta', offset: 0, text: snap.text });
    }

    try {
      let done = send(first);
      while (!done && !closed) {
        await sleep(deps.ssePollMs);
        if (closed) break;
        let state: TurnState | null;
        try {
          state = await deps.gateway.getTurn(turnId, lastId, { likelyRunning: true });
        } catch (err) {
          // Temporal blips must not kill the stream: the client keeps its place and we try again.
          request.log.warn({ err, turnId }, 'polling turn failed; retrying');
          await sleep(Math.max(deps.ssePollMs, 500));
          continue;
        }
        if (!state) break;
        done = send(state);
      }
    } finally {
      unsubscribe();
      clearInterval(keepAlive);
      res.end();
    }
  });

  /** Cancels one of the caller's turns (HTTP and WebSocket): 404 if not theirs, 409 once finished. */
  async function cancelFor(user: UserContext, turnId: string): Promise<void> {
    const state = await ownTurn({ user }, turnId);
    if (TERMINAL_STATUSES.includes(state.status)) {
      throw new HttpError(409, 'already_finished', `turn ${turnId} is already ${state.status}`);
    }
    await unavailableOnError(() => deps.gateway.cancelTurn(turnId));
  }

  // GET /ws (src/api/ws.ts): the same turns over a WebSocket; messages go through submitFor and its
  // limits, cancels through cancelFor.
  await registerWebSocket(app, {
    gateway: deps.gateway,
    ...(deps.live ? { live: deps.live.hub } : {}),
    pollMs: deps.ssePollMs,
    ...deps.ws,
    maxMessageChars: deps.maxMessageChars,
    submit: async (user, sessionId, text, idempotencyKey, token) => {
      await submissionLimits({ user }, { header: () => undefined });
      return await submitFor(user, sessionId, text, idempotencyKey, token);
    },
    cancel: cancelFor,
  });

  app.post('/v1/turns/:turnId/cancel', { schema: routeSchemas.cancelTurn }, async (request, reply) => {
    const { turnId } = parse(TurnParams, request.params, 'path');
    await cancelFor(caller(request), turnId);
    return reply.status(202).send({ turnId, status: 'cancelling' });
  });

  app.post('/v1/turns/:turnId/approvals/:toolCallId', { schema: routeSchemas.decideApproval }, async (request) => {
    const { turnId, toolCallId } = parse(ApprovalParams, request.params, 'path');
    const body = parse(ApprovalBody, request.body, 'body');
    const user = caller(request);
    const state = await unavailableOnError(() => deps.gateway.getTurn(turnId));
    // Same tenant only; whether this caller may decide (owner, or an approver role) is the workflow's call.
    if (!state || !state.owner || state.owner.tenant !== user.tenant) throw notFound(`turn ${turnId}`);
    const result = await unavailableOnError(() => deps.gateway.decideApproval(turnId, { toolCallId, approve: body.approve, approver: user }));
    if (result.kind === 'already_decided') throw new HttpError(409, 'already_decided', `tool call ${toolCallId} was already decided`);
    // Not pending, or not this caller's to decide: indistinguishable from outside, by design.
    if (result.kind !== 'decided') throw notFound(`pending approval ${toolCallId} of turn ${turnId}`);
    return { turnId, toolCallId, decision: result.decision };
  });

  app.get('/v1/tools', { schema: routeSchemas.listTools }, async () => {
    const catalog = await unavailableOnError(() => deps.gateway.catalog());
    return {
      tools: catalog.tools.map((t) => ({
        name: t.name,
        server: t.server,
        tool: t.tool,
        description: t.description,
        inputSchema: t.inputSchema,
        annotations: t.annotations,
      })),
      servers: catalog.servers,
    };
  });

  app.get('/v1/servers', { schema: routeSchemas.listServers }, async () => {
    const catalog = await unavailableOnError(() => deps.gateway.catalog());
    return { servers: catalog.servers };
  });

  app.get('/healthz', { schema: routeSchemas.healthz }, async (_request, reply) => {
    const temporal = await deps.gateway.temporalHealth();
    let mcp: { ok: boolean; servers: unknown[]; error?: string } = { ok: false, servers: [] };
    if (temporal.ok) {
      try {
        const catalog = await deps.gateway.catalog();
        mcp = { ok: catalog.servers.every((s) => s.state !== 'unavailable'), servers: catalog.servers };
      } catch (err) {
        mcp = { ok: false, servers: [], error: err instanceof Error ? err.message : String(err) };
      }
    } else {
      mcp.error = 'unknown: Temporal is unreachable';
    }
    const status = !temporal.ok ? 'down' : mcp.ok ? 'ok' : 'degraded';
    return reply.status(temporal.ok ? 200 : 503).send({ status, temporal, mcp });
  });

  return app;
}

/** Temporal being unreachable is the service's problem, not the caller's: answer 503, not 500. */
async function unavailableOnError<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof HttpError) throw err;
    const e = new HttpError(503, 'unavailable', `${SYSTEM_MESSAGES.MAINTENANCE} (The workflow service is unreachable; try again shortly.)`);
    (e as { cause?: unknown }).cause = err;
    throw e;
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

