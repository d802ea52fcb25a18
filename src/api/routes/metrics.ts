/**
 * GET /metrics (Prometheus text format) for callers presenting METRICS_TOKEN, and the request timing
 * that feeds it. Registered only when a token is configured; not part of the OpenAPI document.
 */
import type { FastifyInstance } from 'fastify';
import { type ApiObserver, createApiMetrics, presentsToken } from '../../metrics';

/** Returns what the rest of the app reports into (turns submitted). */
export function registerMetrics(app: FastifyInstance, token: string, opts: Parameters<typeof createApiMetrics>[0] = {}): ApiObserver {
  const metrics = createApiMetrics(opts);
  // Route patterns, never raw URLs: ids stay out of the labels.
  app.addHook('onResponse', async (request, reply) => {
    metrics.request(request.method, request.routeOptions.url ?? 'unmatched', reply.statusCode, reply.elapsedTime / 1000);
  });
  app.get('/metrics', { schema: { hide: true } }, async (request, reply) => {
    if (!presentsToken(request.headers.authorization, token)) {
      return reply.status(401).send({ error: { code: 'missing_token', message: 'GET /metrics needs the bearer METRICS_TOKEN.' } });
    }
    return reply.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });
  return metrics.observer;
}
