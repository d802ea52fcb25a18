import { memoryRateLimiters } from '../../src/api/rate-limits';
import { MemoryOAuthStore } from '../../src/security/oauth-store';
import SwaggerParser from '@apidevtools/swagger-parser';
import Ajv from 'ajv';
import Fastify, { type RouteOptions } from 'fastify';
import { buildApp, type Authenticator } from '../../src/api/app';
import { HttpError } from '../../src/api/errors';
import type { TurnGateway } from '../../src/api/gateway';
import { registerOpenApi, routeSchemas, SSE_EVENT_TYPES } from '../../src/api/openapi';
import { STREAM_OPENING_EVENT, StreamOpening, WS_ERROR_CODES } from '../../src/api/contract';
import { DEFAULT_MAX_MESSAGE_CHARS, wsMaxFrameBytes } from '../../src/shared/message-limits';
import { parseSseBlock } from '../../src/shared/sse';
import { openPolicy } from '../helpers/fake-auth';

// Every route the app declares, seen by an onRoute hook added the moment the instance is created
// (buildApp declares its routes itself, so a hook added afterwards would see none of them).
const mockRoutes: Array<{ method: string; url: string }> = [];
jest.mock('fastify', () => {
  const actual = jest.requireActual('fastify');
  const wrapped = (...args: unknown[]) => {
    const app = actual(...args);
    app.addHook('onRoute', (route: RouteOptions) => {
      // Hidden routes are not part of the API on purpose: the document itself, its UI (/docs), the console.
      if ((route.schema as { hide?: boolean } | undefined)?.hide) return;
      for (const method of [route.method].flat()) mockRoutes.push({ method, url: route.url });
    });
    return app;
  };
  return Object.assign(wrapped, actual, { default: wrapped, fastify: wrapped });
});

/** Only what these requests reach: the catalog and Temporal's health. Nothing here starts a turn. */
const gateway = {
  async catalog() {
    // `extra` is in no schema: a fastify serializer built from the schemas would drop it.
    return { tools: [], servers: [{ server: 'a', transport: 'stdio', state: 'connected', toolCount: 0, extra: 'kept' }] };
  },
  async temporalHealth() {
    return { ok: true };
  },
  // One finished turn of alice's, for the stream's shape.
  async getTurn(turnId: string, after = 0) {
    if (turnId !== DONE_TURN) return null;
    const events = ['status', 'text', 'done'].map((type, i) => ({ id: i + 1, type, at: '2026-01-01T00:00:00.000Z', data: type === 'text' ? { text: 'hi' } : { status: 'completed' } }));
    return {
      turnId, sessionId: 's1', owner: { id: 'alice', tenant: 'demo' }, status: 'completed', text: 'hi', toolCalls: [], steps: 1,
      events: events.filter((e) => e.id > after),
    };
  },
} as unknown as TurnGateway;
const DONE_TURN = 'turn-s1-done';

const fakeAuth: Authenticator = {
  async authenticate(header) {
    if (header !== 'Bearer alice') throw new HttpError(401, 'missing_token', 'Authentication required');
    return { id: 'alice', role: 'teacher', tenant: 'demo', scopes: [] };
  },
};
const ALICE = { authorization: 'Bearer alice' };
const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

type Operation = { security?: unknown; responses: Record<string, { content?: Record<string, { schema: unknown }> }> };
type Doc = { openapi: string; info: { title: string; version: string }; security?: unknown; components: { securitySchemes: Record<string, unknown> }; paths: Record<string, Record<string, Operation>> };

async function setup() {
  mockRoutes.length = 0;
  const app = await buildApp({
    gateway,
    auth: fakeAuth,
    policy: () => openPolicy,
    maxMessageChars: 4000,
    ssePollMs: 5,
    limiters: memoryRateLimiters({ userPerMinute: 1000, tenantPerMinute: 1000 }),
    oauthStore: new MemoryOAuthStore(),
  });
  await app.ready();
  const res = await app.inject({ method: 'GET', url: '/openapi.json' });
  return { app, res, doc: res.json() as Doc };
}

test('GET /openapi.json is public and a valid OpenAPI 3 document', async () => {
  const { res, doc } = await setup();
  expect(res.statusCode).toBe(200);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(doc.openapi).toMatch(/^3\./);
  expect(doc.info.title).toBe('Durable MCP host API');
  expect(doc.info.version).toBe((jest.requireActual('../../package.json') as { version: string }).version);
  // The validator dereferences in place: give it a copy.
  await expect(SwaggerParser.validate(structuredClone(doc) as never)).resolves.toBeDefined();
});

test('every route of the app is in the document, with its method', async () => {
  const { doc } = await setup();
  const routes = mockRoutes.filter((r) => r.method !== 'HEAD' && r.method !== 'OPTIONS' && r.url !== '/openapi.json');
  expect(routes).toEqual(expect.arrayContaining([{ method: 'GET', url: '/healthz' }, { method: 'POST', url: '/v1/sessions/:sessionId/messages' }]));
  for (const { method, url } of routes) {
    const path = url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
    expect({ path, method, documented: Boolean(doc.paths[path]?.[method.toLowerCase()]) }).toEqual({ path, method, documented: true });
  }
  // ...and nothing else (the document route itself stays out of it).
  const operations = Object.entries(doc.paths).flatMap(([path, item]) => METHODS.filter((m) => item[m]).map((m) => `${m.toUpperCase()} ${path}`));
  expect(operations).toHaveLength(routes.length);
  expect(doc.paths['/openapi.json']).toBeUndefined();
});

test('/v1 routes require the bearer JWT and document the JSON errors; /healthz requires nothing', async () => {
  const { doc } = await setup();
  expect(doc.components.securitySchemes.bearerAuth).toEqual(expect.objectContaining({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT' }));
  expect(doc.security).toBeUndefined();
  // The OAuth callback is a browser redirect from an authorization server: its `state` is the credential.
  const v1 = Object.keys(doc.paths).filter((p) => p.startsWith('/v1/') && p !== '/v1/oauth/callback');
  expect(doc.paths['/v1/oauth/callback']?.get?.security).toBeUndefined();
  expect(v1.length).toBeGreaterThanOrEqual(6);
  for (const path of v1) {
    for (const m of METHODS.filter((m) => doc.paths[path]?.[m])) {
      const op = doc.paths[path]?.[m] as Operation;
      expect({ path, m, security: op.security }).toEqual({ path, m, security: [{ bearerAuth: [] }] });
      expect(op.responses['401']?.content?.['application/json']?.schema).toEqual(
        expect.objectContaining({ required: ['error'], properties: expect.objectContaining({ error: expect.any(Object) }) }),
      );
    }
  }
  expect(doc.paths['/healthz']?.get?.security).toBeUndefined();
  const post = doc.paths['/v1/sessions/{sessionId}/messages']?.post as Operation & { parameters: Array<{ in: string; name: string }> };
  expect(Object.keys(post.responses).sort()).toEqual(['200', '202', '400', '401', '409', '413', '414', '415', '429', '431', '503']);
  expect(post.parameters).toEqual(expect.arrayContaining([expect.objectContaining({ in: 'header', name: 'Idempotency-Key' })]));
  const events = doc.paths['/v1/turns/{turnId}/events']?.get as Operation & { parameters: Array<{ in: string; name: string }> };
  expect(Object.keys(events.responses['200']?.content ?? {})).toEqual(['text/event-stream']);
  expect(events.parameters).toEqual(expect.arrayContaining([expect.objectContaining({ in: 'header', name: 'Last-Event-ID' })]));
});

test("the SSE stream's opening event is documented from its contract schema: name, fields, no id, first in the example", async () => {
  const { doc } = await setup();
  const events = doc.paths['/v1/turns/{turnId}/events']?.get as Operation & { description: string };
  const row = events.description.split('\n').find((l) => l.startsWith(`| \`${STREAM_OPENING_EVENT}\` |`));
  expect(row).toBeDefined();
  for (const [field, schema] of Object.entries(StreamOpening.shape)) {
    if (field === 'turnId' || field === 'at') continue; // every event's
    expect(row).toContain(schema.isOptional() ? `${field}?` : field);
  }
  expect(row).toMatch(/no `id`/);
  const example = (events.responses['200']?.content?.['text/event-stream'] as unknown as { example: string }).example;
  const [retry, opening, durable] = example.split('\n\n');
  expect(retry).toBe('retry: 1000');
  const parsed = parseSseBlock(opening ?? '');
  expect(parsed?.event).toBe(STREAM_OPENING_EVENT);
  expect(parsed?.id).toBeUndefined();
  expect(StreamOpening.safeParse(parsed?.data).success).toBe(true);
  expect(parseSseBlock(durable ?? '')?.id).toBe('1');
});

test('the schemas are documentation only: requests keep the app’s own validation and error codes', async () => {
  const { app } = await setup();
  const post = (payload: string, contentType = 'application/json') =>
    app.inject({ method: 'POST', url: '/v1/sessions/s1/messages', payload, headers: { ...ALICE, 'content-type': contentType } });

  const long = await post(JSON.stringify({ text: 'x'.repeat(5000) }));
  expect(long.statusCode).toBe(413);
  expect(long.json().error.code).toBe('payload_too_large');

  const plain = await post('hello', 'text/plain');
  expect(plain.statusCode).toBe(415);
  expect(plain.json().error.code).toBe('unsupported_media_type');

  // zod's wording ("body: ..."), not Ajv's ("body must NOT have additional properties").
  const extra = await post(JSON.stringify({ text: 'hi', extra: true }));
  expect(extra.statusCode).toBe(400);
  expect(extra.json().error).toEqual({ code: 'invalid_request', message: expect.stringMatching(/^body: /) });

  const badSession = await app.inject({ method: 'POST', url: '/v1/sessions/bad%20id/messages', payload: '{"text":"hi"}', headers: { ...ALICE, 'content-type': 'application/json' } });
  expect(badSession.statusCode).toBe(400);
  expect(badSession.json().error).toEqual({ code: 'invalid_request', message: expect.stringMatching(/^path: sessionId/) });

  const approval = await app.inject({ method: 'POST', url: '/v1/turns/turn-s1-x/approvals/c1', payload: '{"approve":"yes"}', headers: { ...ALICE, 'content-type': 'application/json' } });
  expect(approval.statusCode).toBe(400);
  expect(approval.json().error.code).toBe('invalid_request');

  expect((await app.inject({ method: 'GET', url: '/v1/tools' })).json().error.code).toBe('missing_token');

  // Responses are not filtered through the response schemas either.
  const servers = await app.inject({ method: 'GET', url: '/v1/servers', headers: ALICE });
  expect(servers.statusCode).toBe(200);
  expect(servers.json().servers[0].extra).toBe('kept');
  const health = await app.inject({ method: 'GET', url: '/healthz' });
  expect(health.statusCode).toBe(200);
  expect(health.json().workers).toEqual([]);
});

test('the /ws schema, ready for that route, is valid and needs the token too', async () => {
  const app = Fastify();
  await registerOpenApi(app);
  app.get('/ws', { schema: routeSchemas.websocket }, async () => ({}));
  await app.ready();
  const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json() as Doc;
  await expect(SwaggerParser.validate(structuredClone(doc) as never)).resolves.toBeDefined();
  const op = doc.paths['/ws']?.get as Operation & { description: string };
  expect(op.security).toEqual([{ bearerAuth: [] }]);
  expect(Object.keys(op.responses)).toContain('101');
  expect(op.description).toMatch(/"type": "message"/);
  await app.close();
});

test("the /ws text lists every error frame code the route sends, and the frame limit the socket enforces", () => {
  const text = routeSchemas.websocket.description;
  // The route's own codes and the turn service's, e.g. a second decision of the same call.
  for (const code of ['already_decided', 'token_budget_exhausted', 'frame_too_large', 'payload_too_large']) expect(WS_ERROR_CODES).toContain(code);
  for (const code of WS_ERROR_CODES) expect({ code, listed: text.includes(`\`${code}\``) }).toEqual({ code, listed: true });
  expect(text).toContain(`${wsMaxFrameBytes(DEFAULT_MAX_MESSAGE_CHARS)} bytes`);
  expect(text).toMatch(/1009/);
});

test('what the router answers is documented: 414 on every path with a parameter, 405 with Allow on every path for the methods it lacks', async () => {
  const { app, doc } = await setup();
  const responses = (doc as unknown as { components: { responses: Record<string, { headers: Record<string, unknown> }> } }).components.responses;
  expect(responses.MethodNotAllowed?.headers.Allow).toBeDefined();
  expect((doc.info as { description?: string }).description).toMatch(/405 method_not_allowed.*Allow/);
  for (const [path, item] of Object.entries(doc.paths)) {
    const declared = METHODS.filter((m) => item[m]);
    if (path.includes('{')) {
      for (const m of declared) expect({ path, m, has414: '414' in (item[m]?.responses ?? {}) }).toEqual({ path, m, has414: true });
    }
    const url = path.replace(/\{[^}]+\}/g, 'turn-s1-abc');
    const allow = [...declared.map((m) => m.toUpperCase()), ...(item.get ? ['HEAD'] : [])].sort().join(', ');
    for (const m of METHODS.filter((x) => !item[x])) {
      const res = await app.inject({ method: m.toUpperCase() as 'PUT', url });
      expect({ path, m, status: res.statusCode, allow: res.headers.allow }).toEqual({ path, m, status: 405, allow });
    }
  }
  const long = await app.inject({ method: 'GET', url: `/v1/sessions/${'a'.repeat(300)}/messages`, headers: ALICE });
  expect([long.statusCode, long.json().error.code]).toEqual([414, 'uri_too_long']);
});

test('the SSE stream is documented as text/event-stream with a row for every event type; /ws documents 426 for a plain GET', async () => {
  const { app, doc } = await setup();
  const events = doc.paths['/v1/turns/{turnId}/events']?.get as Operation & { description: string; responses: Record<string, { description: string }> };
  for (const type of SSE_EVENT_TYPES) {
    expect({ type, row: events.description.includes(`| \`${type}\` |`) }).toEqual({ type, row: true });
    expect(events.responses['200']?.description).toContain(`\`${type}\``);
  }
  const ws = doc.paths['/ws']?.get as Operation;
  expect(ws.responses['426']?.content?.['application/json']?.schema).toBeDefined();
  const plain = await app.inject({ method: 'GET', url: '/ws', headers: ALICE });
  expect([plain.statusCode, plain.json().error.code]).toEqual([426, 'upgrade_required']);
});

/** A stream's events as an SSE parser delivers them: `data` as text, `id` carried over to events without one. */
function deliveredEvents(stream: string): Array<Record<string, string>> {
  const out: Array<Record<string, string>> = [];
  let lastId: string | undefined;
  for (const block of stream.split('\n\n')) {
    const fields: Record<string, string> = {};
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line === '' || line.startsWith(':')) continue;
      const [field = '', ...rest] = line.split(':');
      const value = rest.join(':').replace(/^ /, '');
      if (field === 'data') data.push(value);
      else if (field === 'id') lastId = value;
      else if (field === 'event') fields.event = value;
    }
    if (data.length > 0) out.push({ event: fields.event ?? 'message', data: data.join('\n'), ...(lastId !== undefined ? { id: lastId } : {}) });
  }
  return out;
}

test("the SSE 200 schema describes one event as a parser delivers it, and every event of a real stream fits it", async () => {
  // Before OpenAPI 3.2, tools read a text/event-stream schema per event (schemathesis did, and found a
  // `type: string` for the whole stream contradicted by every event).
  const { app, doc } = await setup();
  const media = doc.paths['/v1/turns/{turnId}/events']?.get?.responses['200']?.content?.['text/event-stream'] as { schema: Record<string, unknown>; example: string };
  expect(media.schema).toEqual(expect.objectContaining({ type: 'object', required: ['event', 'data'] }));
  const validate = new Ajv({ strict: false }).compile(media.schema);
  const res = await app.inject({ method: 'GET', url: `/v1/turns/${DONE_TURN}/events`, headers: ALICE });
  expect(res.statusCode).toBe(200);
  const events = [...deliveredEvents(res.body), ...deliveredEvents(media.example)];
  expect(events.map((e) => e.event)).toEqual([STREAM_OPENING_EVENT, 'status', 'text', 'done', STREAM_OPENING_EVENT, 'status']);
  for (const event of events) expect({ event, valid: validate(event), errors: validate.errors ?? null }).toEqual({ event, valid: true, errors: null });
  // An event type outside the table is a contradiction too.
  expect(validate({ event: 'message', data: '{}' })).toBe(false);
});

test('headers over the server limit get 431 in the API error shape, documented on every operation', async () => {
  // Found by the contract fuzzer: Node refuses a query string past 16 KiB before any route, and the
  // answer was undocumented and in Fastify's own shape.
  const { app, doc } = await setup();
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const m of METHODS.filter((x) => item[x])) {
      const schema = item[m]?.responses['431']?.content?.['application/json']?.schema;
      expect({ path, m, documented: schema !== undefined }).toEqual({ path, m, documented: true });
    }
  }
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  try {
    const res = await fetch(`${url}/v1/turns/turn-s1-abc/events?after=${'1'.repeat(20_000)}`, { headers: ALICE });
    expect(res.status).toBe(431);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await res.json()).toEqual({ error: { code: 'header_fields_too_large', message: expect.any(String) } });
  } finally {
    await app.close();
  }
});
