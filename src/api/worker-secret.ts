/**
 * The guard of the routes workers call (live text, worker reports): workers are not users, so these
 * routes sit outside /v1 and its JWT hook and take a shared secret instead, checked in onRequest
 * (before the body is read) and compared in constant time. Errors keep the API's JSON shape, also
 * when the routes are mounted on an app without its error handler.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { frameworkErrorCode } from './errors';

export function sendError(reply: FastifyReply, status: number, code: string, message: string): FastifyReply {
  return reply.status(status).send({ error: { code, message } });
}

/** Route options shared by the worker routes at `path`: the secret check and the error handler. */
export function workerRouteOptions(secret: string, path: string, what: string) {
  if (secret === '') throw new Error(`${what}: secret must not be empty`);
  if (!path.startsWith('/') || /^\/(v1|ws)(\/|$)/.test(path)) {
    throw new Error(`${what}: path ${path} must start with / and lie outside /v1 and /ws (those require a user token)`);
  }
  // Hashing both sides gives equal lengths, which timingSafeEqual needs, without leaking the length.
  const expected = createHash('sha256').update(`Bearer ${secret}`).digest();
  const authorized = (header: string | undefined): boolean =>
    header !== undefined && timingSafeEqual(createHash('sha256').update(header).digest(), expected);
  return {
    // A worker posts every round trip (live text) or every few seconds (reports): warnings only.
    logLevel: 'warn' as const,
    onRequest: async (request: FastifyRequest, reply: FastifyReply) => {
      if (!authorized(request.headers.authorization)) {
        return sendError(reply, 401, 'unauthorized', `${what} requires the shared worker secret`);
      }
    },
    errorHandler: (err: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
      const status = typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 500;
      if (status === 500) {
        request.log.error({ err }, `${what} failed`);
        void sendError(reply, 500, 'internal', 'The server could not complete the request.');
        return;
      }
      void sendError(reply, status, frameworkErrorCode(err), err.message);
    },
  };
}
