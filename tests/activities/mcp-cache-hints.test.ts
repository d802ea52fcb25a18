import pino from 'pino';
import { parseMcpConfig } from '../../src/mcp/config';
import { McpServerHub } from '../../src/mcp/pool';
import { ResilientHub } from '../../src/mcp/resilience';
import { USER_CONTEXT_META_KEY } from '../../src/shared/meta';
import { ACCOUNT_URI, CACHE_HINT_TTL_MS, NOTICE_URI, startModernServer } from '../helpers/modern-server';

/**
 * A 2026-07-28 server's caching hints, through the pool and the worker's resource cache (decision
 * 0039): a `private` read is kept per user, so a second user never gets the first one's; a `public`
 * one is read once for everyone; both for the server's `ttlMs` (the host's own TTL is 0 here, so
 * whatever is served from cache is the hint's doing). The clock is the test's: nothing waits.
 */
const logger = pino({ level: process.env.DEBUG_HUB ? 'debug' : 'silent' });

let modern: Awaited<ReturnType<typeof startModernServer>>;
let pool: McpServerHub;
let hub: ResilientHub;
let now = 1_000_000;

beforeEach(async () => {
  modern = await startModernServer();
  pool = new McpServerHub(parseMcpConfig({ mcpServers: { kitchen: { url: modern.url, protocol: '2026-07-28' } } }, {}, process.cwd()), { logger });
  hub = new ResilientHub(pool, {
    breaker: { failureThreshold: 5, cooldownMs: 30_000 },
    cache: { ttlMs: 0, maxStaleMs: 0, maxTtlMs: 300_000 },
    now: () => now,
  });
});

afterEach(async () => {
  await hub.close();
  await modern.close();
});

/** The caller's context in `_meta`, as the activities send it. */
const as = (id: string) => ({ meta: { [USER_CONTEXT_META_KEY]: { id, role: 'parent', tenant: 'school', scopes: [] } } });

test("private: a second user's read is never served the first user's cached content; each is cached for the hint's ttlMs", async () => {
  expect(await hub.readResource('kitchen', ACCOUNT_URI, as('ada'))).toBe('Account of ada (read 1).');
  expect(await hub.readResource('kitchen', ACCOUNT_URI, as('bob'))).toBe('Account of bob (read 2).');
  // Each user's own read is served from cache for the server's ttlMs (the host's TTL would not keep it).
  now += CACHE_HINT_TTL_MS - 1;
  expect(await hub.readResource('kitchen', ACCOUNT_URI, as('ada'))).toBe('Account of ada (read 1).');
  expect(await hub.readResource('kitchen', ACCOUNT_URI, as('bob'))).toBe('Account of bob (read 2).');
  expect(modern.state.accountReads).toBe(2);
  now += 1;
  expect(await hub.readResource('kitchen', ACCOUNT_URI, as('ada'))).toBe('Account of ada (read 3).');
});

test('public: one read serves every user until the hint says it is stale', async () => {
  expect(await hub.readResource('kitchen', NOTICE_URI, as('ada'))).toBe('The kitchen closes at nine (read 1).');
  expect(await hub.readResource('kitchen', NOTICE_URI, as('bob'))).toBe('The kitchen closes at nine (read 1).');
  expect(modern.state.noticeReads).toBe(1);
  now += CACHE_HINT_TTL_MS;
  expect(await hub.readResource('kitchen', NOTICE_URI, as('bob'))).toBe('The kitchen closes at nine (read 2).');
});

test("the pool passes the hint up and keeps no cache of its own (the client's would serve one user's read to another)", async () => {
  expect(await pool.readResourceHinted('kitchen', ACCOUNT_URI, as('ada'))).toEqual({
    text: 'Account of ada (read 1).',
    cache: { ttlMs: CACHE_HINT_TTL_MS, scope: 'private' },
  });
  expect(await pool.readResource('kitchen', ACCOUNT_URI, as('bob'))).toBe('Account of bob (read 2).');
  expect((await pool.readResourceHinted('kitchen', NOTICE_URI, as('ada'))).cache).toEqual({ ttlMs: CACHE_HINT_TTL_MS, scope: 'public' });
});
