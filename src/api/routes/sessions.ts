/**
 * GET /v1/sessions: the caller's sessions, paged, newest first;
 * GET, PATCH and DELETE /v1/sessions/:sessionId: one of them, its title, deleting it (decision 0037);
 * POST and GET /v1/sessions/:sessionId/messages: send a message (a new turn), read the conversation;
 * POST /v1/sessions/:sessionId/tool-calls: run one tool call through a turn, without the model.
 */
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { callerOf } from '../caller';
import { decodeSessionCursor, IdempotencyKey, messageBody, parseRequest, SessionParams, SessionsQuery, SessionTitleBody, ToolCallBody } from '../contract';
import { HttpError } from '../errors';
import { routeSchemas } from '../openapi';
import { addLogContext } from '../request-log-context';
import type { Accepted, TurnService } from '../turns';

export interface SessionRoutesOptions {
  service: TurnService;
  /** Longest accepted message text, in characters. */
  maxMessageChars: number;
}

export const sessionRoutes: FastifyPluginAsync<SessionRoutesOptions> = async (app, { service, maxMessageChars }) => {
  const MessageBody = messageBody(maxMessageChars);

  /** The body must be JSON (the message's 415 names its own example). */
  const requireJson = (request: FastifyRequest, example: string): void => {
    if (!/^application\/json\s*(;|$)/i.test(request.headers['content-type'] ?? '')) {
      throw new HttpError(415, 'unsupported_media_type', `Send the body as application/json: ${example}`);
    }
  };
  /** What every submission carries from its request: the idempotency key and the caller's token. */
  const submissionOf = (request: FastifyRequest): { idempotencyKey?: string; token?: string } => {
    const key = request.headers['idempotency-key'];
    const token = request.headers.authorization?.replace(/^Bearer\s+/i, '');
    return {
      ...(key === undefined ? {} : { idempotencyKey: parseRequest(IdempotencyKey, key, 'Idempotency-Key header') }),
      ...(token ? { token } : {}),
    };
  };
  /** 202 for a new turn, 200 for a repeated Idempotency-Key, with where to follow it. */
  const accepted = (reply: FastifyReply, sessionId: string, { turnId, created, position }: Accepted) => {
    addLogContext(reply.request, reply, { turnId });
    return reply
      .status(created ? 202 : 200)
      .header('location', `/v1/turns/${turnId}`)
      .send({ sessionId, turnId, position, eventsUrl: `/v1/turns/${turnId}/events`, statusUrl: `/v1/turns/${turnId}` });
  };

  // Limits first, before the body is looked at: a flood of malformed messages is spent budget too.
  app.post('/v1/sessions/:sessionId/messages', { schema: routeSchemas.postMessage, preHandler: async (request) => service.admit(callerOf(request)) }, async (request, reply) => {
    const { sessionId } = parseRequest(SessionParams, request.params, 'path');
    requireJson(request, '{ "text": "..." }');
    const text = (request.body as { text?: unknown } | null)?.text;
    if (typeof text === 'string' && text.length > maxMessageChars) {
      throw new HttpError(413, 'payload_too_large', `The message is too long: at most ${maxMessageChars} characters.`);
    }
    const body = parseRequest(MessageBody, request.body, 'body');
    return accepted(reply, sessionId, await service.submit(callerOf(request), { sessionId, text: body.text, ...submissionOf(request) }));
  });

  app.post('/v1/sessions/:sessionId/tool-calls', { schema: routeSchemas.postToolCall, preHandler: async (request) => service.admit(callerOf(request)) }, async (request, reply) => {
    const { sessionId } = parseRequest(SessionParams, request.params, 'path');
    requireJson(request, '{ "server": "...", "tool": "...", "arguments": { } }');
    const { server, tool, arguments: args } = parseRequest(ToolCallBody, request.body, 'body');
    const directCall = { server, tool, arguments: args };
    return accepted(reply, sessionId, await service.submitToolCall(callerOf(request), { sessionId, directCall, ...submissionOf(request) }));
  });

  app.get('/v1/sessions', { schema: routeSchemas.listSessions }, async (request) => {
    const { limit, cursor: text } = parseRequest(SessionsQuery, request.query, 'query');
    const cursor = text === undefined ? undefined : decodeSessionCursor(text);
    if (text !== undefined && !cursor) {
      throw new HttpError(400, 'invalid_request', "query: cursor: not a cursor of this list (pass a page's `nextCursor` as it came, or leave it out for the first page)");
    }
    return await service.sessionList(callerOf(request), limit, cursor);
  });

  app.get('/v1/sessions/:sessionId', { schema: routeSchemas.getSession }, async (request) => {
    const { sessionId } = parseRequest(SessionParams, request.params, 'path');
    return await service.sessionInfo(callerOf(request), sessionId);
  });

  app.patch('/v1/sessions/:sessionId', { schema: routeSchemas.renameSession }, async (request) => {
    const { sessionId } = parseRequest(SessionParams, request.params, 'path');
    requireJson(request, '{ "title": "..." }');
    const { title } = parseRequest(SessionTitleBody, request.body, 'body');
    return await service.renameSession(callerOf(request), sessionId, title);
  });

  app.delete('/v1/sessions/:sessionId', { schema: routeSchemas.deleteSession }, async (request, reply) => {
    const { sessionId } = parseRequest(SessionParams, request.params, 'path');
    await service.deleteSession(callerOf(request), sessionId);
    return reply.status(204).send();
  });

  app.get('/v1/sessions/:sessionId/messages', { schema: routeSchemas.listMessages }, async (request) => {
    const { sessionId } = parseRequest(SessionParams, request.params, 'path');
    return await service.session(callerOf(request), sessionId);
  });
};
