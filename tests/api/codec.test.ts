import { randomBytes } from 'node:crypto';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import type { FastifyInstance } from 'fastify';
import { buildApp, type Authenticator } from '../../src/api/app';
import { HttpError } from '../../src/api/errors';
import type { TurnGateway } from '../../src/api/gateway';
import { CODEC_COOKIE } from '../../src/api/routes/codec';
import { createPayloadCodec, ENCRYPTED_ENCODING } from '../../src/security/payload-codec';
import type { Policy } from '../../src/shared/policy';

/** The codec server (src/api/routes/codec.ts) through fastify.inject: who may decode, the cookie, CORS. */
const UI = 'http://127.0.0.1:8233';
const USERS: Record<string, string[]> = { operator: ['payloads.decode'], root: ['admin.super'], teacher: ['teacher.homework'] };
const auth: Authenticator = {
  async authenticate(header) {
    const who = /^Bearer (\w+)$/.exec(header ?? '')?.[1];
    const scopes = who ? USERS[who] : undefined;
    if (!who || !scopes) throw new HttpError(401, 'missing_token', 'Authentication required');
    return { id: who, role: 'staff', tenant: 't', scopes };
  },
};
const policy: Policy = { roles: {}, toolScopes: {}, superScope: 'admin.super' };
const key = { id: 'k1', key: randomBytes(32) };
const codec = createPayloadCodec({ keys: [key] });
const SECRET = { text: 'my account number is 12345678' };

const json = (p: Payload) => ({
  metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
  data: Buffer.from(p.data ?? new Uint8Array()).toString('base64'),
});
const fromJson = (p: { metadata: Record<string, string>; data: string }): Payload => ({
  metadata: Object.fromEntries(Object.entries(p.metadata).map(([k, v]) => [k, new Uint8Array(Buffer.from(v, 'base64'))])),
  data: new Uint8Array(Buffer.from(p.data, 'base64')),
});

async function app(withCodec = true): Promise<FastifyInstance> {
  return await buildApp({
    gateway: {} as TurnGateway,
    auth,
    policy: () => policy,
    logger: false,
    maxMessageChars: 1000,
    ssePollMs: 50,
    corsOrigins: ['http://console.example'],
    ...(withCodec ? { codec: { codec, namespace: 'default', uiOrigins: [UI] } } : {}),
  });
}

let api: FastifyInstance;
let sealed: Payload;
beforeAll(async () => {
  api = await app();
  [sealed] = await codec.encode([defaultPayloadConverter.toPayload(SECRET)]) as [Payload];
});
afterAll(async () => await api.close());

const decode = (headers: Record<string, string>, payloads: unknown[] = [json(sealed)]) =>
  api.inject({ method: 'POST', url: '/v1/codec/decode', headers: { 'content-type': 'application/json', 'x-namespace': 'default', ...headers }, payload: { payloads } });

test('an operator (scope payloads.decode) or a holder of the super scope reads decoded payloads', async () => {
  for (const who of ['operator', 'root']) {
    const res = await decode({ authorization: `Bearer ${who}` });
    expect(res.statusCode).toBe(200);
    const [p] = (res.json() as { payloads: Array<{ metadata: Record<string, string>; data: string }> }).payloads;
    expect(defaultPayloadConverter.fromPayload(fromJson(p!))).toEqual(SECRET);
  }
});

test('nobody else: no token is 401, a user without the scope 403', async () => {
  expect((await decode({})).statusCode).toBe(401);
  const res = await decode({ authorization: 'Bearer teacher' });
  expect(res.statusCode).toBe(403);
  expect(res.body).not.toContain('12345678');
});

test('encode seals what decode opens; another namespace and a malformed body are refused', async () => {
  const plain = json(defaultPayloadConverter.toPayload(SECRET));
  const encoded = await api.inject({ method: 'POST', url: '/v1/codec/encode', headers: { authorization: 'Bearer operator' }, payload: { payloads: [plain] } });
  expect(encoded.statusCode).toBe(200);
  const [e] = (encoded.json() as { payloads: Array<{ metadata: Record<string, string>; data: string }> }).payloads;
  expect(Buffer.from(e!.metadata.encoding!, 'base64').toString()).toBe(ENCRYPTED_ENCODING);
  expect(defaultPayloadConverter.fromPayload((await codec.decode([fromJson(e!)]))[0]!)).toEqual(SECRET);
  expect((await decode({ authorization: 'Bearer operator', 'x-namespace': 'other' })).statusCode).toBe(400);
  expect((await decode({ authorization: 'Bearer operator' }, [{ data: 42 }])).statusCode).toBe(400);
});

test('a payload under a key no longer listed stays as it is; the others are decoded', async () => {
  const [foreign] = await createPayloadCodec({ keys: [{ id: 'gone', key: randomBytes(32) }] }).encode([defaultPayloadConverter.toPayload('x'.repeat(300))]);
  const res = await decode({ authorization: 'Bearer operator' }, [json(foreign!), json(sealed)]);
  const [kept, opened] = (res.json() as { payloads: Array<{ metadata: Record<string, string>; data: string }> }).payloads;
  expect(kept).toEqual(json(foreign!));
  expect(defaultPayloadConverter.fromPayload(fromJson(opened!))).toEqual(SECRET);
});

test('the browser way: POST /v1/codec/session sets an HttpOnly cookie that the codec routes (only they) accept', async () => {
  expect((await api.inject({ method: 'POST', url: '/v1/codec/session', headers: { authorization: 'Bearer teacher' } })).statusCode).toBe(403);
  const res = await api.inject({ method: 'POST', url: '/v1/codec/session', headers: { authorization: 'Bearer operator' } });
  expect(res.statusCode).toBe(200);
  const cookie = String(res.headers['set-cookie']);
  expect(cookie).toMatch(new RegExp(`^${CODEC_COOKIE}=operator; Path=/v1/codec; HttpOnly; SameSite=Strict`));
  const viaCookie = await decode({ cookie: `theme=dark; ${CODEC_COOKIE}=operator` });
  expect(viaCookie.statusCode).toBe(200);
  // Elsewhere the cookie is no credential.
  expect((await api.inject({ method: 'GET', url: '/v1/servers', headers: { cookie: `${CODEC_COOKIE}=operator` } })).statusCode).toBe(401);
  const out = await api.inject({ method: 'DELETE', url: '/v1/codec/session', headers: { authorization: 'Bearer operator' } });
  expect(out.statusCode).toBe(204);
  expect(String(out.headers['set-cookie'])).toContain('Max-Age=0');
});

test('CORS: the Temporal UI origin may call with credentials (errors included); other origins get no CORS headers', async () => {
  const preflight = await api.inject({
    method: 'OPTIONS', url: '/v1/codec/decode',
    headers: { origin: UI, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type,x-namespace' },
  });
  expect(preflight.statusCode).toBe(204);
  expect(preflight.headers['access-control-allow-origin']).toBe(UI);
  expect(preflight.headers['access-control-allow-credentials']).toBe('true');
  expect(String(preflight.headers['access-control-allow-headers'])).toContain('x-namespace');
  const denied = await decode({ origin: UI });
  expect(denied.statusCode).toBe(401);
  expect(denied.headers['access-control-allow-origin']).toBe(UI);
  for (const origin of ['http://evil.example', 'http://console.example']) {
    const res = await decode({ origin, authorization: 'Bearer operator' });
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
  }
});

test('hidden from the OpenAPI document; absent without payload keys', async () => {
  expect(JSON.stringify((await api.inject({ method: 'GET', url: '/openapi.json' })).json())).not.toContain('/v1/codec');
  const bare = await app(false);
  try {
    expect((await bare.inject({ method: 'POST', url: '/v1/codec/decode', headers: { authorization: 'Bearer operator' }, payload: { payloads: [] } })).statusCode).toBe(404);
  } finally {
    await bare.close();
  }
});
