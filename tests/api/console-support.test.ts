import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/api/app';
import { memoryRateLimiters } from '../../src/api/rate-limits';
import type { TurnGateway } from '../../src/api/gateway';
import type { Policy } from '../../src/shared/policy';
import type { Catalog } from '../../src/shared/tool-types';
import type { TurnState } from '../../src/shared/turn';
import { fakeAuth } from '../helpers/fake-auth';

/**
 * What the console's tools page, empty chat, API docs and debug view ask of the API: each tool's
 * approval badge from the policy, the model's suggestions, reconnecting a server that is down, a
 * turn's MCP messages (redacted as in the audit log), and the docs signed in with the console's token.
 */
const ALICE = { authorization: 'Bearer alice@demo' };
const BOB = { authorization: 'Bearer bob@demo' };

const tool = (server: string, name: string, annotations?: Record<string, boolean>) => ({
  name: `${server}__${name}`, server, tool: name, inputSchema: { type: 'object' }, ...(annotations ? { annotations } : {}),
});
const CATALOG: Catalog = {
  tools: [tool('notes', 'add_note'), tool('notes', 'list_notes', { readOnlyHint: true })],
  servers: [
    { server: 'notes', transport: 'stdio', state: 'connected', toolCount: 2 },
    { server: 'flaky', transport: 'streamable-http', state: 'unavailable', toolCount: 0, error: 'connect ECONNREFUSED' },
  ],
};
const RECONNECTED: Catalog = { ...CATALOG, servers: [CATALOG.servers[0]!, { server: 'flaky', transport: 'streamable-http', state: 'connected', toolCount: 1 }] };

const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 12, 0, s)).toISOString();
const TURN: TurnState = {
  turnId: 'turn-s1-abc',
  sessionId: 's1',
  owner: { id: 'alice', tenant: 'demo' },
  status: 'completed',
  text: 'done',
  steps: 2,
  approvals: [{ toolCallId: 'c3', name: 'notes__add_note', server: 'notes', tool: 'add_note', arguments: { text: 'no' }, state: 'rejected' }],
  toolCalls: [
    { id: 'c1', step: 1, name: 'notes__add_note', server: 'notes', tool: 'add_note', arguments: { text: 'hi', email: 'alice@example.org' }, state: 'completed', result: 'Saved note 1: hi (by alice@example.org)', startedAt: at(1), finishedAt: at(4) },
    { id: 'c2', step: 1, name: 'nope__missing', arguments: {}, state: 'failed', isError: true, result: 'unknown tool', startedAt: at(5), finishedAt: at(5) },
    { id: 'c3', step: 2, name: 'notes__add_note', server: 'notes', tool: 'add_note', arguments: { text: 'no' }, state: 'failed', isError: true, result: 'The user rejected this action', startedAt: at(6), finishedAt: at(7) },
  ],
  events: [
    { id: 1, type: 'input_required', at: at(2), data: { toolCallId: 'c1', server: 'notes', mode: 'form', message: 'Which tag?', requestedSchema: { type: 'object' } } },
    { id: 2, type: 'input_provided', at: at(3), data: { toolCallId: 'c1', server: 'notes', action: 'accept' } },
    { id: 3, type: 'done', at: at(8), data: { text: 'done' } },
  ],
};

/** Adding notes waits for a person's decision; listing them does not. */
const policy: Policy = { roles: { teacher: { servers: { notes: { tools: '*' } } } }, toolScopes: {}, approval: { tools: ['notes/add_note'], timeoutMs: 60_000, approverRoles: [] } };

const catalogReads: Array<{ fresh?: boolean } | undefined> = [];
const gateway = {
  async getTurn(turnId: string) {
    return turnId === TURN.turnId ? TURN : null;
  },
  async catalog(read?: { fresh?: boolean }) {
    catalogReads.push(read);
    return read?.fresh ? RECONNECTED : CATALOG;
  },
} as unknown as TurnGateway;

const apps: FastifyInstance[] = [];
async function start(suggestions?: string[], userPerMinute = 100): Promise<FastifyInstance> {
  const app = await buildApp({
    gateway, auth: fakeAuth, policy: () => policy, maxMessageChars: 100, ssePollMs: 5, logger: false,
    limiters: memoryRateLimiters({ userPerMinute, tenantPerMinute: 100 }),
    ...(suggestions ? { suggestions } : {}),
  });
  apps.push(app);
  return app;
}
afterAll(async () => {
  await Promise.all(apps.map((a) => a.close()));
});

test('GET /v1/tools says which tools need approval under the policy, beside the servers\' annotations', async () => {
  const app = await start();
  const res = await app.inject({ method: 'GET', url: '/v1/tools', headers: ALICE });
  expect(res.statusCode).toBe(200);
  const tools = res.json().tools as Array<{ name: string; needsApproval: boolean; annotations?: Record<string, boolean> }>;
  expect(tools.map((t) => [t.name, t.needsApproval])).toEqual([['notes__add_note', true], ['notes__list_notes', false]]);
  expect(tools[1]?.annotations).toEqual({ readOnlyHint: true });
});

test('GET /v1/suggestions answers the configured suggestions, none by default, and needs a token', async () => {
  const withDemo = await start(['hello', 'list notes']);
  expect((await withDemo.inject({ method: 'GET', url: '/v1/suggestions', headers: ALICE })).json()).toEqual({ suggestions: ['hello', 'list notes'] });
  expect((await withDemo.inject({ method: 'GET', url: '/v1/suggestions' })).statusCode).toBe(401);
  const real = await start();
  expect((await real.inject({ method: 'GET', url: '/v1/suggestions', headers: ALICE })).json()).toEqual({ suggestions: [] });
});

test('POST /v1/servers/:server/reconnect lists the servers again whatever the cache and answers the server\'s state; an unknown server is a 404', async () => {
  const app = await start();
  catalogReads.length = 0;
  const res = await app.inject({ method: 'POST', url: '/v1/servers/flaky/reconnect', headers: ALICE });
  expect(res.statusCode).toBe(200);
  expect(res.json()).toEqual({ server: 'flaky', transport: 'streamable-http', state: 'connected', toolCount: 1 });
  expect(catalogReads).toEqual([{ fresh: true }]);
  const unknown = await app.inject({ method: 'POST', url: '/v1/servers/nope/reconnect', headers: ALICE });
  expect(unknown.statusCode).toBe(404);
  expect(unknown.json().error.code).toBe('not_found');
  expect((await app.inject({ method: 'POST', url: '/v1/servers/flaky/reconnect' })).statusCode).toBe(401);

  // Each reconnect starts a workflow: the caller's message rate limit applies.
  const limited = await start(undefined, 1);
  expect((await limited.inject({ method: 'POST', url: '/v1/servers/flaky/reconnect', headers: ALICE })).statusCode).toBe(200);
  const refused = await limited.inject({ method: 'POST', url: '/v1/servers/flaky/reconnect', headers: ALICE });
  expect(refused.statusCode).toBe(429);
  expect(refused.json().error.code).toBe('rate_limited');
});

test("GET /v1/turns/:turnId/mcp rebuilds the turn's MCP messages in order, arguments redacted as in the audit log; only readers of the turn see them", async () => {
  const app = await start();
  const res = await app.inject({ method: 'GET', url: `/v1/turns/${TURN.turnId}/mcp`, headers: ALICE });
  expect(res.statusCode).toBe(200);
  const { turnId, messages } = res.json() as { turnId: string; messages: Array<{ direction: string; toolCallId: string; message: Record<string, unknown> }> };
  expect(turnId).toBe(TURN.turnId);
  // The call, the server's question and the user's action in between, then the result. The call that
  // named no server and the one whose approval was refused never reached a server: left out.
  expect(messages.map((m) => [m.direction, m.toolCallId, m.message['method'] ?? 'result'])).toEqual([
    ['host_to_server', 'c1', 'tools/call'],
    ['server_to_host', 'c1', 'elicitation/create'],
    ['host_to_server', 'c1', 'result'],
    ['server_to_host', 'c1', 'result'],
  ]);
  expect(messages[0]?.message).toEqual({ jsonrpc: '2.0', method: 'tools/call', params: { name: 'add_note', arguments: { text: 'hi', email: expect.stringMatching(/^\[redacted:[0-9a-f]+\]$/) } } });
  expect(JSON.stringify(messages)).not.toContain('alice@example.org');
  expect(messages[1]?.message).toEqual({ jsonrpc: '2.0', method: 'elicitation/create', params: { mode: 'form', message: 'Which tag?', requestedSchema: { type: 'object' } } });
  expect(messages[2]?.message).toEqual({ jsonrpc: '2.0', result: { action: 'accept' } });
  expect(messages[3]?.message).toEqual({ jsonrpc: '2.0', result: { content: [{ type: 'text', text: expect.stringMatching(/^Saved note 1: hi \(by \[redacted:[0-9a-f]+\]\)$/) }] } });

  expect((await app.inject({ method: 'GET', url: `/v1/turns/${TURN.turnId}/mcp`, headers: BOB })).statusCode).toBe(404);
  expect((await app.inject({ method: 'GET', url: '/v1/turns/turn-s1-other/mcp', headers: ALICE })).statusCode).toBe(404);
});

test('the new routes are in the OpenAPI document, and /docs loads the script that signs it in with the console\'s token', async () => {
  const app = await start();
  const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json() as { paths: Record<string, Record<string, { operationId: string; security?: unknown }>> };
  expect(doc.paths['/v1/suggestions']?.['get']?.operationId).toBe('listSuggestions');
  expect(doc.paths['/v1/servers/{server}/reconnect']?.['post']?.operationId).toBe('reconnectServer');
  expect(doc.paths['/v1/turns/{turnId}/mcp']?.['get']?.security).toEqual([{ bearerAuth: [] }]);

  const page = await app.inject({ method: 'GET', url: '/docs/' });
  expect(page.body).toContain('theme/console-token.js');
  const script = await app.inject({ method: 'GET', url: '/docs/static/theme/console-token.js' });
  expect(script.statusCode).toBe(200);
  expect(script.body).toContain('preauthorizeApiKey("bearerAuth", t)');
  expect(script.body).toContain('sessionStorage.getItem(KEY)');
});
