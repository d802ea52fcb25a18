/**
 * API lines about a turn name it: a request to a route with a :turnId or :sessionId parameter logs
 * through a child logger with turnId, sessionId and, once authenticated, userId, and so does
 * Fastify's "request completed" line. A new turn's id joins when the API has created it. The
 * trace id comes from the active span (src/logger.ts).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { sessionOfTurn } from '../shared/ids';
import type { LogContext } from '../shared/log-context';

/** Adds `fields` to every line this request still writes (Fastify logs the response through the reply). */
export function addLogContext(request: FastifyRequest, reply: FastifyReply, fields: LogContext): void {
  request.log = request.log.child(fields);
  reply.log = request.log;
}

/** An onRequest hook, registered after the authentication hook so the caller is known. */
export async function logContextHook(request: FastifyRequest, reply: FastifyReply): Promise<void> {
  const params = (request.params ?? {}) as { turnId?: unknown; sessionId?: unknown };
  const turnId = typeof params.turnId === 'string' ? params.turnId : undefined;
  const sessionId = typeof params.sessionId === 'string' ? params.sessionId : turnId ? sessionOfTurn(turnId) : undefined;
  if (!turnId && !sessionId) return;
  addLogContext(request, reply, { ...(turnId ? { turnId } : {}), ...(sessionId ? { sessionId } : {}), ...(request.user ? { userId: request.user.id } : {}) });
}
