import type { FastifyInstance } from 'fastify';
import { type AppDeps, buildApp } from '../../src/api/app';
import type { TurnGateway } from '../../src/api/gateway';
import type { Policy } from '../../src/shared/policy';
import type { Catalog } from '../../src/shared/tool-types';
import type { TurnState } from '../../src/shared/turn';
import { fakeAuth } from '../helpers/fake-auth';

/**
 * What a browser on another origin needs from the API: CORS on an allow-list (preflights never 401),
 * SSE with the token in the query (EventSource sends no headers), and a catalog of only the tools the
 * caller's model would see.
 */
const APP_ORIGIN = 'http://app.example:5173';
const ALICE = { authorization: 'Bearer alice@demo' };

const TURN: TurnState = {
  turnId: 'turn-s1-abc',
  sessionId: 's1',
  owner: { id: 'alice', tenant: 'demo' },
  status: 'completed',
  text: 'hi',
  toolCalls: [],
  steps: 1,
  events: [
    { id: 1, type: 'status', at: 'now', data: { state: 'calling_llm', step: 1 } },
    { id: 2, type: 'done', at: 'now', data: { text: 'hi' } },
  ],
};

const tool = (server: string, name: string) => ({ name: `${server}__${name}`, server, tool: name, inputSchema: { type: 'object' } });
const CATALOG: Catalog = {
  tools: [tool('notes', 'add_note'), tool('payments', 'process_payment'), tool('notes', 'list_notes')],
  servers: [
    { server: 'notes', transport: 'stdio', state: 'connected', toolCount: 2 },
    { server: 'payments', transport: 'streamable-http', state: 'connected', toolCount: 1 },
  ],
};

const gateway = {
  async getTurn(turnId: string, after = 0) {
    return turnId === TURN.turnId ? { ...TURN, events: TURN.events.filter((e) => e.id > after) } : null;
  },
  async catalog() {
    return CATALOG;
  },
  async temporalHealth() {
    return { ok: true };
  },
} as unknown as TurnGateway;

/** Teachers (every fake user) may use the notes server only. */
const policy: Policy = { roles: { teacher: { servers: { notes: { tools: '*' } } } }, toolScopes: {} };

const apps: FastifyInstance[] = [];
async function start(corsOrigins?: string[], consoleOpts?: AppDeps['console']): Promise<{ app: FastifyInstance; base: string }> {
  const app = await buildApp({
    gateway,
    auth: fakeAuth,
    policy: () => policy,
    maxMessageChars: 100,
    ssePollMs: 5,
    ...(corsOrigins ? { corsOrigins } : {}),
    ...(consoleOpts ? { console: consoleOpts } : {}),
  });
  apps.push(app);
  await app.listen({ host: '127.0.0.1', port: 0 });
  return { app, base: `http://127.0.0.1:${(app.server.address() as { port: number }).port}` };
}
afterAll(async () => {
  await Promise.all(apps.map((a) => a.close()));
});

const preflight = (base: string, path: string, origin: string) =>
  fetch(`${base}${path}`, {
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' },
  });

describe('CORS', () => {
  test('a preflight from an allowed origin is answered without credentials, never 401', async () => {
    const { base } = await start([APP_ORIGIN]);
    const res = await preflight(base, '/v1/sessions/s1/messages', APP_ORIGIN);
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe(APP_ORIGIN);
    expect(res.headers.get('access-control-allow-methods')).toContain('POST');
    expect(res.headers.get('access-control-allow-headers')?.toLowerCase()).toContain('authorization');
  });

  test('an allowed origin can read responses, including an SSE stream; another origin is not allowed', async () => {
    const { base } = await start([APP_ORIGIN]);
    const tools = await fetch(`${base}/v1/tools`, { headers: { ...ALICE, origin: APP_ORIGIN } });
    expect(tools.status).toBe(200);
    expect(tools.headers.get('access-control-allow-origin')).toBe(APP_ORIGIN);

    const stream = await fetch(`${base}/v1/turns/${TURN.turnId}/events`, { headers: { ...ALICE, origin: APP_ORIGIN } });
    expect(stream.headers.get('content-type')).toContain('text/event-stream');
    expect(stream.headers.get('access-control-allow-origin')).toBe(APP_ORIGIN);
    expect(await stream.text()).toContain('event: done');

    const foreign = await fetch(`${base}/v1/tools`, { headers: { ...ALICE, origin: 'http://evil.example' } });
    expect(foreign.headers.get('access-control-allow-origin')).toBeNull();
    const foreignPreflight = await preflight(base, '/v1/tools', 'http://evil.example');
    expect(foreignPreflight.status).not.toBe(401);
    expect(foreignPreflight.headers.get('access-control-allow-origin')).toBeNull();
  });

  test('without an allow-list no origin is allowed, and a preflight is still not a 401', async () => {
    const { base } = await start();
    const res = await preflight(base, '/v1/sessions/s1/messages', APP_ORIGIN);
    // No CORS plugin: OPTIONS is a method the path does not serve.
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, HEAD, POST');
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
  });
});

describe('SSE from a browser', () => {
  test('the events stream takes the token as ?access_token; other routes do not', async () => {
    const { base } = await start();
    const token = 'alice@demo';
    const stream = await fetch(`${base}/v1/turns/${TURN.turnId}/events?access_token=${token}`);
    expect(stream.status).toBe(200);
    expect(await stream.text()).toContain('event: done');

    expect((await fetch(`${base}/v1/turns/${TURN.turnId}/events?access_token=nobody`)).status).toBe(401);
    expect((await fetch(`${base}/v1/turns/${TURN.turnId}?access_token=${token}`)).status).toBe(401);
    expect((await fetch(`${base}/v1/tools?access_token=${token}`)).status).toBe(401);
  });
});

test("GET /v1/tools lists only the tools the caller's model would see, and every server", async () => {
  const { app } = await start();
  const res = await app.inject({ method: 'GET', url: '/v1/tools', headers: ALICE });
  expect(res.statusCode).toBe(200);
  expect(res.json().tools.map((t: { name: string }) => t.name)).toEqual(['notes__add_note', 'notes__list_notes']);
  expect(res.json().servers.map((s: { server: string }) => s.server)).toEqual(['notes', 'payments']);
});

describe('the console', () => {
  test('/ leads to it; its page, its modules and its config need no token; demo sign-in only in local mode', async () => {
    const { base } = await start(undefined, { namespace: 'default', temporalUiUrl: 'http://127.0.0.1:8233/' });
    const root = await fetch(`${base}/`, { redirect: 'manual' });
    expect([root.status, root.headers.get('location')]).toEqual([302, '/console/']);
    const page = await fetch(`${base}/console/`);
    expect(await page.text()).toContain('/console/vendor/preact.module.js');
    const hooks = await fetch(`${base}/console/vendor/hooks.module.js`);
    expect(hooks.headers.get('content-type')).toContain('text/javascript');
    expect((await fetch(`${base}/console/vendor/nope.js`)).status).toBe(404);
    expect(await (await fetch(`${base}/console/config.json`)).json()).toEqual({ temporalUiUrl: 'http://127.0.0.1:8233', namespace: 'default', demoUsers: false });
    expect((await fetch(`${base}/console/demo-tokens`)).status).toBe(404);
  });

  test('in local mode it offers a token per demo role', async () => {
    const { base } = await start(undefined, { namespace: 'default', demoToken: async (role) => `token-of-${role}` });
    expect(await (await fetch(`${base}/console/demo-tokens`)).json()).toEqual({
      tokens: { admin: 'token-of-admin', teacher: 'token-of-teacher', student: 'token-of-student' },
    });
  });
});
