import cors from '@fastify/cors';
import Fastify, { type FastifyBaseLogger, type FastifyError, type FastifyInstance, type FastifyReply, type FastifyServerOptions } from 'fastify';
import { DEFAULT_REDACTION, redact, type RedactionRules } from '../audit/redact';
import type { Policy } from '../shared/policy';
import type { UserContext } from '../shared/user';
import type { LiveChunk } from '../live/chunk';
import type { LiveTextHub } from '../live/hub';
import type { PushedTurn } from '../shared/turn';
import { type Logger, withSafeRequestLog } from '../logger';
import { frameworkErrorCode, HttpError } from './errors';
import type { TurnGateway } from './gateway';
import { registerOpenApi } from './openapi';
import { logContextHook } from './request-log-context';
import { answerUnmatched } from './unmatched';
import { answerClientError } from './client-errors';
import { needsUserToken } from './route-access';
import type { OAuthStore } from '../security/oauth-store';
import { approvalRoutes } from './routes/approvals';
import { catalogRoutes } from './routes/catalog';
import { oauthCallbackRoutes } from './routes/oauth-callback';
import { registerMetrics } from './routes/metrics';
import { type ConsoleOptions, consoleRoutes } from './routes/console';
import { eventRoutes } from './routes/events';
import { liveIngestRoutes } from './routes/live-ingest';
import { sessionRoutes } from './routes/sessions';
import { turnRoutes } from './routes/turns';
import { webSocketRoutes } from './routes/websocket';
import type { RateLimiters } from './rate-limits';
import { createTurnService } from './turns';
import { memoryWorkerReports, type WorkerReports } from '../health/reports';
import { workerReportRoutes } from './routes/worker-reports';
import { usageRoutes } from './routes/usage';
import type { UsageLedger } from '../usage/ledger';
import type { HostConfig } from '../config/host-schema';
import { mcpRoutes } from './mcp-server/route';
import { CODEC_COOKIE_ROUTES, codecCookieOf, type CodecRouteOptions, codecRoutes } from './routes/codec';
import './caller';

export interface Authenticator {
  /** Verifies the Authorization header; throws HttpError(401) with a clear reason otherwise. */
  authenticate(authorization: string | undefined): Promise<UserContext>;
}

export interface AppDeps {
  gateway: TurnGateway;
  auth: Authenticator;
  /** The tool policy in force (read per request, so a reload applies); the catalog route filters by it. */
  policy: () => Policy;
  /** The audit log's redaction rules, applied to tool arguments shown to approvers (default: the built-in rules). */
  redaction?: RedactionRules;
  /** Per-user and per-tenant limits on message submission (./rate-limits.ts; default: in memory, 60 and 600 per minute). */
  limiters?: RateLimiters;
  logger?: Logger | false;
  /** Longest accepted message text, in characters. */
  maxMessageChars: number;
  /** How often an SSE stream polls the turn for new events. */
  ssePollMs: number;
  /** Interval of SSE keep-alive comments. */
  sseKeepAliveMs?: number;
  /**
   * The SSE follower's safety-net reads while pushes flow (turn-follower.ts): how long without news
   * before the turn is read anyway, and how long a just-submitted turn's first push is waited for.
   * Defaults 2000 and 250 ms; tests that count Temporal reads on a loaded machine widen them.
   */
  sseSafetyNet?: { quietPollMs?: number; expectedPushGraceMs?: number };
  /**
   * Live LLM text. With `secret`, workers push deltas to POST /internal/live (see src/live);
   * streams then carry text_delta / text_reset events besides the durable ones. `ingest` (several
   * replicas: the bus) takes pushed batches instead of `hub`; the push is answered once it resolves.
   */
  live?: {
    hub: LiveTextHub;
    secret?: string;
    ingest?: (chunks: readonly LiveChunk[]) => Promise<void>;
    /** The bus's listening connection (with several replicas): GET /healthz/ready checks it. */
    listening?: () => { ok: boolean; downSinceMs?: number };
  };
  /** WebSocket heartbeats (GET /ws): ping interval and how long a silent socket may live. */
  ws?: { pingIntervalMs?: number; staleAfterMs?: number };
  /** Browser origins allowed to call the API from other origins (CORS); none: same origin only. */
  corsOrigins?: readonly string[];
  /** Messages the model in use answers, for clients to offer (GET /v1/suggestions): the demo model's rules' examples; none for a real model. */
  suggestions?: readonly string[];
  /** The web console at /console/ (see routes/console.ts); absent: not served. */
  console?: ConsoleOptions;
  /** Bearer token of GET /metrics (Prometheus); absent: no metrics endpoint. */
  metricsToken?: string;
  /** The OAuth store shared with the workers: GET /v1/oauth/callback writes codes into it; absent: no route. */
  oauthStore?: OAuthStore;
  /**
   * Workers' reports of their MCP servers, which /healthz answers from (src/health/reports.ts);
   * received on POST /internal/workers under the live secret. Default: in this process's memory.
   */
  workerReports?: WorkerReports;
  /** Token usage per turn: daily budgets on submission and GET /v1/admin/usage (src/usage). Absent: neither. */
  usage?: { ledger: UsageLedger; config: () => Pick<HostConfig, 'budgets' | 'prices'> };
  /** The host as an MCP server at /mcp (./mcp-server/route.ts); absent: not served. */
  mcp?: McpEndpointOptions;
  /**
   * The codec server at /v1/codec for operators' Temporal UI (./routes/codec.ts): the payload codec
   * of the API's Temporal client, its namespace and the UI's origins. Absent (no payload keys): not served.
   */
  codec?: Omit<CodecRouteOptions, 'policy'>;
}

export interface McpEndpointOptions {
  /** Seals the `requestState` of `input_required` answers; every replica needs the same key. */
  stateKey: string;
  /** Issuer URLs named in the protected resource metadata (RFC 9728). */
  authorizationServers: readonly string[];
  /** The public URL of /mcp, when the API sits behind a proxy; default: from the request. */
  resourceUrl?: string;
  /** Host names the endpoint answers to (DNS-rebinding guard); default: loopback only. */
  allowedHosts?: readonly string[];
}

/** Routes a browser opens without setting headers (`EventSource`, `WebSocket`): they also take `?access_token`. */
const QUERY_TOKEN_ROUTES = new Set(['/ws', '/v1/turns/:turnId/events']);

/** The app: error handling, authentication and the route plugins of ./routes, over injected dependencies. */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const options: FastifyServerOptions = {
    bodyLimit: 1024 * 1024,
    // Turn ids reach ~110 characters (64-character session ids); the default limit is 100.
    routerOptions: { maxParamLength: 256 },
    // Requests Node cannot parse (headers over 16 KiB: 431, ...) get the API's JSON error shape too.
    clientErrorHandler: answerClientError,
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

  // One error handler: everything is logged, only 4xx messages are shown, never a stack trace.
  app.setErrorHandler((err: FastifyError | HttpError, request, reply) => {
    if (err instanceof HttpError) {
      if (err.statusCode >= 500) request.log.error({ err: (err as { cause?: unknown }).cause ?? err }, err.message);
      if (err.retryAfterSeconds !== undefined) void reply.header('retry-after', String(err.retryAfterSeconds));
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
  // No route: 405 with Allow for a path served under other methods, else 404; the body is never read.
  answerUnmatched(app);
  const workerReports = deps.workerReports ?? memoryWorkerReports();
  const observer = deps.metricsToken
    ? registerMetrics(app, deps.metricsToken, deps.live ? { liveTurns: () => deps.live?.hub.size() ?? 0, liveSubscribers: () => deps.live?.hub.subscribers() ?? 0 } : {})
    : undefined;
  // Before the auth hook: a preflight is answered here and never reaches authentication.
  if (deps.corsOrigins?.length) {
    await app.register(cors, {
      origin: [...deps.corsOrigins],
      methods: ['GET', 'POST', 'DELETE', 'OPTIONS'],
      allowedHeaders: ['authorization', 'content-type', 'idempotency-key', 'last-event-id'],
      exposedHeaders: ['retry-after'],
      maxAge: 600,
    });
  }
  // Internal, for workers only (a shared secret, not a user token); registered before the OpenAPI
  // plugin so it stays out of the public document.
  // With several replicas, pushed text goes to the bus (every replica's hub) instead of this one's hub.
  if (deps.live?.secret) {
    await app.register(liveIngestRoutes, { hub: deps.live.ingest ? { ingest: deps.live.ingest } : deps.live.hub, secret: deps.live.secret });
    await app.register(workerReportRoutes, { reports: workerReports, secret: deps.live.secret });
  }
  // GET /openapi.json; the route schemas document the API, they do not validate (see openapi.ts).
  await registerOpenApi(app);

  // Every /v1 route and /ws needs a verified caller; /healthz stays open for load balancers. Decided on
  // the route the router matched, not the raw URL, which percent-escapes can disguise (./route-access.ts).
  app.addHook('onRequest', async (request) => {
    if (!needsUserToken(request.routeOptions.url)) return;
    // A preflight carries no credentials by design; without CORS it finds no route (405), never a 401.
    if (request.method === 'OPTIONS') return;
    // Browsers cannot set headers on a WebSocket or an EventSource: those routes also take the token as
    // ?access_token (redacted from request logs).
    const queryToken = (request.query as { access_token?: unknown } | undefined)?.access_token;
    const fromQuery = QUERY_TOKEN_ROUTES.has(request.routeOptions.url ?? '') && !request.headers.authorization && typeof queryToken === 'string';
    // The Temporal UI calls the codec server with cookies, not headers (./routes/codec.ts).
    const cookieToken = CODEC_COOKIE_ROUTES.has(request.routeOptions.url ?? '') && !request.headers.authorization ? codecCookieOf(request.headers.cookie) : undefined;
    const header = fromQuery ? `Bearer ${queryToken}` : cookieToken ? `Bearer ${cookieToken}` : request.headers.authorization;
    request.user = await deps.auth.authenticate(header);
  });
  // After authentication: lines about a turn or session name it and the caller.
  app.addHook('onRequest', logContextHook);

  const redaction = deps.redaction ?? DEFAULT_REDACTION;
  const service = createTurnService({
    ...(observer ? { observer } : {}),
    gateway: deps.gateway,
    policy: deps.policy,
    redactArguments: (args) => redact(args, redaction),
    ...(deps.limiters ? { limiters: deps.limiters } : {}),
    workerReports,
    ...(deps.live?.listening ? { busListening: deps.live.listening } : {}),
    ...(deps.usage ? { usage: deps.usage } : {}),
    ...(deps.live
      ? {
          onSubmitted: (turnId: string, turn: PushedTurn, position: number) => deps.live?.hub.events.expect(turnId, turn, position),
          justEnded: (owner: { id: string; tenant: string }, sessionId: string, withinMs: number) => deps.live?.hub.events.justEnded(owner, sessionId, withinMs),
          pushedEvents: (turnId: string) => deps.live?.hub.events.read(turnId, 0)?.events,
        }
      : {}),
  });
  const live = deps.live ? { live: deps.live.hub } : {};
  await app.register(sessionRoutes, { service, maxMessageChars: deps.maxMessageChars });
  await app.register(turnRoutes, { service });
  await app.register(approvalRoutes, { service });
  await app.register(usageRoutes, { service });
  await app.register(eventRoutes, {
    service,
    gateway: deps.gateway,
    ...live,
    pollMs: deps.ssePollMs,
    ...(deps.sseKeepAliveMs !== undefined ? { keepAliveMs: deps.sseKeepAliveMs } : {}),
    ...(deps.sseSafetyNet ? { safetyNet: deps.sseSafetyNet } : {}),
  });
  // GET /ws: the same turns over a WebSocket, through the same service and the same follower.
  await app.register(webSocketRoutes, { service, gateway: deps.gateway, ...live, pollMs: deps.ssePollMs, ...deps.ws, maxMessageChars: deps.maxMessageChars });
  await app.register(catalogRoutes, { service, ...(deps.suggestions ? { suggestions: deps.suggestions } : {}) });
  if (deps.mcp) {
    await app.register(mcpRoutes, {
      ...deps.mcp,
      auth: deps.auth,
      service,
      gateway: deps.gateway,
      ...live,
      pollMs: deps.ssePollMs,
      maxMessageChars: deps.maxMessageChars,
      logger: app.log,
    });
  }
  if (deps.console) await app.register(consoleRoutes, deps.console);
  if (deps.codec) await app.register(codecRoutes, { ...deps.codec, policy: deps.policy });
  if (deps.oauthStore) {
    const gateway = deps.gateway;
    await app.register(oauthCallbackRoutes, {
      store: deps.oauthStore,
      ...(gateway.authorizationCompleted ? { resume: (turnId: string, server: string) => gateway.authorizationCompleted?.(turnId, server) ?? Promise.resolve() } : {}),
    });
  }
  return app;
}
