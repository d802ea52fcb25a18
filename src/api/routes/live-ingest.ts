/**
 * POST /internal/live: where workers push live LLM text (see src/live/publisher.ts) into the API's hub.
 *
 * Workers are not users, so this route sits outside /v1 and its JWT hook; a shared secret guards it
 * instead. The secret is checked in onRequest, before the body is read, and compared in constant
 * time. Per-request logging is turned down to warnings: a streaming worker posts every round trip.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyError, FastifyInstance, FastifyPluginAsync, FastifyReply } from 'fastify';
import type { LiveTextHub } from '../../live/hub';
import { LiveBatchSchema } from '../../live/chunk';
import { describeIssues } from '../../shared/issues';
import { frameworkErrorCode } from '../errors';

export interface LiveIngestOptions {
  hub: Pick<LiveTextHub, 'ingest'>;
  /** Shared with the workers' publishers. */
  secret: string;
  path?: string;
}

export const DEFAULT_LIVE_INGEST_PATH = '/internal/live';

/** Room for the publisher's largest batch (256 KiB of text plus one 64 KiB chunk), even fully JSON-escaped. */
const BODY_LIMIT = 4 * 1024 * 1024;

function sendError(reply: FastifyReply, status: number, code: string, message: string): FastifyReply {
  return reply.status(status).send({ error: { code, message } });
}

export function registerLiveIngest(app: FastifyInstance, opts: LiveIngestOptions): void {
  const path = opts.path ?? DEFAULT_LIVE_INGEST_PATH;
  if (opts.secret === '') throw new Error('live ingest: secret must not be empty');
  if (!path.startsWith('/') || /^\/(v1|ws)(\/|$)/.test(path)) {
    throw new Error(`live ingest: path ${path} must start with / and lie outside /v1 and /ws (those require a user token)`);
  }
  // Hashing both sides gives equal lengths, which timingSafeEqual needs, without leaking the length.
  const expected = createHash('sha256').update(`Bearer ${opts.secret}`).digest();
  const authorized = (header: string | undefined): boolean =>
    header !== undefined && timingSafeEqual(createHash('sha256').update(header).digest(), expected);

  app.post(path, {
    bodyLimit: BODY_LIMIT,
    logLevel: 'warn',
    onRequest: async (request, reply) => {
      if (!authorized(request.headers.authorization)) {
        return sendError(reply, 401, 'unauthorized', 'Live ingest requires the shared worker secret');
      }
    },
    // Same error shape as the rest of the API, also when mounted on an app without its error handler.
    errorHandler: (err: FastifyError, request, reply) => {
      const status = typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 500;
      if (status === 500) {
        request.log.error({ err }, 'live ingest failed');
        void sendError(reply, 500, 'internal', 'The server could not complete the request.');
        return;
      }
      void sendError(reply, status, frameworkErrorCode(err), err.message);
    },
    handler: async (request, reply) => {
      const parsed = LiveBatchSchema.safeParse(request.body);
      if (!parsed.success) {
        // Dotted indexes (`chunks.0.step`): the worker's publisher and its tests match on that form.
        const detail = describeIssues(parsed.error.issues.slice(0, 3), '', { dottedIndexes: true }).join('; ');
        return sendError(reply, 400, 'invalid_request', `live batch: ${detail}`);
      }
      opts.hub.ingest(parsed.data.chunks);
      return reply.status(204).send();
    },
  });
}

/** The route as a plugin of the app (see buildApp); registerLiveIngest mounts it on any instance. */
export const liveIngestRoutes: FastifyPluginAsync<LiveIngestOptions> = async (app, opts) => registerLiveIngest(app, opts);
