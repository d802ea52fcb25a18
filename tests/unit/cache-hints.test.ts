import { cacheHintOf, combineHints, type CacheHint } from '../../src/mcp/cache-hints';
import { parseMcpConfig, type McpServerConfig } from '../../src/mcp/config';
import type { Connection, Slot } from '../../src/mcp/pool-state';
import { ResilientHub } from '../../src/mcp/resilience';
import { listTools } from '../../src/mcp/server-listing';
import type { McpSession } from '../../src/mcp/session';
import { callerContext } from '../../src/mcp/user-token';
import type { Catalog } from '../../src/shared/tool-types';

/**
 * MCP 2026-07-28's caching hints (decision 0039): a resource read is fresh for the server's `ttlMs`
 * (capped by the host), shared between callers only when `public` on a server not per caller, and a
 * tool listing goes stale with its `ttlMs`. On a fake clock: nothing here waits.
 */

const MODERN = '2026-07-28';
const LEGACY = '2025-11-25';

test('a hint is read only on a revision that has them; bad values are the safe ones', () => {
  expect(cacheHintOf({ contents: [], ttlMs: 5_000, cacheScope: 'public' }, MODERN)).toEqual({ ttlMs: 5_000, scope: 'public' });
  expect(cacheHintOf({ contents: [], ttlMs: 5_000, cacheScope: 'public' }, LEGACY)).toBeUndefined();
  expect(cacheHintOf({ contents: [] }, MODERN)).toBeUndefined();
  expect(cacheHintOf({ ttlMs: -3, cacheScope: 'everyone' }, MODERN)).toEqual({ ttlMs: 0, scope: 'private' });
  expect(cacheHintOf({ ttlMs: 'soon' }, MODERN)).toEqual({ ttlMs: 0, scope: 'private' });
  expect(cacheHintOf({ cacheScope: 'public' }, MODERN)).toEqual({ ttlMs: 0, scope: 'public' });
  // Pages as one: the shortest lifetime, private if any page is, none if a page had none.
  const pub = (ttlMs: number): CacheHint => ({ ttlMs, scope: 'public' });
  expect(combineHints(pub(10), pub(5))).toEqual(pub(5));
  expect(combineHints(pub(10), { ttlMs: 20, scope: 'private' })).toEqual({ ttlMs: 10, scope: 'private' });
  expect(combineHints(pub(10), undefined)).toBeUndefined();
});

// ------------------------------------------------------------------ the resource cache

function serverConfig(entry: Record<string, unknown>): McpServerConfig {
  const cfg = parseMcpConfig({ mcpServers: { docs: entry } }, {}, process.cwd()).mcpServers['docs'];
  if (!cfg) throw new Error('no config');
  return cfg;
}

/** A source whose reads say what the test sets (text per caller, hint), counting the reads. */
function hintedSource(cfg: McpServerConfig) {
  const state = { reads: 0, cache: undefined as CacheHint | undefined };
  const catalog: Catalog = { tools: [], servers: [] };
  return {
    state,
    catalog: async () => catalog,
    callTool: async () => ({ isError: false, text: 'ok' }),
    status: async () => [],
    close: async () => undefined,
    getPrompt: async () => 'p',
    serverConfig: () => cfg,
    readResource: async () => 'unhinted',
    async readResourceHinted(_server: string, uri: string, opts?: { meta?: Record<string, unknown> }) {
      state.reads += 1;
      const who = (opts?.meta?.['user'] as string | undefined) ?? 'nobody';
      return { text: `${uri} for ${who} (read ${state.reads})`, ...(state.cache ? { cache: state.cache } : {}) };
    },
  };
}

function hubOver(entry: Record<string, unknown> = { url: 'http://127.0.0.1:1/mcp' }) {
  let now = 1_000_000;
  const source = hintedSource(serverConfig(entry));
  const hub = new ResilientHub(source, {
    breaker: { failureThreshold: 3, cooldownMs: 10_000 },
    cache: { ttlMs: 1_000, maxStaleMs: 60_000, maxTtlMs: 20_000 },
    now: () => now,
  });
  const read = (user: string) => hub.readResource('docs', 'docs://page', { meta: { user } });
  return { source, hub, read, advance: (ms: number) => (now += ms) };
}

test("a server's ttlMs replaces the host's TTL, capped by the host's maximum", async () => {
  const { source, read, advance } = hubOver();
  source.state.cache = { ttlMs: 5_000, scope: 'private' };
  await read('ada');
  advance(4_999);
  expect(await read('ada')).toBe('docs://page for ada (read 1)');
  advance(1);
  expect(await read('ada')).toBe('docs://page for ada (read 2)');
  // A lifetime beyond the host's maximum is cut to it.
  source.state.cache = { ttlMs: 3_600_000, scope: 'private' };
  advance(5_000);
  await read('ada');
  advance(19_999);
  expect(source.state.reads).toBe(3);
  expect(await read('ada')).toBe('docs://page for ada (read 3)');
  advance(1);
  expect(await read('ada')).toBe('docs://page for ada (read 4)');
});

test('ttlMs 0, or no hint at all (2025-11-25), keeps the host TTL, per caller', async () => {
  for (const cache of [{ ttlMs: 0, scope: 'private' as const }, undefined]) {
    const { source, read, advance } = hubOver();
    source.state.cache = cache;
    await read('ada');
    advance(999);
    expect(await read('ada')).toBe('docs://page for ada (read 1)');
    // Another caller is never served the first one's read.
    expect(await read('bob')).toBe('docs://page for bob (read 2)');
    advance(1);
    expect(await read('ada')).toBe('docs://page for ada (read 3)');
  }
});

test('private: each caller has its own entry; public: one read serves every caller', async () => {
  const { source, read } = hubOver();
  source.state.cache = { ttlMs: 10_000, scope: 'private' };
  expect(await read('ada')).toBe('docs://page for ada (read 1)');
  expect(await read('bob')).toBe('docs://page for bob (read 2)');
  expect(await read('ada')).toBe('docs://page for ada (read 1)');
  expect(source.state.reads).toBe(2);

  const shared = hubOver();
  shared.source.state.cache = { ttlMs: 10_000, scope: 'public' };
  expect(await shared.read('ada')).toBe('docs://page for ada (read 1)');
  expect(await shared.read('bob')).toBe('docs://page for ada (read 1)');
  expect(shared.source.state.reads).toBe(1);
});

test('the principal a request is made for keys the cache too, not only the _meta', async () => {
  const { source, hub } = hubOver();
  source.state.cache = { ttlMs: 10_000, scope: 'private' };
  const readAs = (principal: string) => callerContext.run({ principal }, () => hub.readResource('docs', 'docs://page'));
  expect(await readAs('t:ada')).toBe('docs://page for nobody (read 1)');
  expect(await readAs('t:bob')).toBe('docs://page for nobody (read 2)');
  expect(await readAs('t:ada')).toBe('docs://page for nobody (read 1)');
});

test("public on a server reached with each caller's own credentials stays per caller", async () => {
  for (const entry of [
    { url: 'http://127.0.0.1:1/mcp', forwardUserToken: true },
    { url: 'http://127.0.0.1:1/mcp', auth: { type: 'oauth' } },
  ]) {
    const { source, read } = hubOver(entry);
    source.state.cache = { ttlMs: 10_000, scope: 'public' };
    await read('ada');
    expect(await read('bob')).toBe('docs://page for bob (read 2)');
    expect(await read('ada')).toBe('docs://page for ada (read 1)');
  }
});

test('a resource the server says changed is dropped for every caller, shared or not', async () => {
  const { source, hub, read } = hubOver();
  source.state.cache = { ttlMs: 10_000, scope: 'public' };
  await read('ada');
  hub.invalidateResource('docs', 'docs://page');
  expect(await read('bob')).toBe('docs://page for bob (read 2)');
});

// ------------------------------------------------------------------ the tool listing

/** A connection whose `tools/list` answers one tool and the hint the test sets, counting the listings. */
function listingConnection(protocol: string) {
  const state = { lists: 0, hint: {} as Record<string, unknown> };
  const session = {
    kind: 'streamable-http',
    protocolVersion: () => protocol,
    serverCapabilities: () => ({ tools: {} }),
    listTools: async () => {
      state.lists += 1;
      return { tools: [{ name: `tool${state.lists}`, inputSchema: { type: 'object' } }], ...state.hint };
    },
  } as unknown as McpSession;
  const conn = { id: 1, session, kind: 'streamable-http', alive: true, inflight: 0, subscribed: new Set() } as unknown as Connection;
  return { state, conn };
}

const logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };
const slotOf = (entry: Record<string, unknown>): Slot => ({ cfg: serverConfig(entry), secrets: [], stderrTail: [] });

test("a tool listing with a positive ttlMs is listed again once stale; ttlMs 0 and 2025 keep it until list_changed", async () => {
  let now = 0;
  const clock = () => now;
  const slot = slotOf({ url: 'http://127.0.0.1:1/mcp' });
  const names = async (conn: Connection) => (await listTools(logger, slot, conn, clock)).map((t) => t.name);

  const hinted = listingConnection(MODERN);
  hinted.state.hint = { ttlMs: 60_000, cacheScope: 'public' };
  expect(await names(hinted.conn)).toEqual(['tool1']);
  now = 59_999;
  expect(await names(hinted.conn)).toEqual(['tool1']);
  now = 60_000;
  expect(await names(hinted.conn)).toEqual(['tool2']);
  expect(hinted.state.lists).toBe(2);

  for (const [protocol, hint] of [[MODERN, { ttlMs: 0, cacheScope: 'public' }], [LEGACY, { ttlMs: 1, cacheScope: 'public' }]] as const) {
    now = 0;
    const held = listingConnection(protocol);
    held.state.hint = hint;
    await names(held.conn);
    now = 10 * 3_600_000;
    expect(await names(held.conn)).toEqual(['tool1']);
    expect(held.state.lists).toBe(1);
  }
});

test("a 2026 listing made with a caller's own forwarded token is not kept on the shared connection", async () => {
  const slot = slotOf({ url: 'http://127.0.0.1:1/mcp', forwardUserToken: true });
  const { state, conn } = listingConnection(MODERN);
  state.hint = { ttlMs: 60_000, cacheScope: 'private' };
  const asAda = await callerContext.run({ principal: 't:ada', token: 'ada-token' }, () => listTools(logger, slot, conn));
  expect(asAda.map((t) => t.name)).toEqual(['tool1']);
  expect(conn.tools).toBeUndefined();
  // The host's own listing (no caller token: the catalog's) is kept as before.
  expect((await listTools(logger, slot, conn)).map((t) => t.name)).toEqual(['tool2']);
  expect(conn.tools).toBeDefined();
  expect((await listTools(logger, slot, conn)).map((t) => t.name)).toEqual(['tool2']);
});
