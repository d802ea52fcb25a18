import { createHmac } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWTPayload } from 'jose';
import { createAuthenticator, DEFAULT_AUDIENCE, DEFAULT_ISSUER, loadAuthConfig, mintDevToken, type Authenticator } from '../../src/api/auth';
import { HttpError } from '../../src/api/errors';
import { mintTokenFromArgs, UsageError } from '../../src/cli/mint-token';
import { ConfigError } from '../../src/config';
import { loadPolicyFile } from '../../src/config/policy';

const SECRET = 'unit-test-secret-0123456789-abcdefghijklmnop';
const OTHER_SECRET = 'another-secret-0123456789-abcdefghijklmnopq';
const key = (secret: string) => new TextEncoder().encode(secret);
const now = () => Math.floor(Date.now() / 1000);
const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

const goodClaims = { role: 'teacher', tenant_id: 'demo', scopes: ['teacher.homework', 'comms.send'] };

/** A signed HS256 (or other HMAC) token with full control over claims and header. */
async function sign(
  claims: JWTPayload,
  opts: { secret?: string; alg?: string; iss?: string | null; aud?: string | null; sub?: string | null; exp?: number | null; nbf?: number } = {},
): Promise<string> {
  const jwt = new SignJWT(claims).setProtectedHeader({ alg: opts.alg ?? 'HS256', typ: 'JWT' }).setIssuedAt();
  if (opts.sub !== null) jwt.setSubject(opts.sub ?? 'u-tom');
  if (opts.iss !== null) jwt.setIssuer(opts.iss ?? DEFAULT_ISSUER);
  if (opts.aud !== null) jwt.setAudience(opts.aud ?? DEFAULT_AUDIENCE);
  if (opts.exp !== null) jwt.setExpirationTime(opts.exp ?? now() + 600);
  if (opts.nbf !== undefined) jwt.setNotBefore(opts.nbf);
  return jwt.sign(key(opts.secret ?? SECRET));
}

/** Expects an HttpError with this status and code; its message must leak neither token nor secret. */
async function expectRejected(
  auth: Authenticator,
  header: string | undefined,
  status: number,
  code: string,
  messagePart?: string | RegExp,
): Promise<HttpError> {
  let caught: unknown;
  try {
    await auth.authenticate(header);
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(HttpError);
  const err = caught as HttpError;
  expect({ status: err.statusCode, code: err.code }).toEqual({ status, code });
  if (messagePart !== undefined) expect(err.message).toMatch(messagePart);
  expect(err.message.length).toBeGreaterThan(10);
  for (const secret of [SECRET, OTHER_SECRET]) expect(err.message).not.toContain(secret);
  const token = /^bearer\s+(.+)$/i.exec(header?.trim() ?? '')?.[1] ?? header?.trim() ?? '';
  if (token.length >= 8) expect(err.message).not.toContain(token);
  for (const part of token.split('.')) if (part.length >= 8) expect(err.message).not.toContain(part);
  return err;
}

describe('createAuthenticator (shared secret, HS256)', () => {
  const auth = createAuthenticator({ hs256Secret: SECRET, issuer: DEFAULT_ISSUER, audience: DEFAULT_AUDIENCE });

  it('turns a valid token into a UserContext', async () => {
    const token = await sign(goodClaims);
    await expect(auth.authenticate(`Bearer ${token}`)).resolves.toEqual({
      id: 'u-tom',
      role: 'teacher',
      tenant: 'demo',
      scopes: ['teacher.homework', 'comms.send'],
    });
    // Scheme is case-insensitive; surrounding whitespace is fine.
    await expect(auth.authenticate(`  bearer   ${token} `)).resolves.toMatchObject({ id: 'u-tom' });
  });

  it('accepts a space-separated "scope" claim and no scopes at all', async () => {
    const spaced = await sign({ role: 'student', tenant_id: 'demo', scope: 'student.read  student.submit' }, { sub: 'u-bob' });
    await expect(auth.authenticate(`Bearer ${spaced}`)).resolves.toEqual({
      id: 'u-bob',
      role: 'student',
      tenant: 'demo',
      scopes: ['student.read', 'student.submit'],
    });
    const none = await sign({ role: 'student', tenant_id: 'demo' }, { sub: 'u-bob' });
    await expect(auth.authenticate(`Bearer ${none}`)).resolves.toMatchObject({ scopes: [] });
  });

  it('accepts tokens from mintDevToken', async () => {
    const token = await mintDevToken({ secret: SECRET, sub: 'u-ada', role: 'admin', tenant: 'demo', scopes: ['admin.super'], ttlSec: 60 });
    await expect(auth.authenticate(`Bearer ${token}`)).resolves.toEqual({ id: 'u-ada', role: 'admin', tenant: 'demo', scopes: ['admin.super'] });
  });

  it('rejects a missing header: missing_token', async () => {
    await expectRejected(auth, undefined, 401, 'missing_token', /Authorization: Bearer/);
    await expectRejected(auth, '', 401, 'missing_token');
    await expectRejected(auth, '   ', 401, 'missing_token');
  });

  it('rejects anything but "Bearer <token>": malformed_authorization', async () => {
    const token = await sign(goodClaims);
    await expectRejected(auth, `Basic ${Buffer.from('a:b').toString('base64')}`, 401, 'malformed_authorization', /Bearer <token>/);
    await expectRejected(auth, 'Bearer', 401, 'malformed_authorization');
    await expectRejected(auth, `Bearer ${token} extra`, 401, 'malformed_authorization');
    await expectRejected(auth, token, 401, 'malformed_authorization');
  });

  it('rejects a malformed JWT: malformed_token', async () => {
    await expectRejected(auth, 'Bearer not-a-jwt', 401, 'malformed_token', /well-formed JWT/);
    await expectRejected(auth, 'Bearer a.b.c.d', 401, 'malformed_token');
    await expectRejected(auth, 'Bearer abc$.def.ghi', 401, 'malformed_token');
    await expectRejected(auth, `Bearer ${'a'.repeat(9000)}.b.c`, 401, 'malformed_token');
    // Header is not JSON.
    await expectRejected(auth, `Bearer ${Buffer.from('{nope').toString('base64url')}.${b64({})}.c2ln`, 401, 'malformed_token', /header/);
    // Header without alg.
    await expectRejected(auth, `Bearer ${b64({ typ: 'JWT' })}.${b64({})}.c2ln`, 401, 'malformed_token', /"alg"/);
    // Payload is not JSON: the signature is valid, the content is not a JWT.
    const valid = await sign(goodClaims);
    const [h] = valid.split('.');
    const badPayload = `${h}.${Buffer.from('not json').toString('base64url')}`;
    const sig = createHmac('sha256', SECRET).update(badPayload).digest('base64url');
    await expectRejected(auth, `Bearer ${badPayload}.${sig}`, 401, 'malformed_token');
  });

  it('rejects alg "none": unsupported_alg', async () => {
    const payload = { sub: 'u-ada', role: 'admin', tenant_id: 'demo', scopes: ['admin.super'], iss: DEFAULT_ISSUER, aud: DEFAULT_AUDIENCE, exp: now() + 600 };
    for (const alg of ['none', 'None', 'NONE']) {
      await expectRejected(auth, `Bearer ${b64({ alg, typ: 'JWT' })}.${b64(payload)}.`, 401, 'unsupported_alg', /HS256/);
    }
    // With a (meaningless) signature part too.
    await expectRejected(auth, `Bearer ${b64({ alg: 'none' })}.${b64(payload)}.c2lnbmF0dXJl`, 401, 'unsupported_alg');
  });

  it('rejects any other algorithm: unsupported_alg', async () => {
    await expectRejected(auth, `Bearer ${await sign(goodClaims, { alg: 'HS512' })}`, 401, 'unsupported_alg');
    await expectRejected(auth, `Bearer ${await sign(goodClaims, { alg: 'HS384' })}`, 401, 'unsupported_alg');
    // A token claiming RS256 (the key-confusion attack needs the verifier to accept it).
    const rs = `${b64({ alg: 'RS256' })}.${b64({ ...goodClaims, exp: now() + 60 })}.c2ln`;
    await expectRejected(auth, `Bearer ${rs}`, 401, 'unsupported_alg');
  });

  it('rejects a token signed with another secret: bad_signature', async () => {
    await expectRejected(auth, `Bearer ${await sign(goodClaims, { secret: OTHER_SECRET })}`, 401, 'bad_signature', /signature/);
    // A tampered payload under the original signature.
    const [h, , s] = (await sign(goodClaims)).split('.');
    const forged = `${h}.${b64({ ...goodClaims, role: 'admin', sub: 'u-tom', iss: DEFAULT_ISSUER, aud: DEFAULT_AUDIENCE, exp: now() + 60 })}.${s}`;
    await expectRejected(auth, `Bearer ${forged}`, 401, 'bad_signature');
  });

  it('rejects an expired token: token_expired', async () => {
    await expectRejected(auth, `Bearer ${await sign(goodClaims, { exp: now() - 60 })}`, 401, 'token_expired', /expired/);
  });

  it('tolerates a little clock skew, configurable', async () => {
    const justExpired = await sign(goodClaims, { exp: now() - 2 });
    await expect(auth.authenticate(`Bearer ${justExpired}`)).resolves.toMatchObject({ id: 'u-tom' });
    const strict = createAuthenticator({ hs256Secret: SECRET, issuer: DEFAULT_ISSUER, audience: DEFAULT_AUDIENCE, clockToleranceSec: 0 });
    await expectRejected(strict, `Bearer ${justExpired}`, 401, 'token_expired');
  });

  it('rejects a token whose nbf is in the future: token_not_yet_valid', async () => {
    await expectRejected(auth, `Bearer ${await sign(goodClaims, { nbf: now() + 600 })}`, 401, 'token_not_yet_valid', /not valid yet/);
  });

  it('rejects a wrong or missing issuer: wrong_issuer', async () => {
    const err = await expectRejected(auth, `Bearer ${await sign(goodClaims, { iss: 'someone-else' })}`, 401, 'wrong_issuer', /issuer/);
    expect(err.message).not.toContain('someone-else');
    await expectRejected(auth, `Bearer ${await sign(goodClaims, { iss: null })}`, 401, 'wrong_issuer', /"iss"/);
  });

  it('rejects a wrong or missing audience: wrong_audience', async () => {
    await expectRejected(auth, `Bearer ${await sign(goodClaims, { aud: 'another-api' })}`, 401, 'wrong_audience', /"aud"/);
    await expectRejected(auth, `Bearer ${await sign(goodClaims, { aud: null })}`, 401, 'wrong_audience');
  });

  it('requires exp: invalid_claims', async () => {
    await expectRejected(auth, `Bearer ${await sign(goodClaims, { exp: null })}`, 401, 'invalid_claims', /"exp" is missing/);
    await expectRejected(auth, `Bearer ${await sign({ ...goodClaims, exp: 'tomorrow' } as unknown as JWTPayload, { exp: null })}`, 401, 'invalid_claims', /"exp" is invalid/);
  });

  it.each<[string, JWTPayload, { sub?: string | null }, RegExp]>([
    ['missing role', { tenant_id: 'demo', scopes: [] }, {}, /"role" is missing/],
    ['missing tenant_id', { role: 'teacher', scopes: [] }, {}, /"tenant_id" is missing/],
    ['missing sub', goodClaims, { sub: null }, /"sub" is missing/],
    ['a role that is not a name', { ...goodClaims, role: 'teacher; drop table' }, {}, /"role" must be a string matching/],
    ['a numeric tenant_id', { ...goodClaims, tenant_id: 42 }, {}, /"tenant_id" must be a string matching/],
    ['scopes not an array', { ...goodClaims, scopes: 'teacher.homework' }, {}, /"scopes" must be an array of scope strings/],
    ['scopes holding non-strings', { ...goodClaims, scopes: ['a', 7] }, {}, /"scopes" must be an array/],
    ['a scope with a space', { ...goodClaims, scopes: ['a b'] }, {}, /"scopes" must hold/],
    ['a non-string scope claim', { role: 'teacher', tenant_id: 'demo', scope: ['x'] }, {}, /"scope" must be a space-separated string/],
  ])('rejects %s: invalid_claims naming the claim', async (_name, claims, opts, message) => {
    await expectRejected(auth, `Bearer ${await sign(claims, opts)}`, 401, 'invalid_claims', message);
  });

  it('names every bad claim at once', async () => {
    const err = await expectRejected(auth, `Bearer ${await sign({ scopes: 3 })}`, 401, 'invalid_claims');
    expect(err.message).toContain('"role" is missing');
    expect(err.message).toContain('"tenant_id" is missing');
    expect(err.message).toContain('"scopes" must be');
  });
});

describe('createAuthenticator (JWKS)', () => {
  let server: http.Server;
  let jwksUrl: string;
  let requests = 0;
  let rsa: { privateKey: CryptoKey; publicKey: CryptoKey };
  let es: { privateKey: CryptoKey; publicKey: CryptoKey };
  let ed: { privateKey: CryptoKey; publicKey: CryptoKey };
  let stranger: { privateKey: CryptoKey; publicKey: CryptoKey };
  let auth: Authenticator;

  beforeAll(async () => {
    [rsa, es, ed, stranger] = await Promise.all([generateKeyPair('RS256'), generateKeyPair('ES256'), generateKeyPair('EdDSA'), generateKeyPair('RS256')]);
    const keys = [
      { ...(await exportJWK(rsa.publicKey)), kid: 'rsa-1', alg: 'RS256', use: 'sig' },
      { ...(await exportJWK(es.publicKey)), kid: 'ec-1', alg: 'ES256', use: 'sig' },
      { ...(await exportJWK(ed.publicKey)), kid: 'ed-1', alg: 'EdDSA', use: 'sig' },
    ];
    server = http.createServer((req, res) => {
      requests += 1;
      if (req.url !== '/.well-known/jwks.json') {
        res.writeHead(500).end('boom');
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    jwksUrl = `${base}/.well-known/jwks.json`;
    auth = createAuthenticator({ jwksUrl, issuer: 'https://idp.example', audience: 'school-api' });
  });

  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const signWith = (privateKey: CryptoKey, alg: string, kid: string | undefined, claims: JWTPayload = goodClaims) =>
    new SignJWT(claims)
      .setProtectedHeader({ alg, ...(kid ? { kid } : {}) })
      .setSubject('u-tom')
      .setIssuer('https://idp.example')
      .setAudience('school-api')
      .setExpirationTime('10m')
      .sign(privateKey);

  it('accepts RS256, ES256 and EdDSA tokens signed by keys of the set', async () => {
    const expected = { id: 'u-tom', role: 'teacher', tenant: 'demo', scopes: ['teacher.homework', 'comms.send'] };
    await expect(auth.authenticate(`Bearer ${await signWith(rsa.privateKey, 'RS256', 'rsa-1')}`)).resolves.toEqual(expected);
    await expect(auth.authenticate(`Bearer ${await signWith(es.privateKey, 'ES256', 'ec-1')}`)).resolves.toEqual(expected);
    await expect(auth.authenticate(`Bearer ${await signWith(ed.privateKey, 'EdDSA', 'ed-1')}`)).resolves.toEqual(expected);
    // No kid: the one RS256 key of the set is used.
    await expect(auth.authenticate(`Bearer ${await signWith(rsa.privateKey, 'RS256', undefined)}`)).resolves.toEqual(expected);
    // The set is cached, not fetched per request.
    expect(requests).toBe(1);
  });

  it('rejects a token signed by a key outside the set: bad_signature', async () => {
    await expectRejected(auth, `Bearer ${await signWith(stranger.privateKey, 'RS256', 'rsa-1')}`, 401, 'bad_signature', /signature does not verify/);
    await expectRejected(auth, `Bearer ${await signWith(stranger.privateKey, 'RS256', undefined)}`, 401, 'bad_signature');
    await expectRejected(auth, `Bearer ${await signWith(stranger.privateKey, 'RS256', 'unknown-kid')}`, 401, 'bad_signature', /No trusted key/);
  });

  it('never accepts HS256 (or none) in JWKS mode: unsupported_alg', async () => {
    // The classic confusion attack: HMAC keyed with the public key's bytes.
    const publicJwk = JSON.stringify(await exportJWK(rsa.publicKey));
    const hs = await sign(goodClaims, { secret: publicJwk.padEnd(64, '=') });
    await expectRejected(auth, `Bearer ${hs}`, 401, 'unsupported_alg', /RS256, ES256, EdDSA/);
    await expectRejected(auth, `Bearer ${b64({ alg: 'none' })}.${b64({ ...goodClaims, exp: now() + 60 })}.`, 401, 'unsupported_alg');
  });

  it('checks issuer and audience in JWKS mode too', async () => {
    const wrongIss = await new SignJWT(goodClaims).setProtectedHeader({ alg: 'RS256', kid: 'rsa-1' }).setSubject('u').setIssuer('x').setAudience('school-api').setExpirationTime('1m').sign(rsa.privateKey);
    await expectRejected(auth, `Bearer ${wrongIss}`, 401, 'wrong_issuer');
  });

  it('answers 503 when the key set cannot be fetched', async () => {
    const broken = createAuthenticator({ jwksUrl: jwksUrl.replace('jwks.json', 'missing.json'), issuer: 'https://idp.example', audience: 'school-api' });
    await expectRejected(broken, `Bearer ${await signWith(rsa.privateKey, 'RS256', 'rsa-1')}`, 503, 'auth_unavailable');

    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const down = createAuthenticator({ jwksUrl: `http://127.0.0.1:${port}/jwks.json`, issuer: 'https://idp.example', audience: 'school-api' });
    await expectRejected(down, `Bearer ${await signWith(rsa.privateKey, 'RS256', 'rsa-1')}`, 503, 'auth_unavailable');
  });
});

describe('createAuthenticator options', () => {
  it('needs exactly one of secret and JWKS URL, and a long enough secret', () => {
    expect(() => createAuthenticator({ issuer: 'i', audience: 'a' })).toThrow(ConfigError);
    expect(() => createAuthenticator({ hs256Secret: SECRET, jwksUrl: 'http://127.0.0.1/jwks', issuer: 'i', audience: 'a' })).toThrow(/exactly one/);
    expect(() => createAuthenticator({ hs256Secret: 'short', issuer: 'i', audience: 'a' })).toThrow(/at least 32 characters/);
    expect(() => createAuthenticator({ jwksUrl: 'not a url', issuer: 'i', audience: 'a' })).toThrow(/JWT_JWKS_URL must be a URL/);
    expect(() => createAuthenticator({ jwksUrl: 'ftp://x/jwks', issuer: 'i', audience: 'a' })).toThrow(/http\(s\)/);
    expect(() => createAuthenticator({ hs256Secret: SECRET, issuer: '', audience: 'a' })).toThrow(/issuer/);
  });
});

describe('loadAuthConfig', () => {
  it('reads the secret with default issuer and audience', () => {
    expect(loadAuthConfig({ JWT_SECRET: SECRET })).toEqual({ hs256Secret: SECRET, issuer: 'durable-mcp-host', audience: 'durable-mcp-host-api' });
    expect(loadAuthConfig({ JWT_JWKS_URL: 'https://idp.example/jwks.json', JWT_ISSUER: 'https://idp.example', JWT_AUDIENCE: 'api' })).toEqual({
      jwksUrl: 'https://idp.example/jwks.json',
      issuer: 'https://idp.example',
      audience: 'api',
    });
  });

  it('fails clearly, without echoing the secret', () => {
    expect(() => loadAuthConfig({})).toThrow(ConfigError);
    expect(() => loadAuthConfig({})).toThrow(/set JWT_SECRET .* or JWT_JWKS_URL/);
    expect(() => loadAuthConfig({ JWT_SECRET: SECRET, JWT_JWKS_URL: 'https://idp.example/jwks.json' })).toThrow(/only one/);
    expect(() => loadAuthConfig({ JWT_JWKS_URL: 'idp.example/jwks' })).toThrow(/JWT_JWKS_URL/);
    const short = 'tooshort-secret-value';
    let message = '';
    try {
      loadAuthConfig({ JWT_SECRET: short });
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      message = (err as Error).message;
    }
    expect(message).toMatch(/JWT_SECRET must be at least 32 characters/);
    expect(message).not.toContain(short);
  });
});

describe('loadPolicyFile', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'policy-'));

  it('loads examples/policy.json', () => {
    const policy = loadPolicyFile(path.join(__dirname, '../../examples/policy.json'));
    expect(policy.superScope).toBe('admin.super');
    expect(Object.keys(policy.roles).sort()).toEqual(['admin', 'student', 'teacher']);
  });

  it('names the file and the field', () => {
    const missing = path.join(dir, 'nope.json');
    expect(() => loadPolicyFile(missing)).toThrow(new RegExp(`cannot read policy file ${missing}`));
    const notJson = path.join(dir, 'bad.json');
    writeFileSync(notJson, '{ roles: ');
    expect(() => loadPolicyFile(notJson)).toThrow(/is not valid JSON/);
    const invalid = path.join(dir, 'invalid.json');
    writeFileSync(invalid, JSON.stringify({ roles: { admin: { servers: { '*': { tools: 'all' } } } } }));
    expect(() => loadPolicyFile(invalid)).toThrow(ConfigError);
    expect(() => loadPolicyFile(invalid)).toThrow(`policy file ${invalid} is invalid: roles.admin.servers["*"].tools: must be "*" or an array of tool names`);
  });
});

describe('mintDevToken', () => {
  it('refuses bad inputs', async () => {
    await expect(mintDevToken({ secret: 'short', sub: 'u', role: 'admin', tenant: 'demo', scopes: [] })).rejects.toThrow(/at least 32/);
    await expect(mintDevToken({ secret: SECRET, sub: 'u', role: 'bad role', tenant: 'demo', scopes: [] })).rejects.toThrow(/role: must match/);
    await expect(mintDevToken({ secret: SECRET, sub: '', role: 'admin', tenant: 'demo', scopes: [] })).rejects.toThrow(/sub: must not be empty/);
    await expect(mintDevToken({ secret: SECRET, sub: 'u', role: 'admin', tenant: 'demo', scopes: ['a b'] })).rejects.toThrow(/scopes\[0\]/);
    await expect(mintDevToken({ secret: SECRET, sub: 'u', role: 'admin', tenant: 'demo', scopes: [], ttlSec: 0 })).rejects.toThrow(/ttlSec/);
  });

  it('honours ttl, issuer and audience', async () => {
    const token = await mintDevToken({ secret: SECRET, sub: 'u-1', role: 'admin', tenant: 't1', scopes: [], ttlSec: 1, issuer: 'iss-x', audience: 'aud-x' });
    const auth = createAuthenticator({ hs256Secret: SECRET, issuer: 'iss-x', audience: 'aud-x', clockToleranceSec: 0 });
    await expect(auth.authenticate(`Bearer ${token}`)).resolves.toEqual({ id: 'u-1', role: 'admin', tenant: 't1', scopes: [] });
    const payload = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString()) as { exp: number; iat: number };
    expect(payload.exp - payload.iat).toBe(1);
  });
});

describe('mint-token CLI', () => {
  const env = { JWT_SECRET: SECRET };
  const auth = createAuthenticator({ hs256Secret: SECRET, issuer: DEFAULT_ISSUER, audience: DEFAULT_AUDIENCE });
  const userOf = async (args: string[], e: NodeJS.ProcessEnv = env) => auth.authenticate(`Bearer ${await mintTokenFromArgs(args, e)}`);

  it('mints the demo users of the school seed', async () => {
    await expect(userOf(['--role', 'admin'])).resolves.toEqual({ id: 'u-ada', role: 'admin', tenant: 'demo', scopes: ['admin.super'] });
    await expect(userOf(['--role', 'teacher'])).resolves.toEqual({
      id: 'u-tom',
      role: 'teacher',
      tenant: 'demo',
      scopes: ['teacher.homework', 'teacher.attendance', 'comms.send'],
    });
    await expect(userOf(['--role', 'student'])).resolves.toEqual({ id: 'u-bob', role: 'student', tenant: 'demo', scopes: ['student.read', 'student.submit'] });
  });

  it('takes overrides', async () => {
    await expect(userOf(['--role', 'student', '--sub', 'u-carol', '--tenant', 'other', '--scopes', 'student.read,x.y', '--ttl', '60'])).resolves.toEqual({
      id: 'u-carol',
      role: 'student',
      tenant: 'other',
      scopes: ['student.read', 'x.y'],
    });
    await expect(userOf(['--role', 'teacher', '--scopes', ''])).resolves.toMatchObject({ scopes: [] });
    await expect(userOf(['--role', 'guest', '--sub', 'u-g'])).resolves.toEqual({ id: 'u-g', role: 'guest', tenant: 'demo', scopes: [] });
  });

  it('uses JWT_ISSUER and JWT_AUDIENCE like the API', async () => {
    const token = await mintTokenFromArgs(['--role', 'admin'], { ...env, JWT_ISSUER: 'iss-y', JWT_AUDIENCE: 'aud-y' });
    const custom = createAuthenticator({ hs256Secret: SECRET, issuer: 'iss-y', audience: 'aud-y' });
    await expect(custom.authenticate(`Bearer ${token}`)).resolves.toMatchObject({ id: 'u-ada' });
  });

  it.each<[string, string[], NodeJS.ProcessEnv, RegExp]>([
    ['JWT_SECRET unset', ['--role', 'admin'], {}, /JWT_SECRET is not set/],
    ['a short JWT_SECRET', ['--role', 'admin'], { JWT_SECRET: 'short' }, /at least 32 characters/],
    ['no --role', [], env, /--role is required/],
    ['an unknown role without --sub', ['--role', 'guest'], env, /--sub is required for role "guest"/],
    ['an invalid role', ['--role', 'bad role', '--sub', 'x'], env, /role: must match/],
    ['a bad --ttl', ['--role', 'admin', '--ttl', '1h'], env, /--ttl must be a positive number/],
    ['an unknown option', ['--role', 'admin', '--admin'], env, /Unknown option '--admin'/],
  ])('fails clearly on %s', async (_name, args, e, message) => {
    const result = mintTokenFromArgs(args, e);
    await expect(result).rejects.toBeInstanceOf(UsageError);
    await expect(mintTokenFromArgs(args, e)).rejects.toThrow(message);
  });
});
