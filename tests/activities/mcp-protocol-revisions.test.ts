import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { McpConfigError, parseMcpConfig } from '../../src/mcp/config';
import { ElicitationSession, elicitFromCaller } from '../../src/mcp/elicitation';
import { McpServerHub } from '../../src/mcp/pool';
import { callerContext } from '../../src/mcp/user-token';
import { IDEMPOTENCY_KEY_META_KEY } from '../../src/shared/meta';
import { startLegacyServer } from '../helpers/legacy-server';
import { MENU_TEXT, MENU_URI, startModernServer } from '../helpers/modern-server';

/**
 * The pool talks to each server in its own revision (decision 0024): a 2026-07-28 server over the v2
 * client (discovered once, then adopted with no round trip), a 2025-11-25 server over the v1 SDK as
 * before, and a server's `input_required` question takes the path of decision 0011.
 */
const logger = pino({ level: process.env.DEBUG_HUB ? 'debug' : 'silent' });

let modern: Awaited<ReturnType<typeof startModernServer>>;
let legacy: Awaited<ReturnType<typeof startLegacyServer>>;
let hub: McpServerHub | undefined;
let tmp: string;

beforeEach(async () => {
  tmp = mkdtempSync(path.join(tmpdir(), 'mcp-revisions-'));
  modern = await startModernServer();
  legacy = await startLegacyServer();
});

afterEach(async () => {
  await hub?.close();
  hub = undefined;
  await modern.close();
  await legacy.close();
  rmSync(tmp, { recursive: true, force: true });
});

function hubFor(servers: Record<string, unknown>): McpServerHub {
  hub = new McpServerHub(parseMcpConfig({ mcpServers: servers }, {}, process.cwd()), { elicit: elicitFromCaller, logger });
  return hub;
}

test('protocol is validated: auto and the two revisions; 2026-07-28 has no legacy SSE', () => {
  const parse = (entry: Record<string, unknown>) => parseMcpConfig({ mcpServers: { s: entry } }, {}, process.cwd()).mcpServers['s'];
  expect(parse({ url: 'http://x/mcp' })?.protocol).toBeUndefined();
  expect(parse({ url: 'http://x/mcp', protocol: 'auto' })?.protocol).toBeUndefined();
  expect(parse({ url: 'http://x/mcp', protocol: '2026-07-28' })?.protocol).toBe('2026-07-28');
  expect(parse({ command: 'node', protocol: '2025-11-25' })?.protocol).toBe('2025-11-25');
  expect(() => parse({ url: 'http://x/mcp', protocol: '2024-11-05' })).toThrow(McpConfigError);
  expect(() => parse({ url: 'http://x/mcp', protocol: '2026-07-28', transport: 'sse' })).toThrow(/no legacy HTTP\+SSE/);
});

test('auto: a 2026-07-28 server is spoken to on 2026-07-28, a 2025 server as before, each in its own revision', async () => {
  const pool = hubFor({ modern: { url: modern.url }, legacy: { url: legacy.url } });
  const catalog = await pool.catalog();
  expect(catalog.servers.map((s) => [s.server, s.state])).toEqual([['modern', 'connected'], ['legacy', 'connected']]);
  // Listed again, each cached listing is checked with a request of the server's revision (2026-07-28 has no ping).
  expect((await pool.catalog()).servers.map((s) => [s.server, s.state])).toEqual([['modern', 'connected'], ['legacy', 'connected']]);
  expect(catalog.tools.map((t) => t.name).sort()).toEqual(['legacy__shout', 'modern__brew', 'modern__greet', 'modern__order']);

  expect((await pool.callTool({ server: 'modern', tool: 'greet', arguments: { name: 'Ada' } })).text).toBe('Hello, Ada, from a 2026-07-28 server.');
  expect((await pool.callTool({ server: 'legacy', tool: 'shout', arguments: { text: 'hi' } })).text).toBe('HI');
  expect(await pool.readResource('modern', MENU_URI)).toContain(MENU_TEXT);
  // Every request the modern server answered came on 2026-07-28; the legacy server had one handshake.
  expect(modern.state.eras.length).toBeGreaterThan(0);
  expect(modern.state.eras.every((e) => e.startsWith('modern'))).toBe(true);
  expect(legacy.initializes()).toBe(1);
});

test('a pinned revision is used as written; 2026-07-28 pinned on a 2025 server fails clearly', async () => {
  const pool = hubFor({ modern: { url: modern.url, protocol: '2026-07-28' }, old: { url: legacy.url, protocol: '2026-07-28' }, legacy: { url: legacy.url, protocol: '2025-11-25' } });
  const status = await pool.status();
  expect(status.find((s) => s.server === 'modern')?.state).toBe('connected');
  expect(status.find((s) => s.server === 'legacy')?.state).toBe('connected');
  const old = status.find((s) => s.server === 'old');
  expect(old?.state).toBe('unavailable');
  expect(old?.error).toMatch(/2026-07-28/);
});

/** The JSON-RPC methods the pool sends over HTTP from now on, in order (restore the spy after). */
function recordMethods() {
  const requests: string[] = [];
  const original = globalThis.fetch;
  const spy = jest.spyOn(globalThis, 'fetch').mockImplementation(async (input, init) => {
    const body = typeof init?.body === 'string' ? (JSON.parse(init.body) as { method?: string }) : undefined;
    if (body?.method) requests.push(body.method);
    return await original(input, init);
  });
  return { requests, spy };
}

test('discovery once: a reconnect adopts the kept discovery, with no server/discover and no handshake', async () => {
  const pool = hubFor({ modern: { url: modern.url } });
  const { requests, spy } = recordMethods();
  try {
    await pool.catalog();
    expect(requests.filter((m) => m === 'server/discover')).toHaveLength(1);
    // The server goes away: the call fails and the connection is dropped.
    const port = Number(new URL(modern.url).port);
    await modern.close();
    await expect(pool.callTool({ server: 'modern', tool: 'greet', arguments: { name: 'nobody' } })).rejects.toMatchObject({ name: 'McpTransientError' });
    // Back on the same address: the next call reconnects from the kept discovery, so it is one request.
    modern = await startModernServer(modern.state, port);
    requests.length = 0;
    expect((await pool.callTool({ server: 'modern', tool: 'greet', arguments: { name: 'again' } })).text).toBe('Hello, again, from a 2026-07-28 server.');
    // (The connection also opens its `subscriptions/listen` stream for tool changes, beside the call.)
    expect(requests.filter((m) => m !== 'subscriptions/listen')).toEqual(['tools/call']);
  } finally {
    spy.mockRestore();
  }
});

test("a tool call's catalog lookup pings no server; a planning listing pings each HTTP server whose tools it holds, once (both revisions)", async () => {
  const pool = hubFor({ modern: { url: modern.url }, legacy: { url: legacy.url } });
  const { requests, spy } = recordMethods();
  try {
    await pool.catalog();
    requests.length = 0;
    // What the callTool activity does: the lookup, then the call; no ping, no discover.
    const catalog = await pool.catalog({ probe: false });
    expect(catalog.servers.map((s) => s.state)).toEqual(['connected', 'connected']);
    expect((await pool.callTool({ server: 'modern', tool: 'greet', arguments: { name: 'Ada' } })).text).toBe('Hello, Ada, from a 2026-07-28 server.');
    expect(requests.filter((m) => m !== 'subscriptions/listen')).toEqual(['tools/call']);
    // A listing for the model's plan checks that each held server is still there: 2026's ping is server/discover.
    requests.length = 0;
    await pool.catalog();
    expect(requests.filter((m) => m !== 'subscriptions/listen').sort()).toEqual(['ping', 'server/discover']);
  } finally {
    spy.mockRestore();
  }
});

test("input_required: the question ends the call unanswered, and the re-issued call carries the user's answer", async () => {
  const pool = hubFor({ modern: { url: modern.url } });
  const meta = { [IDEMPOTENCY_KEY_META_KEY]: 'turn-1/step-1/call-1' };

  const first = new ElicitationSession();
  const call = (session: ElicitationSession) =>
    callerContext.run({ principal: 't:u', turnId: 'turn-1', elicitation: session }, () =>
      pool.callTool({ server: 'modern', tool: 'order', arguments: { item: 'soup' }, meta, signal: session.signal }),
    );
  await expect(call(first)).rejects.toMatchObject({ name: 'AbortError' });
  expect(first.asked).toMatchObject({ message: 'Which size of soup?', requestedSchema: { required: ['size'] } });
  expect(modern.state.orders.size).toBe(0);

  const second = new ElicitationSession([{ message: 'Which size of soup?', action: 'accept', content: { size: 'large' } }]);
  expect((await call(second)).text).toBe('Ordered a large soup (order 1).');
  expect(second.asked).toBeUndefined();
  // Re-issued once more with the same key: still one order.
  const third = new ElicitationSession([{ message: 'Which size of soup?', action: 'accept', content: { size: 'large' } }]);
  expect((await call(third)).text).toBe('Ordered a large soup (order 1).');
  expect(modern.state.orders.size).toBe(1);

  const declined = new ElicitationSession([{ message: 'Which size of soup?', action: 'decline' }]);
  expect((await call(declined)).text).toBe('No soup ordered: the user did not choose a size.');
});

test('stdio: a child pinned to 2026-07-28 is spoken to in it; under auto a stdio child is spoken to in 2025-11-25 (needs the build)', async () => {
  const root = path.resolve(__dirname, '../..');
  const pool = hubFor({
    modern: { command: process.execPath, args: ['dist/tests/helpers/modern-server.js', '--stdio'], cwd: root, protocol: '2026-07-28' },
    notes: { command: process.execPath, args: ['dist/examples/servers/notes-server.js', '--stdio', '--data', path.join(tmp, 'notes.json')], cwd: root },
    // The same 2026-only child under auto: spoken to in 2025-11-25, which it refuses.
    unpinned: { command: process.execPath, args: ['dist/tests/helpers/modern-server.js', '--stdio'], cwd: root },
  });
  const status = await pool.status();
  expect(status.map((s) => [s.server, s.state, s.toolCount > 0])).toEqual([['modern', 'connected', true], ['notes', 'connected', true], ['unpinned', 'unavailable', false]]);
  expect((await pool.callTool({ server: 'modern', tool: 'greet', arguments: { name: 'pipe' } })).text).toBe('Hello, pipe, from a 2026-07-28 server.');
  expect((await pool.callTool({ server: 'notes', tool: 'add_note', arguments: { text: 'over stdio' } })).isError).toBeFalsy();
}, 60_000);
