/**
 * A listing that comes while its server is still connecting (a worker just started, its servers slow
 * to answer on a loaded machine) waits for that connect for its own connect timeout, and gets the
 * server's tools once the server answers; a server that never answers is unavailable to it after that
 * timeout, as before (issue 26: a turn on a fresh worker found no tools, the first connect having been
 * given up while the turn's listing waited for it).
 *
 * The server holds each `initialize` until the test lets it through. The pool's clock (its timers and
 * Date) is Jest's, moved by the test: which deadline passes first is decided here, not by the
 * machine's load. Sockets and the servers' I/O run for real.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { parseMcpConfig } from '../../src/mcp/config';
import { McpServerHub } from '../../src/mcp/pool';
import type { ServerStatus } from '../../src/shared/tool-types';
import { serveStatelessMcp, type StatelessMcpHttp } from '../helpers/stateless-mcp-http';

jest.setTimeout(60_000);

const CONNECT_MS = 10_000;

/** A server whose handshakes wait for `release()`; `handshakes` resolves its nth one as it arrives. */
interface GatedServer {
  http: StatelessMcpHttp;
  handshakes: number;
  arrived(n: number): Promise<void>;
  release(): void;
}

async function gatedServer(): Promise<GatedServer> {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const waiting: Array<{ n: number; resolve: () => void }> = [];
  const state = {
    handshakes: 0,
    release,
    arrived: (n: number) => new Promise<void>((resolve) => (state.handshakes >= n ? resolve() : waiting.push({ n, resolve }))),
  };
  const http = await serveStatelessMcp(
    () => {
      const server = new McpServer({ name: 'slow', version: '1.0.0' });
      server.registerTool('hello', { description: 'says hello' }, () => ({ content: [{ type: 'text', text: 'hello' }] }));
      return server;
    },
    async (body) => {
      if (body.method !== 'initialize') return;
      state.handshakes += 1;
      for (const w of waiting.filter((x) => x.n <= state.handshakes)) w.resolve();
      await released;
    },
  );
  return Object.assign(state, { http });
}

let server: GatedServer;
let hub: McpServerHub;

beforeEach(async () => {
  server = await gatedServer();
  hub = new McpServerHub(parseMcpConfig({ mcpServers: { slow: { url: server.http.url, timeouts: { connectMs: CONNECT_MS } } } }, process.env, __dirname));
  // Only the clock: the sockets' callbacks, microtasks and immediates run as usual.
  jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'clearImmediate', 'queueMicrotask', 'hrtime', 'performance', 'setInterval', 'clearInterval'] });
});

afterEach(async () => {
  jest.useRealTimers();
  server.release();
  await hub.close();
  await server.http.close();
});

const only = (statuses: readonly ServerStatus[]): ServerStatus => {
  expect(statuses).toHaveLength(1);
  return statuses[0] as ServerStatus;
};

/**
 * The worker's start begins a connect; a turn's listing comes 0.6 connect timeouts later, while that
 * connect is under way; then the start's own wait ends (the server has not answered within its
 * connect timeout). Returns the listing, still waiting (wrapped: an async function would wait for it).
 */
async function listingAfterStartGaveUp(): Promise<{ listing: ReturnType<McpServerHub['catalog']> }> {
  const start = hub.connectAll();
  await server.arrived(1);
  await jest.advanceTimersByTimeAsync(CONNECT_MS * 0.6);
  const listing = hub.catalog();
  await jest.advanceTimersByTimeAsync(CONNECT_MS * 0.4 + 1);
  expect(only(await start)).toMatchObject({ state: 'unavailable', error: `connect timed out after ${CONNECT_MS} ms` });
  return { listing };
}

test('a listing that joins a connect under way gets its own connect timeout, and the tools once the server answers', async () => {
  const { listing } = await listingAfterStartGaveUp();
  // The server answers within the listing's connect timeout: the listing has its tools, from the same connect.
  server.release();
  const catalog = await listing;
  expect(only(catalog.servers)).toMatchObject({ state: 'connected', toolCount: 1 });
  expect(catalog.tools.map((t) => t.name)).toEqual(['slow__hello']);
  expect(server.handshakes).toBe(1);
});

test('a server that never answers its handshake is unavailable to each listing after its own connect timeout', async () => {
  const { listing } = await listingAfterStartGaveUp();
  // Still waiting: its own timeout has not passed.
  let settled = false;
  void listing.then(() => (settled = true));
  await jest.advanceTimersByTimeAsync(CONNECT_MS * 0.6 - 2);
  expect(settled).toBe(false);
  await jest.advanceTimersByTimeAsync(2);
  const catalog = await listing;
  expect(catalog.tools).toEqual([]);
  expect(only(catalog.servers)).toMatchObject({ state: 'unavailable', error: `connect timed out after ${CONNECT_MS} ms` });
  // Nobody waits any more: that connect was given up, and a later listing starts another one.
  await jest.advanceTimersByTimeAsync(1_000);
  const later = hub.catalog();
  await server.arrived(2);
  server.release();
  expect(only((await later).servers)).toMatchObject({ state: 'connected', toolCount: 1 });
  expect(server.handshakes).toBe(2);
});

test('a connect that listings keep joining is given up after three connect timeouts', async () => {
  const start = hub.connectAll();
  await server.arrived(1);
  const listings: Array<Promise<unknown>> = [start];
  // A listing joins every 0.6 timeouts: each keeps the connect alive past the previous one's end.
  for (let i = 0; i < 4; i++) {
    await jest.advanceTimersByTimeAsync(CONNECT_MS * 0.6);
    listings.push(hub.catalog());
  }
  // 3 timeouts after the start: the last listing (joined at 2.4, its own end at 3.4) gets the connect's end.
  await jest.advanceTimersByTimeAsync(CONNECT_MS * 0.6);
  const last = (await listings[4]) as { servers: ServerStatus[] };
  expect(only(last.servers)).toMatchObject({ state: 'unavailable', error: `connect timed out after ${3 * CONNECT_MS} ms` });
  // A listing started after that starts a connect of its own.
  await jest.advanceTimersByTimeAsync(1_000);
  const again = hub.catalog();
  await server.arrived(2);
  server.release();
  expect(only((await again).servers)).toMatchObject({ state: 'connected' });
  await Promise.all(listings);
});
