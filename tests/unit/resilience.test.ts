import { McpPermanentError, McpTransientError } from '../../src/mcp/failures';
import { ResilientHub } from '../../src/mcp/resilience';
import type { Catalog, ToolOutcome } from '../../src/shared/tool-types';

/** A scripted inner hub: each call either succeeds or throws what the test says. */
function fakeInner() {
  const state = { fail: false as false | 'transient' | 'answered' | 'permanent', calls: 0, reads: 0, text: 'v1' };
  const boom = (server: string) => {
    if (state.fail === 'permanent') return new McpPermanentError(server, 'refused');
    // The server answered with a JSON-RPC error about this request (e.g. a user it does not know).
    if (state.fail === 'answered') return new McpTransientError(server, 'server error -32001: unknown user', { requestSent: true, answered: true });
    return new McpTransientError(server, 'connection lost');
  };
  return {
    state,
    async catalog(): Promise<Catalog> {
      return {
        tools: [{ name: 'pay__x', server: 'pay', tool: 'x', inputSchema: {} }],
        servers: [{ server: 'pay', transport: 'stdio', state: 'connected', toolCount: 1 }],
      };
    },
    async callTool(req: { server: string }): Promise<ToolOutcome> {
      state.calls++;
      if (state.fail) throw boom(req.server);
      return { isError: false, text: 'ok' };
    },
    async readResource(server: string): Promise<string> {
      state.reads++;
      if (state.fail) throw boom(server);
      return state.text;
    },
    async getPrompt(): Promise<string> {
      return 'p';
    },
    async status() {
      return (await this.catalog()).servers;
    },
    async close() {},
  };
}

function setup() {
  let now = 1_000_000;
  const inner = fakeInner();
  const hub = new ResilientHub(inner, {
    breaker: { failureThreshold: 3, cooldownMs: 10_000 },
    cache: { ttlMs: 1_000, maxStaleMs: 60_000 },
    now: () => now,
  });
  return { inner, hub, advance: (ms: number) => (now += ms) };
}

const call = { server: 'pay', tool: 'x', arguments: {} };

test('the circuit opens after consecutive transient failures, fails fast, and is reported', async () => {
  const { inner, hub } = setup();
  inner.state.fail = 'transient';
  for (let i = 0; i < 3; i++) await expect(hub.callTool(call)).rejects.toBeInstanceOf(McpTransientError);
  expect(inner.state.calls).toBe(3);
  await expect(hub.callTool(call)).rejects.toThrow(/circuit open after 3 consecutive failures/);
  expect(inner.state.calls).toBe(3);

  const catalog = await hub.catalog();
  expect(catalog.tools).toEqual([]);
  expect(catalog.servers[0]).toMatchObject({ state: 'unavailable', circuit: { state: 'open', consecutiveFailures: 3 } });
  expect(catalog.servers[0]?.error).toMatch(/circuit open/);
});

test('after the cool-down one trial goes through; success closes the circuit, failure reopens it', async () => {
  const { inner, hub, advance } = setup();
  inner.state.fail = 'transient';
  for (let i = 0; i < 3; i++) await hub.callTool(call).catch(() => undefined);
  advance(10_000);
  await expect(hub.callTool(call)).rejects.toBeInstanceOf(McpTransientError);
  expect(inner.state.calls).toBe(4);
  await expect(hub.callTool(call)).rejects.toThrow(/circuit open/);
  expect(inner.state.calls).toBe(4);

  advance(10_000);
  inner.state.fail = false;
  await expect(hub.callTool(call)).resolves.toEqual({ isError: false, text: 'ok' });
  expect((await hub.catalog()).servers[0]).toMatchObject({ state: 'connected', circuit: { state: 'closed', consecutiveFailures: 0 } });
});

test('permanent errors and tool errors do not trip the circuit', async () => {
  const { inner, hub } = setup();
  inner.state.fail = 'permanent';
  for (let i = 0; i < 5; i++) await expect(hub.callTool(call)).rejects.toBeInstanceOf(McpPermanentError);
  expect(hub.breaker.state('pay')).toBe('closed');
});

test("a server's error answers, however many, do not trip the circuit: the server is up", async () => {
  const { inner, hub } = setup();
  inner.state.fail = 'answered';
  for (let i = 0; i < 10; i++) await expect(hub.callTool(call)).rejects.toMatchObject({ answered: true });
  expect(inner.state.calls).toBe(10);
  expect(hub.breaker.snapshot('pay')).toEqual({ state: 'closed', consecutiveFailures: 0 });

  // An answer between transport failures shows the server alive: the count starts again.
  inner.state.fail = 'transient';
  for (let i = 0; i < 2; i++) await hub.callTool(call).catch(() => undefined);
  inner.state.fail = 'answered';
  await hub.callTool(call).catch(() => undefined);
  inner.state.fail = 'transient';
  for (let i = 0; i < 2; i++) await hub.callTool(call).catch(() => undefined);
  expect(hub.breaker.snapshot('pay')).toEqual({ state: 'closed', consecutiveFailures: 2 });
});

test('resources are cached for the TTL, then refreshed', async () => {
  const { inner, hub, advance } = setup();
  expect(await hub.readResource('pay', 'pay://summary')).toBe('v1');
  inner.state.text = 'v2';
  expect(await hub.readResource('pay', 'pay://summary')).toBe('v1');
  expect(inner.state.reads).toBe(1);
  advance(1_000);
  expect(await hub.readResource('pay', 'pay://summary')).toBe('v2');
  expect(inner.state.reads).toBe(2);
});

test('while the server is down the last known value is served, marked, until it is too old', async () => {
  const { inner, hub, advance } = setup();
  await hub.readResource('pay', 'pay://summary');
  inner.state.fail = 'transient';
  advance(5_000);
  const stale = await hub.readResource('pay', 'pay://summary');
  expect(stale).toMatch(/^v1\n\[last known data from .*: server pay is unavailable now\]$/);
  advance(60_000);
  await expect(hub.readResource('pay', 'pay://summary')).rejects.toBeInstanceOf(McpTransientError);
  // Never read: nothing to fall back on.
  await expect(hub.readResource('pay', 'pay://other')).rejects.toThrow();
});

test('a successful tool call on a server drops its cached resources', async () => {
  const { inner, hub } = setup();
  await hub.readResource('pay', 'pay://summary');
  inner.state.text = 'v2';
  await hub.callTool(call);
  expect(await hub.readResource('pay', 'pay://summary')).toBe('v2');
});
