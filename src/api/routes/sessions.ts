/**
 * POST and GET /v1/sessions/:sessionId/messages: send a message (a new turn), read the conversation;
 * POST /v1/sessions/:sessionId/tool-calls: run one tool call through a turn, without the model.
 */
import type { FastifyPluginAsync } from 'fastify';
import { callerOf } from '../caller';
import { IdempotencyKey, messageBody, parseRequest, SessionParams, ToolCallBody } from '../contract';
import { HttpError } from '../errors';
import { routeSchemas } from '../openapi';
import type { TurnService } from '../turn-service';

export interface SessionRoutesOptions {
  service: TurnService;
  /** Longest accepted message text, in characters. */
  maxMessageChars: number;
}

export const sessionRoutes: FastifyPluginAsync<SessionRoutesOptions> = async (app, { service, maxMessageChars }) => {
  const MessageBody = messageBody(maxMessageChars);

  // Limits first, before the body is looked at: a flood of malformed messages is spent budget too.
  app.post('/v1/sessions/:sessionId/messages', { schema: routeSchemas.postMessage, preHandler: async (request) => service.admit(callerOf(request)) }, async (request, reply) => {
    const { sessionId } = parseRequest(SessionParams, request.params, 'path');
    const contentType = request.headers['content-type'] ?? '';
    if (!/^application\/json\s*(;|$)/i.test(contentType)) {
      throw new HttpError(415, 'unsupported_media_type', 'Send the message as application/json: { "text": "..." }');
    }
    const text = (request.body as { text?: unknown } | null)?.text;
    if (typeof text === 'string' && text.length > maxMessageChars) {
      throw new HttpError(413, 'payload_too_large', `The message is too long: at most ${maxMessageChars} characters.`);
    }
    const body = parseRequest(MessageBody, request.body, 'body');
    const key = request.headers['idempotency-key'];
    const token = request.headers.authorization?.replace(/^Bearer\s+/i, '');
    const { turnId, ...outcome } = await service.submit(callerOf(request), {
      sessionId,
      text: body.text,
      ...(key === undefined ? {} : { idempotencyKey: parseRequest(IdempotencyKey, key, 'Idempotency-Key header') }),
      ...(token ? { token } : {}),
    });
    return reply
      .status(outcome.created ? 202 : 200)
      .header('location', `/v1/turns/${turnId}`)
      .send({ sessionId, turnId, position: outcome.position, eventsUrl: `/v1/turns/${turnId}/events`, statusUrl: `/v1/turns/${turnId}` });
  });

  const requireJson = (contentType: string | undefined, example: string): void => {
    if (!/^application\/json\s*(;|$)/i.test(contentType ?? '')) {
      throw new HttpError(415, 'unsupported_media_type', `Send the body as application/json: ${example}`);
    }
  };

  app.post('/v1/sessions/:sessionId/tool-calls', { schema: routeSchemas.postToolCall, preHandler: async (request) => service.admit(callerOf(request)) }, async (request, reply) => {
    const { sessionId } = parseRequest(SessionParams, request.params, 'path');
    requireJson(request.headers['content-type'], '{ "server": "...", "tool": "...", "arguments": { } }');
    const body = parseRequest(ToolCallBody, request.body, 'body');
    const key = request.headers['idempotency-key'];
    const token = request.headers.authorization?.replace(/^Bearer\s+/i, '');
    const { turnId, ...outcome } = await service.submitToolCall(callerOf(request), {
      sessionId,
      directCall: { server: body.server, tool: body.tool, arguments: body.arguments },
      ...(key === undefined ? {} : { idempotencyKey: parseRequest(IdempotencyKey, key, 'Idempotency-Key header') }),
      ...(token ? { token } : {}),
    });
    return reply
      .status(outcome.created ? 202 : 200)
      .header('location', `/v1/turns/${turnId}`)
      .send({ sessionId, turnId, position: outcome.position, eventsUrl: `/v1/turns/${turnId}/events`, statusUrl: `/v1/turns/${turnId}` });
  });

  app.get('/v1/sessions/:sessionId/messages', { schema: routeSchemas.listMessages }, async (request) => {
    const { sessionId } = parseRequest(SessionParams, request.params, 'path');
    return await service.session(callerOf(request), sessionId);
  });
};
