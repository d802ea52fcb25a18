/**
 * DPoP at the OAuth fetch layer (src/mcp/oauth/dpop.ts), against a scripted server: the proofs it
 * sends are checked with jose as a server would (RFC 9449 §4.3), nonce challenges are retried once.
 * The conformance runner's auth/dpop and auth/dpop-nonce scenarios judge the whole flow.
 */
import { createHash } from 'node:crypto';
import { decodeProtectedHeader, importJWK, jwtVerify, type JWK } from 'jose';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { challengeParams, chooseDpopAlg, DpopSession, isDpopToken } from '../../src/mcp/oauth/dpop';

const AS = 'https://as.example';
const RS = 'https://rs.example/mcp';
const METADATA = { issuer: AS, token_endpoint: `${AS}/token`, dpop_signing_alg_values_supported: ['RS256', 'ES256'] };

interface Seen {
  url: string;
  headers: Headers;
}

/** A fetch answering from `answer`, recording what it was sent. */
function scripted(answer: (url: URL, headers: Headers, n: number) => Response): { fetch: FetchLike; seen: Seen[] } {
  const seen: Seen[] = [];
  const fetch: FetchLike = (input, init) => {
    const headers = new Headers(init?.headers);
    seen.push({ url: String(input), headers });
    return Promise.resolve(answer(new URL(input), headers, seen.length));
  };
  return { fetch, seen };
}

async function verifiedProof(headers: Headers): Promise<{ header: { jwk?: JWK; typ?: string; alg?: string }; claims: Record<string, unknown> }> {
  const proof = headers.get('dpop');
  if (!proof) throw new Error('no DPoP header');
  const header = decodeProtectedHeader(proof) as { jwk?: JWK; typ?: string; alg?: string };
  if (!header.jwk || !header.alg) throw new Error('proof has no jwk or alg');
  const { payload } = await jwtVerify(proof, await importJWK(header.jwk, header.alg));
  return { header, claims: payload };
}

const json = (body: unknown, status = 200, headers: Record<string, string> = {}): Response =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });

test('picks ES256 when offered, else the first algorithm it can sign with, none for symmetric ones', () => {
  expect(chooseDpopAlg(['RS256', 'ES256'])).toBe('ES256');
  expect(chooseDpopAlg(['EdDSA', 'PS256', 'RS256'])).toBe('PS256');
  expect(chooseDpopAlg(['HS256'])).toBeUndefined();
  expect(chooseDpopAlg(undefined)).toBeUndefined();
  expect(isDpopToken({ access_token: 't', token_type: 'DPoP' })).toBe(true);
  expect(isDpopToken({ access_token: 't', token_type: 'Bearer' })).toBe(false);
});

test('reads DPoP challenges as well as Bearer ones', () => {
  const dpop = new Response(null, {
    status: 401,
    headers: { 'www-authenticate': 'DPoP error="use_dpop_nonce", resource_metadata="https://rs.example/.well-known/oauth-protected-resource/mcp", scope="a b"' },
  });
  expect(challengeParams(dpop)).toEqual({
    error: 'use_dpop_nonce',
    scope: 'a b',
    resourceMetadataUrl: new URL('https://rs.example/.well-known/oauth-protected-resource/mcp'),
  });
  const bearer = new Response(null, { status: 403, headers: { 'www-authenticate': 'Bearer error="insufficient_scope", scope="x"' } });
  expect(challengeParams(bearer)).toEqual({ error: 'insufficient_scope', scope: 'x' });
});

test('token requests to a DPoP authorization server carry a proof, and are retried once with its nonce', async () => {
  const session = new DpopSession();
  const server = scripted((url, headers, n) => {
    if (url.pathname.startsWith('/.well-known/')) return json(METADATA);
    if (n === 2) return json({ error: 'use_dpop_nonce' }, 400, { 'dpop-nonce': 'as-nonce-1' });
    return json({ error: 'use_dpop_nonce' }, 400, { 'dpop-nonce': 'as-nonce-2' });
  });
  const tokenFetch = session.tokenFetch(server.fetch, () => Promise.resolve(undefined));
  await (await tokenFetch(`${AS}/.well-known/oauth-authorization-server`, { method: 'GET' })).json();
  const response = await tokenFetch(`${AS}/token?x=1#f`, { method: 'POST', body: new URLSearchParams({ grant_type: 'authorization_code' }) });
  expect(response.status).toBe(400); // the second refusal is the caller's: one retry only
  expect(server.seen).toHaveLength(3);
  expect(server.seen[0]?.headers.has('dpop')).toBe(false);
  const [first, second] = await Promise.all([verifiedProof(server.seen[1]!.headers), verifiedProof(server.seen[2]!.headers)]);
  expect(first.header).toMatchObject({ typ: 'dpop+jwt', alg: 'ES256' });
  expect(first.header.jwk).not.toHaveProperty('d');
  expect(first.claims).toMatchObject({ htm: 'POST', htu: `${AS}/token` });
  expect(first.claims).not.toHaveProperty('nonce');
  expect(second.claims).toMatchObject({ htm: 'POST', htu: `${AS}/token`, nonce: 'as-nonce-1' });
  expect(second.claims['jti']).not.toBe(first.claims['jti']);
});

test('token requests to an authorization server without DPoP carry no proof (stored discovery consulted)', async () => {
  const session = new DpopSession();
  const server = scripted(() => json({ access_token: 'b', token_type: 'Bearer' }));
  const tokenFetch = session.tokenFetch(server.fetch, () => Promise.resolve({ issuer: AS, token_endpoint: `${AS}/token` }));
  await tokenFetch(`${AS}/token`, { method: 'POST', body: 'grant_type=client_credentials' });
  expect(server.seen[0]?.headers.has('dpop')).toBe(false);
});

test('a DPoP-bound token is presented with a fresh proof carrying ath, retried once with the server nonce', async () => {
  const session = new DpopSession();
  const token = 'the-access-token';
  const server = scripted((_url, _headers, n) =>
    n === 1
      ? new Response(null, { status: 401, headers: { 'www-authenticate': 'DPoP error="use_dpop_nonce"', 'dpop-nonce': 'rs-nonce' } })
      : json({ ok: true }),
  );
  const response = await session.sendWithToken(server.fetch, `${RS}?q=1`, { method: 'POST', body: '{}' }, token);
  expect(response.status).toBe(200);
  await session.sendWithToken(server.fetch, RS, { method: 'POST', body: '{}' }, token);
  expect(server.seen).toHaveLength(3);
  const proofs = await Promise.all(server.seen.map((s) => verifiedProof(s.headers)));
  const ath = createHash('sha256').update(token, 'ascii').digest('base64url');
  for (const [i, seen] of server.seen.entries()) {
    expect(seen.headers.get('authorization')).toBe(`DPoP ${token}`);
    expect(proofs[i]?.claims).toMatchObject({ htm: 'POST', htu: RS, ath });
  }
  expect(proofs[0]?.claims).not.toHaveProperty('nonce');
  expect(proofs[1]?.claims).toMatchObject({ nonce: 'rs-nonce' });
  expect(proofs[2]?.claims).toMatchObject({ nonce: 'rs-nonce' }); // remembered for the origin
  expect(new Set(proofs.map((p) => p.claims['jti'])).size).toBe(3);
  expect(new Set(proofs.map((p) => JSON.stringify(p.header.jwk))).size).toBe(1); // one key for the session
});
