/**
 * Issue 25 §2: one user's errors must not open a server's circuit for everyone. The activities as the
 * worker wires them (the real pool inside the ResilientHub), against a real HTTP MCP server that
 * refuses one tenant's requests and serves the others. A control shows that a server that is really
 * unwell (HTTP 503, or gone) still opens the circuit.
 */
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import pino from 'pino';
import { createActivities, type GatheredContext, type ToolCallInput } from '../../src/activities';
import type { LlmClient } from '../../src/llm/client';
import { parseMcpConfig } from '../../src/mcp/config';
import { McpServerHub } from '../../src/mcp/pool';
import { ResilientHub } from '../../src/mcp/resilience';
import { Failure } from '../../src/shared/failures';
import type { Catalog } from '../../src/shared/tool-types';
import type { UserContext } from '../../src/shared/user';
import { createArgumentValidator } from '../../src/validation/json-schema';
import { startTenantAwareServer, TENANT_RESOURCE_URI, type TenantAwareServer } from '../helpers/tenant-aware-server';

jest.setTimeout(60_000);

const THRESHOLD = 3;
/** Far past the threshold. */
const MANY = THRESHOLD * 4;

const tenantA: UserContext = { id: 'stranger', role: 'student', tenant: 'school-a', scopes: [] };
const tenantB: UserContext = { id: 'ada', role: 'student', tenant: 'school-b', scopes: [] };

type Acts = ReturnType<typeof createActivities>;

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((fn) => fn()));
});

async function setup(): Promise<{ server: TenantAwareServer; hub: ResilientHub; acts: Acts }> {
  const server = await startTenantAwareServer();
  const config = parseMcpConfig({ mcpServers: { tenant: { url: server.url, honoursIdempotencyKey: true } } }, {}, process.cwd());
  const logger = pino({ level: 'silent' });
  // No resource caching: every read goes to the server, so each one is a request the breaker judges.
  const hub = new ResilientHub(new McpServerHub(config, { logger }), {
    breaker: { failureThreshold: THRESHOLD, cooldownMs: 10 * 60_000 },
    cache: { ttlMs: 0, maxStaleMs: 0 },
  });
  const acts = createActivities({ hub, llm: {} as LlmClient, validator: createArgumentValidator(), logger, secrets: [], heartbeatEveryMs: 100 });
  cleanups.push(async () => {
    await hub.close();
    await server.close();
  });
  return { server, hub, acts };
}

/** The expected failures are many: the SDK's line per failed activity would bury the test's output. */
const mockEnv = (): MockActivityEnvironment => new MockActivityEnvironment(undefined, { logger: new DefaultLogger('ERROR') });

let n = 0;
const call = (user: UserContext): ToolCallInput => ({
  turnId: `turn-s-${++n}`,
  server: 'tenant',
  tool: 'whoami',
  llmName: 'tenant__whoami',
  arguments: {},
  idempotencyKey: `key-${n}`,
  user,
});

const context = { resources: [{ server: 'tenant', uri: TENANT_RESOURCE_URI }], prompts: [] };

const gather = async (env: MockActivityEnvironment, acts: Acts, user: UserContext) => (await env.run(acts.gatherContext, context, user)) as GatheredContext;
const catalogOf = async (acts: Acts) => (await mockEnv().run(acts.listCatalog)) as Catalog;

async function failure(work: Promise<unknown>): Promise<ApplicationFailure> {
  const error = await work.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof ApplicationFailure)) throw new Error(`expected an ApplicationFailure, got ${String(error)}`);
  return error;
}

test("one tenant's JSON-RPC errors, far past the threshold, leave the server's circuit closed for another tenant", async () => {
  const { server, hub, acts } = await setup();
  server.refuse.set(tenantA.tenant, 'json-rpc');
  const env = mockEnv();

  for (let i = 0; i < MANY; i++) {
    // Reported as today: a retryable transient failure of the call, with the server's words.
    const err = await failure(env.run(acts.callTool, call(tenantA)));
    expect(err).toMatchObject({ type: Failure.McpTransientError, nonRetryable: false });
    expect(err.message).toMatch(/unknown user: no account in tenant school-a/);
    const gathered = await gather(env, acts, tenantA);
    expect(gathered.failures).toEqual([expect.objectContaining({ server: 'tenant', error: expect.stringMatching(/unknown user/) })]);
  }
  // Every one of them reached the server: none was refused by an open circuit.
  expect(server.reached('tools/call', tenantA.tenant)).toBe(MANY);
  expect(server.reached('resources/read', tenantA.tenant)).toBe(MANY);
  expect(hub.breaker.snapshot('tenant')).toEqual({ state: 'closed', consecutiveFailures: 0 });

  // Tenant B, on the same worker, is served.
  await expect(env.run(acts.callTool, call(tenantB))).resolves.toEqual({ isError: false, text: 'hello, tenant school-b' });
  const gathered = await gather(env, acts, tenantB);
  expect(gathered).toEqual({ pieces: [expect.objectContaining({ text: 'profile of tenant school-b' })], failures: [] });
  const catalog = await catalogOf(acts);
  expect(catalog.tools.map((t) => t.name)).toEqual(['tenant__whoami']);
  expect(catalog.servers[0]).toMatchObject({ state: 'connected', circuit: { state: 'closed' } });
});

test("a 429 for one tenant is that tenant's rate limit: the circuit stays closed for the others", async () => {
  const { server, hub, acts } = await setup();
  server.refuse.set(tenantA.tenant, 'http-429');
  const env = mockEnv();

  for (let i = 0; i < MANY; i++) {
    const gathered = await gather(env, acts, tenantA);
    expect(gathered.failures).toEqual([expect.objectContaining({ error: expect.stringMatching(/HTTP 429/) })]);
  }
  expect(server.reached('resources/read', tenantA.tenant)).toBe(MANY);
  expect(hub.breaker.state('tenant')).toBe('closed');
  const gathered = await gather(env, acts, tenantB);
  expect(gathered.pieces).toEqual([expect.objectContaining({ text: 'profile of tenant school-b' })]);
});

describe('control: a server that is unwell still opens the circuit', () => {
  /** Tenant B's reads fail THRESHOLD times; the next one fails fast without reaching the server. */
  async function expectCircuitOpens(server: TenantAwareServer, hub: ResilientHub, acts: Acts, cause: RegExp): Promise<void> {
    const env = mockEnv();
    for (let i = 0; i < THRESHOLD; i++) {
      const gathered = await gather(env, acts, tenantB);
      expect(gathered.failures).toEqual([expect.objectContaining({ error: expect.stringMatching(cause) })]);
    }
    expect(hub.breaker.state('tenant')).toBe('open');
    const posts = server.posts;
    const gathered = await gather(env, acts, tenantA);
    expect(gathered.failures).toEqual([expect.objectContaining({ error: expect.stringMatching(/circuit open after 3 consecutive failures/) })]);
    expect(server.posts).toBe(posts);
    const catalog = await catalogOf(acts);
    expect(catalog.tools).toEqual([]);
    expect(catalog.servers[0]).toMatchObject({ state: 'unavailable', circuit: { state: 'open' } });
  }

  test('HTTP 503 for everyone', async () => {
    const { server, hub, acts } = await setup();
    // Connected and working first, so the failures are of requests on a live connection.
    await expect(mockEnv().run(acts.callTool, call(tenantB))).resolves.toMatchObject({ isError: false });
    server.unwell = true;
    await expectCircuitOpens(server, hub, acts, /HTTP 503/);
  });

  test('the server is gone (connection refused)', async () => {
    const { server, hub, acts } = await setup();
    await expect(mockEnv().run(acts.callTool, call(tenantB))).resolves.toMatchObject({ isError: false });
    await server.close();
    await expectCircuitOpens(server, hub, acts, /ECONNREFUSED|fetch failed|unavailable/);
  });
});
