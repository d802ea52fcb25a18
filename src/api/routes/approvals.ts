/** The approvals inbox: tool calls waiting for a decision the caller may take (decided on routes/turns.ts). */
import type { FastifyPluginAsync } from 'fastify';
import { callerOf } from '../caller';
import { ApprovalsQuery, parseRequest } from '../contract';
import { routeSchemas } from '../openapi';
import type { TurnService } from '../turns';

export const approvalRoutes: FastifyPluginAsync<{ service: TurnService }> = async (app, { service }) => {
  app.get('/v1/approvals', { schema: routeSchemas.listApprovals }, async (request) => {
    parseRequest(ApprovalsQuery, request.query ?? {}, 'query');
    return await service.approvals(callerOf(request));
  });
};
