/**
 * GET /v1/turns/:turnId/events: the turn as server-sent events, from the follower (turn-follower.ts)
 * that also feeds the WebSocket. The stream opens with a `turn` event of the API's own (no id: see
 * StreamOpening in ../contract.ts) as soon as the turn is known to be the caller's. Durable events
 * carry ids; a reconnect with Last-Event-ID (or ?after) resumes after it, and live text restarts with
 * the current step's text so far. Events come from what the workers push (no Temporal read while
 * that works), with the turn's query as the fallback.
 */
import type { FastifyPluginAsync } from 'fastify';
import type { LiveTextHub } from '../../live/hub';
import { callerOf } from '../caller';
import { sseFrame, sseOpening } from '../client-events';
import { EventsHeaders, EventsQuery, parseRequest, TurnParams } from '../contract';
import type { TurnGateway } from '../gateway';
import { routeSchemas } from '../openapi';
import { followTurn } from '../turn-follower';
import { ownedBy, type TurnService } from '../turns';

export interface EventRoutesOptions {
  service: TurnService;
  gateway: Pick<TurnGateway, 'getTurn'>;
  live?: LiveTextHub;
  /** How often the stream polls the turn for new events. */
  pollMs: number;
  /** Interval of keep-alive comments; default 15 s. */
  keepAliveMs?: number;
  /** The follower's safety-net reads while pushes flow (AppDeps.sseSafetyNet). */
  safetyNet?: { quietPollMs?: number; expectedPushGraceMs?: number };
}

export const eventRoutes: FastifyPluginAsync<EventRoutesOptions> = async (app, opts) => {
  app.get('/v1/turns/:turnId/events', { schema: routeSchemas.turnEvents }, async (request, reply) => {
    const { turnId } = parseRequest(TurnParams, request.params, 'path');
    const query = parseRequest(EventsQuery, request.query ?? {}, 'query');
    // As documented: a Last-Event-ID that is not an event id is refused, not ignored.
    const header = parseRequest(EventsHeaders, { 'Last-Event-ID': request.headers['last-event-id'] }, 'header')['Last-Event-ID'];
    const after = (header !== undefined ? Number(header) : undefined) ?? query.after ?? 0;

    // The hub holds the turn's pushed events when its worker reaches this API: the owner's stream
    // starts from them without asking Temporal. Anyone else, or a turn the hub lacks, is read from
    // Temporal (by query first: a stream is usually opened on a running turn).
    const caller = callerOf(request);
    const pushed = opts.live?.events.streamView(turnId, after);
    const fromHub = pushed !== undefined && ownedBy(pushed, caller);
    const first = fromHub ? pushed : await opts.service.turn(caller, turnId, { after, likelyRunning: true });
    // A turn this API accepted a moment ago and that has said nothing yet: where the POST put it.
    const position = fromHub ? opts.live?.events.read(turnId, after)?.acceptedPosition : undefined;

    reply.hijack();
    const res = reply.raw;
    res.writeHead(200, {
      // Headers hooks set on the reply (CORS) would be lost once hijacked.
      ...(reply.getHeaders() as Record<string, string | string[]>),
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    // The first event comes from what the API knows now, not from the turn's workflow: a turn just
    // accepted has not run its first workflow task yet. It has no id (Last-Event-ID is untouched).
    res.write(`retry: 1000\n\n${sseOpening(turnId, first, position)}`);
    const feed = followTurn(
      { gateway: opts.gateway, ...(opts.live ? { live: opts.live } : {}) },
      {
        turnId,
        after,
        first,
        pollMs: opts.pollMs,
        ...opts.safetyNet,
        // Temporal blips must not kill the stream: the client keeps its place and we try again.
        onPollError: (err) => request.log.warn({ err, turnId }, 'polling turn failed; retrying'),
        // A queued turn says what holds it up (the turn ahead, its pending approvals).
        waitingOn: (state) => opts.service.waitingOn(state),
      },
    );
    request.raw.on('close', () => feed.stop());
    const keepAlive = setInterval(() => {
      if (!res.writableEnded && !res.destroyed) res.write(': keep-alive\n\n');
    }, opts.keepAliveMs ?? 15_000);
    try {
      for await (const item of feed) {
        if (item.type === 'end' || res.writableEnded || res.destroyed) break;
        res.write(sseFrame(turnId, item));
      }
    } finally {
      feed.stop();
      clearInterval(keepAlive);
      res.end();
    }
  });
};
