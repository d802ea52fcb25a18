/**
 * POST /internal/live: where workers push live LLM text (see src/live/publisher.ts) into the API's hub.
 *
 * Workers are not users: a shared secret guards the route instead of a user token (../worker-secret.ts).
 */
import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import type { LiveTextHub } from '../../live/hub';
import { LiveBatchSchema } from '../../live/chunk';
import { describeIssues } from '../../shared/issues';
import { sendError, workerRouteOptions } from '../worker-secret';

export interface LiveIngestOptions {
  hub: Pick<LiveTextHub, 'ingest'>;
  /** Shared with the workers' publishers. */
  secret: string;
  path?: string;
}

export const DEFAULT_LIVE_INGEST_PATH = '/internal/live';

/** Room for the publisher's largest batch (256 KiB of text plus one 64 KiB chunk), even fully JSON-escaped. */
const BODY_LIMIT = 4 * 1024 * 1024;

export function registerLiveIngest(app: FastifyInstance, opts: LiveIngestOptions): void {
  const path = opts.path ?? DEFAULT_LIVE_INGEST_PATH;
  app.post(path, {
    bodyLimit: BODY_LIMIT,
    ...workerRouteOptions(opts.secret, path, 'Live ingest'),
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
