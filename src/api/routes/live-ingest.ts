/**
 * POST /internal/live: where workers push live LLM text (see src/live/publisher.ts) into the API's hub.
 *
 * Workers are not users: a shared secret guards the route instead of a user token (../worker-secret.ts).
 *
 * With several replicas the batch is published on the bus (src/live/pg-bus.ts) and the answer waits
 * until that publish is done. A worker sends its next batch only after this answer (one request in
 * flight), so a turn's batches reach the bus in the worker's order even when the load balancer sends
 * consecutive batches to different replicas. If the bus refuses, the answer is 503: the worker's
 * publisher counts the batch as dropped (best effort) and the hubs see a gap until the durable text.
 */
import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import { LiveBatchSchema, type LiveChunk } from '../../live/chunk';
import { describeIssues } from '../../shared/issues';
import { sendError, workerRouteOptions } from '../worker-secret';

export interface LiveIngestOptions {
  /** This process's hub, or the bus to every replica's hub: a promise is awaited before answering. */
  hub: { ingest(chunks: readonly LiveChunk[]): void | Promise<void> };
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
      try {
        await opts.hub.ingest(parsed.data.chunks);
      } catch (err) {
        request.log.warn({ err: err instanceof Error ? err.message : String(err) }, 'live ingest: the bus refused a batch');
        return sendError(reply, 503, 'unavailable', 'The live-text bus is unavailable; the batch was not delivered to other replicas.');
      }
      return reply.status(204).send();
    },
  });
}

/** The route as a plugin of the app (see buildApp); registerLiveIngest mounts it on any instance. */
export const liveIngestRoutes: FastifyPluginAsync<LiveIngestOptions> = async (app, opts) => registerLiveIngest(app, opts);
