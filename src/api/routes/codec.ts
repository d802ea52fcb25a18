/**
 * The codec server of Temporal's remote codec protocol, for operators reading histories in the
 * Temporal web UI (or `temporal workflow show --codec-endpoint`): POST /v1/codec/decode and
 * /v1/codec/encode take and answer `{ payloads: [{ metadata: { key: base64 }, data: base64 }] }`.
 * The endpoint to give the UI is `<API>/v1/codec`.
 *
 * Who may call it: a verified caller holding the scope `payloads.decode` or the policy's super scope,
 * as a bearer token (the UI's "pass access token", with its OIDC provider issuing our tokens) or as the
 * cookie POST /v1/codec/session sets (the UI's "include cross-origin credentials"; the console sets it
 * at sign-in). The Temporal UI's origin (TEMPORAL_UI_URL) gets CORS with credentials on these routes.
 * Hidden from the OpenAPI document: the body is Temporal's protocol, not this API's (README: "Payload
 * encryption").
 */
import type { Payload, PayloadCodec } from '@temporalio/common';
import type { FastifyContextConfig, FastifyPluginAsync, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { Policy } from '../../shared/policy';
import type { UserContext } from '../../shared/user';
import { callerOf } from '../caller';
import { HttpError } from '../errors';

export const CODEC_SCOPE = 'payloads.decode';
export const CODEC_COOKIE = 'dmh_codec';
export const CODEC_PREFIX = '/v1/codec';
/** The routes that also accept the cookie instead of an Authorization header. */
export const CODEC_COOKIE_ROUTES: ReadonlySet<string> = new Set([`${CODEC_PREFIX}/decode`, `${CODEC_PREFIX}/encode`]);
/** How long the cookie lives; the token inside keeps its own expiry. */
const COOKIE_MAX_AGE_S = 8 * 3600;

export interface CodecRouteOptions {
  codec: PayloadCodec;
  /** The namespace whose payloads the keys seal; a request naming another one (X-Namespace) is refused. */
  namespace: string;
  /** Browser origins of the Temporal web UI (TEMPORAL_UI_URL's origin). */
  uiOrigins: readonly string[];
  policy: () => Policy;
}

const PayloadJson = z.object({
  metadata: z.record(z.string(), z.string()).nullish(),
  data: z.string().nullish(),
});
const PayloadsBody = z.object({ payloads: z.array(PayloadJson).max(10_000) });

const fromJson = (p: z.infer<typeof PayloadJson>): Payload => ({
  metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, new Uint8Array(Buffer.from(v, 'base64'))])),
  data: new Uint8Array(Buffer.from(p.data ?? '', 'base64')),
});
const toJson = (p: Payload) => ({
  metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
  data: Buffer.from(p.data ?? new Uint8Array()).toString('base64'),
});

export function mayUseCodec(user: UserContext, policy: Policy): boolean {
  return user.scopes.includes(CODEC_SCOPE) || (policy.superScope !== undefined && user.scopes.includes(policy.superScope));
}

/** The codec cookie's value, from a Cookie header. */
export function codecCookieOf(header: string | undefined): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === CODEC_COOKIE) return decodeURIComponent(part.slice(eq + 1).trim());
  }
  return undefined;
}

export const codecRoutes: FastifyPluginAsync<CodecRouteOptions> = async (app, opts) => {
  const origins = new Set(opts.uiOrigins);
  // CORS for the UI's origin only, with credentials (the cookie); other origins get no CORS headers.
  // On every reply of these routes, errors included (a 401 the UI can read, not a CORS failure).
  app.addHook('onSend', async (request, reply, payload) => {
    const origin = request.headers.origin;
    if (origin && origins.has(origin)) {
      void reply.header('access-control-allow-origin', origin).header('access-control-allow-credentials', 'true');
    }
    void reply.header('vary', 'Origin');
    return payload;
  });
  // The API's own CORS (CORS_ORIGINS) stays off these routes: the rules above are theirs.
  // (@fastify/cors reads `config.cors`; its types do not declare it on the route config.)
  const route = { schema: { hide: true }, config: { cors: false } as unknown as FastifyContextConfig };
  const authorize = (request: FastifyRequest): UserContext => {
    const user = callerOf(request);
    if (!mayUseCodec(user, opts.policy())) {
      throw new HttpError(403, 'forbidden', `Reading payloads needs the scope ${CODEC_SCOPE} (or the policy's super scope).`);
    }
    return user;
  };

  for (const name of ['decode', 'encode', 'session']) {
    app.options(`${CODEC_PREFIX}/${name}`, route, async (_request, reply) => {
      return reply
        .header('access-control-allow-methods', name === 'session' ? 'POST, DELETE' : 'POST')
        .header('access-control-allow-headers', 'authorization, content-type, x-namespace')
        .header('access-control-max-age', '600')
        .status(204)
        .send();
    });
  }

  const convert = (direction: 'decode' | 'encode') => async (request: FastifyRequest) => {
    authorize(request);
    const namespace = request.headers['x-namespace'];
    if (typeof namespace === 'string' && namespace !== '' && namespace !== opts.namespace) {
      throw new HttpError(400, 'wrong_namespace', `This codec serves the namespace ${opts.namespace}, not ${namespace}.`);
    }
    const parsed = PayloadsBody.safeParse(request.body);
    if (!parsed.success) throw new HttpError(400, 'invalid_request', 'The body must be { payloads: [{ metadata: { key: base64 }, data: base64 }] }.');
    const payloads = parsed.data.payloads.map(fromJson);
    // One payload at a time: one that does not open (a key no longer listed) stays as it is, the
    // others are still shown decoded.
    const out = await Promise.all(
      payloads.map(async (p) => {
        try {
          return (await opts.codec[direction]([p]))[0] ?? p;
        } catch (err) {
          request.log.warn({ err: (err as Error).message }, `codec ${direction}: a payload was left as it is`);
          return p;
        }
      }),
    );
    return { payloads: out.map(toJson) };
  };
  // Histories hold large payloads: more room than the API's 1 MiB default.
  const bodyLimit = 16 * 1024 * 1024;
  app.post(`${CODEC_PREFIX}/decode`, { ...route, bodyLimit }, convert('decode'));
  app.post(`${CODEC_PREFIX}/encode`, { ...route, bodyLimit }, convert('encode'));

  // The browser's way in: a signed-in operator's token, kept in an HttpOnly cookie for these routes.
  app.post(`${CODEC_PREFIX}/session`, route, async (request, reply) => {
    const user = authorize(request);
    const token = (request.headers.authorization ?? '').replace(/^Bearer\s+/i, '');
    const secure = request.protocol === 'https' ? '; Secure' : '';
    void reply.header('set-cookie', `${CODEC_COOKIE}=${encodeURIComponent(token)}; Path=${CODEC_PREFIX}; HttpOnly; SameSite=Strict; Max-Age=${COOKIE_MAX_AGE_S}${secure}`);
    return { user: user.id, maxAgeSeconds: COOKIE_MAX_AGE_S };
  });
  app.delete(`${CODEC_PREFIX}/session`, route, async (_request, reply) => {
    void reply.header('set-cookie', `${CODEC_COOKIE}=; Path=${CODEC_PREFIX}; HttpOnly; SameSite=Strict; Max-Age=0`);
    return reply.status(204).send();
  });
};
