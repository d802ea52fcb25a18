/** GET /v1/admin/usage: token usage (and cost) of the caller's tenant over a period. */
import type { FastifyPluginAsync } from 'fastify';
import { callerOf } from '../caller';
import { parseRequest, UsageQuery } from '../contract';
import { routeSchemas } from '../openapi';
import type { TurnService } from '../turns';

export const usageRoutes: FastifyPluginAsync<{ service: TurnService }> = async (app, { service }) => {
  app.get('/v1/admin/usage', { schema: routeSchemas.usage }, async (request) => {
    const query = parseRequest(UsageQuery, request.query ?? {}, 'query');
    return await service.usage(callerOf(request), query);
  });
};
