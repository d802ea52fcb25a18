/**
 * The MCP catalog (tools the LLM sees, server states, reconnecting a server that is down), the
 * messages the model answers (suggestions), and the health answers for load balancers and probes.
 */
import type { FastifyPluginAsync } from 'fastify';
import { callerOf } from '../caller';
import { parseRequest, ServerParams } from '../contract';
import { routeSchemas } from '../openapi';
import type { TurnService } from '../turns';

/** Load balancers and `npm start` ask these every second or so: their request lines only at warn and above. */
const PROBE_LOG_LEVEL = 'warn';

export const catalogRoutes: FastifyPluginAsync<{ service: TurnService; suggestions?: readonly string[] }> = async (app, { service, suggestions = [] }) => {
  app.get('/v1/tools', { schema: routeSchemas.listTools }, async (request) => await service.catalog(callerOf(request)));

  app.get('/v1/suggestions', { schema: routeSchemas.listSuggestions }, async (request) => {
    callerOf(request);
    return { suggestions };
  });

  // Starts a catalog workflow whatever the cache: counted against the caller's message rate limits (not the token budget).
  app.post('/v1/servers/:server/reconnect', { schema: routeSchemas.reconnectServer, preHandler: async (request) => service.withinRate(callerOf(request)) }, async (request) => {
    const { server } = parseRequest(ServerParams, request.params, 'path');
    return await service.reconnect(server);
  });

  // The caller is not needed to answer, but asking for it keeps this route closed even if the auth hook
  // were bypassed: it may start a catalog workflow.
  app.get('/v1/servers', { schema: routeSchemas.listServers }, async (request) => {
    callerOf(request);
    return await service.servers();
  });

  // No token (see the auth hook): 503 when Temporal is unreachable, so whatever routes by health can
  // take the replica out (README, "Production stack").
  app.get('/healthz', { schema: routeSchemas.healthz, logLevel: PROBE_LOG_LEVEL }, async (_request, reply) => {
    const health = await service.health();
    return reply.status(health.temporal.ok ? 200 : 503).send(health);
  });

  // For probes (README, "Health"): ready = a turn submitted here can run and stream; live = the process answers.
  app.get('/healthz/ready', { schema: routeSchemas.healthzReady, logLevel: PROBE_LOG_LEVEL }, async (_request, reply) => {
    const readiness = await service.ready();
    return reply.status(readiness.status === 'ready' ? 200 : 503).send(readiness);
  });
  app.get('/healthz/live', { schema: routeSchemas.healthzLive, logLevel: PROBE_LOG_LEVEL }, async () => service.live());
};
