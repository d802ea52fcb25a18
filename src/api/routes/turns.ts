/** A turn: its state, cancel, and the decisions on its tool calls that wait for a human. */
import type { FastifyPluginAsync } from 'fastify';
import { callerOf } from '../caller';
import { ApprovalBody, ApprovalParams, InputBody, parseRequest, TurnParams } from '../contract';
import { routeSchemas } from '../openapi';
import type { TurnService } from '../turns';

export const turnRoutes: FastifyPluginAsync<{ service: TurnService }> = async (app, { service }) => {
  app.get('/v1/turns/:turnId', { schema: routeSchemas.getTurn }, async (request) => {
    const { turnId } = parseRequest(TurnParams, request.params, 'path');
    return await service.view(callerOf(request), turnId);
  });

  app.get('/v1/turns/:turnId/mcp', { schema: routeSchemas.turnMcpMessages }, async (request) => {
    const { turnId } = parseRequest(TurnParams, request.params, 'path');
    return await service.mcpMessages(callerOf(request), turnId);
  });

  app.post('/v1/turns/:turnId/cancel', { schema: routeSchemas.cancelTurn }, async (request, reply) => {
    const { turnId } = parseRequest(TurnParams, request.params, 'path');
    await service.cancel(callerOf(request), turnId);
    return reply.status(202).send({ turnId, status: 'cancelling' });
  });

  app.post('/v1/turns/:turnId/approvals/:toolCallId', { schema: routeSchemas.decideApproval }, async (request) => {
    const { turnId, toolCallId } = parseRequest(ApprovalParams, request.params, 'path');
    const body = parseRequest(ApprovalBody, request.body, 'body');
    return await service.decideApproval(callerOf(request), turnId, toolCallId, body.approve);
  });

  // The turn's owner answers a server's question (an `input_required` event); the call then runs again.
  app.post('/v1/turns/:turnId/inputs/:toolCallId', { schema: routeSchemas.provideInput }, async (request) => {
    const { turnId, toolCallId } = parseRequest(ApprovalParams, request.params, 'path');
    const body = parseRequest(InputBody, request.body, 'body');
    return await service.provideInput(callerOf(request), turnId, toolCallId, body);
  });
};
