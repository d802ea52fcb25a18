import { memoryRateLimiters } from '../../src/api/rate-limits';
import Fastify, { type InjectOptions } from 'fastify';
import { buildApp } from '../../src/api/app';
import type { HttpError } from '../../src/api/errors';
import { catalogRoutes } from '../../src/api/routes/catalog';
import type { TurnService } from '../../src/api/turns';
import { type AddressInfo, connect } from 'node:net';
import { StreamOpening } from '../../src/api/contract';
import type { LiveChunk } from '../../src/live/chunk';
import { createLiveTextHub } from '../../src/live/hub';
import { parseSseBlock, type SseEvent, sseEvents } from '../../src/shared/sse';
import { fakeAuth, openPolicy } from '../helpers/fake-auth';
import { noSessionEdits } from '../helpers/no-session-edits';
import type { ApprovalOutcome, SessionCursor, TurnGateway } from '../../src/api/gateway';
import type { Catalog } from '../../src/shared/tool-types';
import type { TurnEvent, TurnState } from '../../src/shared/turn';
import type { UserContext } from '../../src/shared/user';
import type { SessionView, TranscriptMessage } from '../../src/shared/session';

/** A gateway over in-memory turns: the API's validation and framing, without Temporal. */
function fakeGateway(): TurnGateway & {
  turns: Map<string, TurnState>;
  started: string[];
  down: boolean;
  busy: boolean;
  approvals: ApprovalOutcome[];
  cancelled: string[];
  sessions: Map<string, TranscriptMessage[]>;
} {
  const turns = new Map<string, TurnState>();
  const started: string[] = [];
  const g = {
    turns,
    started,
    down: false,
    approvals: [] as ApprovalOutcome[],
    cancelled: [] as string[],
    async cancelTurn(turnId: string) {
      g.cancelled.push(turnId);
    },
    async decideApproval(): Promise<ApprovalOutcome> {
      return g.approvals.shift() ?? { kind: 'not_pending' };
    },
    busy: false,
    async submitMessage({ turnId, sessionId, text, user }: { turnId: string; sessionId: string; text: string; user: UserContext }) {
      if (g.down) throw new Error('connect ECONNREFUSED 127.0.0.1:7233');
      if (g.busy) return { kind: 'busy' as const };
      if (turns.has(turnId)) return { kind: 'accepted' as const, created: false, position: 0 };
      started.push(turnId);
      turns.set(turnId, {
        turnId, sessionId, owner: { id: user.id, tenant: user.tenant }, status: 'completed', text: 'hi', toolCalls: [], steps: 1,
        events: [1, 2, 3].map((id) => ({ id, type: id === 3 ? 'done' : 'status', at: 'now', data: { n: id } })),
      });
      const key = `${user.tenant}/${user.id}/${sessionId}`;
      const list = g.sessions.get(key) ?? [];
      list.push({ index: list.length, role: 'user', content: text, turnId, at: 'now', status: 'completed' });
      list.push({ index: list.length, role: 'assistant', content: 'hi', turnId, at: '2026-01-01T00:00:09.000Z', status: 'completed' });
      g.sessions.set(key, list);
      return { kind: 'accepted' as const, created: true, position: 0 };
    },
    sessions: new Map<string, TranscriptMessage[]>(),
    async getSession(user: UserContext, sessionId: string): Promise<SessionView | null> {
      const messages = g.sessions.get(`${user.tenant}/${user.id}/${sessionId}`);
      if (!messages) return null;
      return { sessionId, owner: { id: user.id, tenant: user.tenant }, messages, totalMessages: messages.length, turnsCompleted: messages.length / 2, queuedTurnIds: [], run: 1 };
    },
    async getTurn(turnId: string, after?: number) {
      const t = turns.get(turnId);
      if (!t) return null;
      return { ...t, events: t.events.filter((e) => e.id > (after ?? 0)) };
    },
    async catalog(): Promise<Catalog> {
      return { tools: [], servers: [{ server: 'a', transport: 'stdio', state: 'connected', toolCount: 0 }] };
    },
    async temporalHealth() {
      return g.down ? { ok: false, error: 'down' } : { ok: true };
    },
    async awaitingApproval(tenant: string) {
      return [...turns.values()].filter((t) => t.owner?.tenant === tenant && t.status === 'awaiting_approval');
    },
    // Open sessions only, in the order they were created (one second apart), paged like the real one.
    async listSessions(owner: { id: string; tenant: string }, limit: number, cursor?: SessionCursor) {
      const prefix = `${owner.tenant}/${owner.id}/`;
      const all = [...g.sessions.keys()]
        .map((key, i) => ({ key, startedAt: new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString() }))
        .filter((s) => s.key.startsWith(prefix) && (!cursor || s.startedAt < cursor.lastAt))
        .reverse()
        .map((s) => ({ sessionId: s.key.slice(prefix.length), startedAt: s.startedAt, lastAt: s.startedAt, open: true }));
      const sessions = all.slice(0, limit);
      const last = sessions.at(-1);
      return all.length > limit && last ? { sessions, next: { lastAt: last.lastAt, sessionId: last.sessionId } } : { sessions };
    },
    ...noSessionEdits,
    async listTurns() {
      return [];
    },
  };
  return g;
}

const ALICE = { authorization: 'Bearer alice@demo' };
const MALLORY = { authorization: 'Bearer mallory@demo' };
const EVE = { authorization: 'Bearer eve@other' };

async function setup(rateLimits = { userPerMinute: 1_000, tenantPerMinute: 1_000 }) {
  const gateway = fakeGateway();
  const app = await buildApp({ gateway, auth: fakeAuth,
    policy: () => openPolicy, limiters: memoryRateLimiters(rateLimits), maxMessageChars: 100, ssePollMs: 5 });
  // Requests act as alice unless a test says otherwise.
  const asAlice = (opts: InjectOptions) => app.inject({ ...opts, headers: { ...ALICE, ...opts.headers } });
  return { app: { inject: asAlice }, gateway, bare: app };
}

const post = (app: Awaited<ReturnType<typeof setup>>['app'], url: string, payload: unknown, headers: Record<string, string> = {}) =>
  app.inject({ method: 'POST', url, payload: typeof payload === 'string' ? payload : JSON.stringify(payload), headers: { 'content-type': 'application/json', ...headers } });

test('POST a message → 202 with turn id and urls', async () => {
  const { app } = await setup();
  const res = await post(app, '/v1/sessions/s1/messages', { text: 'hello' });
  expect(res.statusCode).toBe(202);
  const body = res.json();
  expect(body.turnId).toMatch(/^turn-s1-[a-z0-9]+$/);
  expect(body.eventsUrl).toBe(`/v1/turns/${body.turnId}/events`);
});

test.each([
  ['not JSON', '{"text": ', 400, 'invalid_json'],
  ['empty text', { text: '   ' }, 400, 'invalid_request'],
  ['missing text', {}, 400, 'invalid_request'],
  ['wrong type', { text: 5 }, 400, 'invalid_request'],
  ['unknown field', { text: 'hi', extra: true }, 400, 'invalid_request'],
  ['too long', { text: 'x'.repeat(101) }, 413, 'payload_too_large'],
  ['array body', [1, 2], 400, 'invalid_request'],
])('malformed body (%s) → %i %s, JSON error, no stack', async (_name, payload, status, code) => {
  const { app, gateway } = await setup();
  const res = await post(app, '/v1/sessions/s1/messages', payload);
  expect(res.statusCode).toBe(status);
  expect(res.json().error.code).toBe(code);
  expect(res.body).not.toMatch(/at \w+ \(|node_modules/);
  expect(gateway.started).toHaveLength(0);
});

test('bad session id, wrong content type and oversized bodies are 4xx', async () => {
  const { app } = await setup();
  expect((await post(app, '/v1/sessions/bad%20id/messages', { text: 'x' })).statusCode).toBe(400);
  const text = await app.inject({ method: 'POST', url: '/v1/sessions/s/messages', payload: 'hi', headers: { 'content-type': 'text/plain' } });
  expect(text.statusCode).toBe(415);
  expect(text.json().error.code).toBe('unsupported_media_type');
  const big = await post(app, '/v1/sessions/s/messages', { text: 'x'.repeat(2 * 1024 * 1024) });
  expect(big.statusCode).toBe(413);
  expect(big.json().error.code).toBe('payload_too_large');
});

test('Idempotency-Key returns the same turn', async () => {
  const { app, gateway } = await setup();
  const a = await post(app, '/v1/sessions/s1/messages', { text: 'hi' }, { 'idempotency-key': 'k-1' });
  const b = await post(app, '/v1/sessions/s1/messages', { text: 'hi' }, { 'idempotency-key': 'k-1' });
  expect(a.statusCode).toBe(202);
  expect(b.statusCode).toBe(200);
  expect(b.json().turnId).toBe(a.json().turnId);
  expect(gateway.started).toHaveLength(1);
  const bad = await post(app, '/v1/sessions/s1/messages', { text: 'hi' }, { 'idempotency-key': 'has space' });
  expect(bad.statusCode).toBe(400);
});

test('unknown turn → 404 on state and events; unknown route → 404 JSON', async () => {
  const { app } = await setup();
  for (const url of ['/v1/turns/turn-s1-abc', '/v1/turns/turn-s1-abc/events', '/v1/turns/whatever', '/nope']) {
    const res = await app.inject({ method: 'GET', url });
    expect(res.statusCode).toBe(404);
    expect(res.json().error.code).toBe('not_found');
  }
});

test('events are SSE with ids; Last-Event-ID and ?after resume after that id', async () => {
  const { app } = await setup();
  const { turnId } = (await post(app, '/v1/sessions/s1/messages', { text: 'hi' })).json();
  const all = await app.inject({ method: 'GET', url: `/v1/turns/${turnId}/events` });
  expect(all.headers['content-type']).toMatch(/^text\/event-stream/);
  expect([...all.body.matchAll(/^id: (\d+)$/gm)].map((m) => m[1])).toEqual(['1', '2', '3']);
  expect(all.body).toMatch(/^event: done$/m);
  // The stream opens with the API's `turn` event, without an id: here from the read of the turn (no live hub).
  const opening = parseSseBlock(all.body.split('\n\n')[1] ?? '');
  expect(opening).toEqual({ event: 'turn', data: { turnId, sessionId: 's1', status: 'completed', at: expect.any(String) } });
  expect(StreamOpening.safeParse(opening?.data).success).toBe(true);

  const resumed = await app.inject({ method: 'GET', url: `/v1/turns/${turnId}/events`, headers: { 'last-event-id': '2' } });
  expect([...resumed.body.matchAll(/^id: (\d+)$/gm)].map((m) => m[1])).toEqual(['3']);
  expect([...resumed.body.matchAll(/^event: (\w+)$/gm)].map((m) => m[1])).toEqual(['turn', 'done']);
  const after = await app.inject({ method: 'GET', url: `/v1/turns/${turnId}/events?after=1` });
  expect([...after.body.matchAll(/^id: (\d+)$/gm)].map((m) => m[1])).toEqual(['2', '3']);
});

test('events refuse what the document refuses: a query parameter it does not list, a Last-Event-ID that is no event id', async () => {
  // Found by the contract fuzzer: both used to be ignored, so a typo (`?afer=2`) silently replayed everything.
  const { app } = await setup();
  const { turnId } = (await post(app, '/v1/sessions/s1/messages', { text: 'hi' })).json();
  for (const opts of [{ url: `/v1/turns/${turnId}/events?afer=2` }, { url: `/v1/turns/${turnId}/events`, headers: { 'last-event-id': 'two' } }]) {
    const res = await app.inject({ method: 'GET', ...opts });
    expect([res.statusCode, res.json().error.code]).toEqual([400, 'invalid_request']);
  }
  const ok = await app.inject({ method: 'GET', url: `/v1/turns/${turnId}/events?after=1&access_token=ignored`, headers: { 'last-event-id': '2' } });
  expect([...ok.body.matchAll(/^id: (\d+)$/gm)].map((m) => m[1])).toEqual(['3']);
});

test("the stream's first event comes from the API at once, before the turn's workflow has said anything; it takes no id and resuming is unchanged", async () => {
  const gateway = fakeGateway();
  // Temporal has not run the turn's first workflow task yet: a read of the turn waits (until released).
  let reads = 0;
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  const getTurn = gateway.getTurn.bind(gateway);
  gateway.getTurn = async (turnId, after, opts) => {
    reads++;
    await released;
    return getTurn(turnId, after, opts);
  };
  const hub = createLiveTextHub();
  const app = await buildApp({ gateway, auth: fakeAuth, policy: () => openPolicy, maxMessageChars: 100, ssePollMs: 5, live: { hub, secret: 'worker-secret-0123456789' } });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  const streams: AbortController[] = [];
  /** Opens the turn's stream; `next()` is its next event, or undefined if none comes within `ms`. */
  const open = async (turnId: string, lastEventId?: string) => {
    const controller = new AbortController();
    streams.push(controller);
    const res = await fetch(`${base}/v1/turns/${turnId}/events`, {
      headers: { ...ALICE, ...(lastEventId ? { 'last-event-id': lastEventId } : {}) },
      signal: controller.signal,
    });
    expect(res.status).toBe(200);
    const events = sseEvents(res.body as unknown as AsyncIterable<Uint8Array>);
    const pending: { next?: Promise<IteratorResult<SseEvent>> } = {};
    return {
      next: async (ms = 1_000): Promise<SseEvent | undefined> => {
        pending.next ??= events.next();
        const got = await Promise.race([pending.next, new Promise<undefined>((r) => setTimeout(() => r(undefined), ms))]);
        if (got === undefined) return undefined;
        delete pending.next;
        return got.done ? undefined : got.value;
      },
      close: () => controller.abort(),
    };
  };
  try {
    const accepted = await fetch(`${base}/v1/sessions/s1/messages`, { method: 'POST', headers: { ...ALICE, 'content-type': 'application/json' }, body: '{"text":"hi"}' });
    const { turnId, position } = (await accepted.json()) as { turnId: string; position: number };
    const pushed = (id: number, type: TurnEvent['type'] = 'status'): LiveChunk => ({
      turnId, step: 1, attempt: 1, kind: 'event', offset: 0, text: '', turn: { sessionId: 's1', owner: { id: 'alice', tenant: 'demo' } },
      event: { id, type, at: new Date().toISOString(), data: { status: type === 'done' ? 'completed' : 'running' } },
    });

    const started = Date.now();
    const first = await open(turnId);
    const opening = await first.next(200);
    expect(Date.now() - started).toBeLessThan(200);
    // Nothing pushed, nothing read from Temporal: the API said it from what it knows (the POST's answer).
    expect(opening).toEqual({ event: 'turn', data: { turnId, sessionId: 's1', status: 'running', position, at: expect.any(String) } });
    expect(reads).toBe(0);
    release();
    // The workflow's events follow with their own ids, from 1.
    hub.ingest([pushed(1), pushed(2)]);
    expect(await first.next()).toMatchObject({ id: '1', event: 'status' });
    expect(await first.next()).toMatchObject({ id: '2', event: 'status' });
    first.close();

    // A reconnect opens the same way (no position: the turn has spoken since), then resumes after its
    // Last-Event-ID without loss or duplicates.
    const again = await open(turnId, '1');
    expect(await again.next(200)).toEqual({ event: 'turn', data: { turnId, sessionId: 's1', status: 'running', at: expect.any(String) } });
    expect(await again.next()).toMatchObject({ id: '2', event: 'status' });
    hub.ingest([pushed(3, 'done')]);
    expect(await again.next()).toMatchObject({ id: '3', event: 'done' });
    expect(await again.next()).toBeUndefined(); // the stream ended
  } finally {
    release();
    for (const c of streams) c.abort();
    await app.close();
    hub.close();
  }
});

test('Temporal unreachable → 503 JSON on POST, healthz reports down; the API stays up', async () => {
  const { app, gateway } = await setup();
  gateway.down = true;
  const res = await post(app, '/v1/sessions/s1/messages', { text: 'hi' });
  expect(res.statusCode).toBe(503);
  expect(res.json().error.code).toBe('unavailable');
  expect(res.body).not.toContain('ECONNREFUSED');
  const health = await app.inject({ method: 'GET', url: '/healthz' });
  expect(health.statusCode).toBe(503);
  expect(health.json().status).toBe('down');
  gateway.down = false;
  expect((await post(app, '/v1/sessions/s1/messages', { text: 'hi' })).statusCode).toBe(202);
});

test('/healthz answers from the workers\' reports and never asks a worker (no workflow for an anonymous caller)', async () => {
  const gateway = fakeGateway();
  let catalogCalls = 0;
  const catalog = gateway.catalog.bind(gateway);
  gateway.catalog = async () => (catalogCalls++, await catalog());
  const secret = 'worker-secret-0123456789';
  const app = await buildApp({ gateway, auth: fakeAuth, policy: () => openPolicy, maxMessageChars: 100, ssePollMs: 5, live: { hub: createLiveTextHub(), secret } });
  const health = async () => (await app.inject({ method: 'GET', url: '/healthz' })).json();

  // No worker has reported yet: degraded, and it says why.
  expect(await health()).toMatchObject({ status: 'degraded', temporal: { ok: true }, mcp: { ok: false, servers: [], error: expect.stringMatching(/no worker has reported/) }, workers: [] });

  const send = (body: unknown, authorization = `Bearer ${secret}`) =>
    app.inject({ method: 'POST', url: '/internal/workers', headers: { authorization, 'content-type': 'application/json' }, payload: JSON.stringify(body) });
  const a = { server: 'a', transport: 'stdio', state: 'connected', toolCount: 1 };
  expect((await send({ worker: 'w1', everyMs: 60_000, servers: [a] }, 'Bearer wrong')).statusCode).toBe(401);
  const bad = await send({ worker: 'w1', everyMs: 60_000, servers: [{ ...a, state: 'sleeping' }] });
  expect(bad.statusCode).toBe(400);
  expect(bad.json().error.message).toMatch(/^worker report: servers\[0\]\.state: /);
  expect((await send({ worker: 'w1', everyMs: 60_000, servers: [a] })).statusCode).toBe(204);
  expect(await health()).toMatchObject({ status: 'ok', mcp: { ok: true, servers: [a] }, workers: [{ worker: 'w1', servers: [a] }] });
  expect((await send({ worker: 'w2', everyMs: 60_000, servers: [{ ...a, state: 'unavailable', toolCount: 0, error: 'spawn failed' }] })).statusCode).toBe(204);
  const both = await health();
  expect(both.status).toBe('degraded');
  expect(both.mcp.servers[0]).toMatchObject({ server: 'a', state: 'unavailable', error: 'unavailable on 1 of 2 workers: spawn failed' });
  expect(both.workers.map((w: { worker: string }) => w.worker)).toEqual(['w1', 'w2']);
  expect(catalogCalls).toBe(0);
  // The internal route stays out of the public document.
  expect(JSON.stringify((await app.inject({ method: 'GET', url: '/openapi.json' })).json().paths)).not.toContain('/internal/');
});

test('a method the path does not serve → 405 with Allow, before authentication and whatever the body; no such path → 404', async () => {
  const { bare } = await setup();
  const cases: Array<[string, string, string]> = [
    ['PUT', '/v1/tools', 'GET, HEAD'],
    ['DELETE', '/v1/turns/turn-s1-abc', 'GET, HEAD'],
    ['GET', '/v1/turns/turn-s1-abc/cancel', 'POST'],
    ['PATCH', '/v1/sessions/s1/messages', 'GET, HEAD, POST'],
    ['POST', '/healthz', 'GET, HEAD'],
  ];
  for (const [method, url, allow] of cases) {
    // No token, and a body that is not JSON: neither is looked at.
    const res = await bare.inject({ method: method as 'GET', url, payload: 'not json', headers: { 'content-type': 'application/json' } });
    expect({ method, url, status: res.statusCode, allow: res.headers.allow, code: res.json().error.code }).toEqual({
      method, url, status: 405, allow, code: 'method_not_allowed',
    });
  }
  const none = await bare.inject({ method: 'DELETE', url: '/nope', payload: 'not json', headers: { 'content-type': 'application/json' } });
  expect([none.statusCode, none.json().error.code]).toEqual([404, 'not_found']);
});

test('a DELETE with a body is answered on a connection that stays open (never closed while the client still sends)', async () => {
  const { bare } = await setup();
  await bare.listen({ host: '127.0.0.1', port: 0 });
  try {
    const { port } = bare.server.address() as AddressInfo;
    const bodies: Array<[string, Buffer]> = [
      ['application/json', Buffer.from('not json')],
      ['application/json', Buffer.from('')],
      ['application/json', Buffer.from(JSON.stringify({ big: 'x'.repeat(2 * 1024 * 1024) }))],
      ['application/octet-stream', Buffer.alloc(4096, 1)],
    ];
    for (const [type, body] of bodies) {
      for (const url of ['/v1/tools', '/v1/turns/turn-s1-abc/cancel', '/nope']) {
        const answers = await onOneConnection(port, [
          `DELETE ${url} HTTP/1.1\r\nHost: x\r\nContent-Type: ${type}\r\nContent-Length: ${body.length}\r\n\r\n`,
          body,
          'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n',
        ]);
        // Both requests answered on the one connection: the first one's body was read past, not refused.
        expect({ url, type, size: body.length, answers }).toEqual({ url, type, size: body.length, answers: [url === '/nope' ? 404 : 405, 200] });
      }
    }
  } finally {
    await bare.close();
  }
});

/** Writes `parts` on one TCP connection and resolves with the status of each response read back, once the server has answered two. */
function onOneConnection(port: number, parts: Array<string | Buffer>): Promise<number[]> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let text = '';
    // A response may follow the previous body on the same line.
    const statuses = () => [...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1]));
    // A connection the server neither answers twice nor closes fails the test instead of holding it up.
    const timer = setTimeout(() => socket.destroy(), 15_000);
    socket.on('data', (chunk) => {
      text += chunk.toString('latin1');
      if (statuses().length >= 2) {
        socket.destroy();
        resolve(statuses());
      }
    });
    socket.on('error', reject);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(statuses());
    });
    for (const part of parts) socket.write(part);
  });
}

test('hundreds of malformed requests produce no 5xx', async () => {
  const { app } = await setup();
  const bodies = ['', '{', 'null', '[]', '"x"', '{"text":null}', '{"text":{}}', '\u0000', '{"text":"a","text":1}', '{"__proto__":{"x":1}}'];
  const paths = ['/v1/sessions/s/messages', '/v1/sessions/%00/messages', '/v1/sessions/' + 'a'.repeat(100) + '/messages'];
  const types = ['application/json', 'text/plain', 'application/x-www-form-urlencoded', 'application/json; charset=latin1'];
  let count = 0;
  for (const url of paths) for (const payload of bodies) for (const ct of types) {
    const res = await app.inject({ method: 'POST', url, payload, headers: { 'content-type': ct } });
    count++;
    expect(res.statusCode).toBeGreaterThanOrEqual(400);
    expect(res.statusCode).toBeLessThan(500);
    expect(res.json().error.code).toEqual(expect.any(String));
  }
  expect(count).toBe(120);
  for (let i = 0; i < 100; i++) {
    const res = await app.inject({ method: 'GET', url: `/v1/turns/${encodeURIComponent(String.fromCharCode(i) + 'x'.repeat(i * 3))}` });
    // Over-long ids are refused (400/414); the others are simply unknown (404).
    expect([400, 404, 414]).toContain(res.statusCode);
    expect(res.json().error.code).toEqual(expect.any(String));
  }
  for (let i = 0; i < 60; i++) {
    const id = encodeURIComponent(String.fromCharCode(i * 2) + 'y'.repeat(i * 2));
    for (const url of [`/v1/sessions/${id}/messages`, `/v1/turns/${id}/events?after=${i % 2 ? '-1' : 'x'}`, `/v1/turns/${id}/cancel`]) {
      const res = await app.inject({ method: url.endsWith('cancel') ? 'POST' : 'GET', url });
      expect([400, 404, 414]).toContain(res.statusCode);
      expect(res.json().error.code).toEqual(expect.any(String));
    }
  }
});

test('every /v1 route needs a token; /healthz does not', async () => {
  const { app } = await setup();
  for (const [method, url] of [['POST', '/v1/sessions/s/messages'], ['GET', '/v1/turns/turn-s-1'], ['GET', '/v1/tools'], ['GET', '/v1/servers'], ['POST', '/v1/turns/turn-s-1/approvals/c1']] as const) {
    const res = await app.inject({ method, url, headers: { authorization: 'nope' }, payload: method === 'POST' ? {} : undefined });
    expect(res.statusCode).toBe(401);
    expect(res.json().error.code).toBe('missing_token');
  }
  expect((await app.inject({ method: 'GET', url: '/healthz', headers: { authorization: 'nope' } })).statusCode).toBe(200);
});

/** A path with every character of its segments percent-encoded (slashes kept), in lower- or upper-case hex. */
const encodeAll = (path: string, upper: boolean): string =>
  path.replace(/[^/]/g, (c) => {
    const hex = c.charCodeAt(0).toString(16).padStart(2, '0');
    return `%${upper ? hex.toUpperCase() : hex}`;
  });

test('the token check follows the route the router matched: percent-encoded paths to protected routes answer 401', async () => {
  const { bare, gateway } = await setup();
  let catalogCalls = 0;
  const catalog = gateway.catalog.bind(gateway);
  gateway.catalog = async () => {
    catalogCalls++;
    return await catalog();
  };
  // Every route the OpenAPI document marks as needing a token (the same rule as the auth hook), and /ws.
  const doc = (await bare.inject({ method: 'GET', url: '/openapi.json' })).json() as { paths: Record<string, Record<string, { security?: unknown }>> };
  const routes: Array<[string, string]> = [['GET', '/ws']];
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) if (op.security) routes.push([method.toUpperCase(), path.replace(/\{[^}]+\}/g, 'x1')]);
  }
  expect(routes.length).toBeGreaterThan(10);
  expect(routes).toEqual(expect.arrayContaining([['GET', '/v1/servers'], ['GET', '/v1/tools'], ['POST', '/v1/sessions/x1/messages']]));
  for (const [method, path] of routes) {
    // The same route, spelled so that the raw URL no longer starts with /v1/ or /ws.
    for (const url of [path, `/%${path.charCodeAt(1).toString(16)}${path.slice(2)}`, encodeAll(path, false), encodeAll(path, true)]) {
      const res = await bare.inject({ method: method as 'GET' | 'POST', url, ...(method === 'POST' ? { payload: {} } : {}) });
      expect([method, url, res.statusCode]).toEqual([method, url, 401]);
      expect(res.json().error.code).toBe('missing_token');
    }
  }
  // HEAD (answered by the GET routes) is covered the same way.
  expect((await bare.inject({ method: 'HEAD', url: '/%761/servers' })).statusCode).toBe(401);
  expect(catalogCalls).toBe(0);
  expect(gateway.started).toHaveLength(0);
});

test.each([
  '//v1/servers', '/v1//servers', '/v1/./servers', '/v1/servers/.', '/v1/x/../servers', '/./v1/servers', '/V1/servers', '/v1/SERVERS',
  '/%56%31/servers', '/v1%2Fservers', '/v1/servers/', '/v1/servers%2F', '/%2e/v1/servers', '/v1/%2e%2e/v1/servers', '/v1/servers;x', '/v1/servers%00',
])('%s without a token: 401 or a plain 404, never the route', async (url) => {
  const { bare, gateway } = await setup();
  let catalogCalls = 0;
  gateway.catalog = async () => {
    catalogCalls++;
    return { tools: [], servers: [] };
  };
  const res = await bare.inject({ method: 'GET', url });
  expect([401, 404, 400]).toContain(res.statusCode);
  expect(['missing_token', 'not_found', 'bad_url']).toContain(res.json().error.code);
  expect(res.body).not.toMatch(/"servers"/);
  expect(catalogCalls).toBe(0);
});

test('the catalog routes ask for the caller themselves: without the auth hook they still answer 401', async () => {
  const bare = Fastify({ logger: false });
  let calls = 0;
  const count = <T>(value: T) => async (): Promise<T> => {
    calls++;
    return value;
  };
  const service = { catalog: count({ tools: [], servers: [] }), servers: count({ servers: [] }) } as unknown as TurnService;
  // The app's error shape, which the routes' response schemas expect.
  bare.setErrorHandler((err: HttpError, _request, reply) => reply.status(err.statusCode).send({ error: { code: err.code, message: err.message } }));
  await bare.register(catalogRoutes, { service });
  for (const url of ['/v1/servers', '/v1/tools']) {
    const res = await bare.inject({ method: 'GET', url });
    expect([url, res.statusCode, res.json().error.code]).toEqual([url, 401, 'missing_token']);
  }
  expect(calls).toBe(0);
  await bare.close();
});

test('a turn is visible only to its owner: other users and tenants get 404 for reads and streams', async () => {
  const { app } = await setup();
  const { turnId } = (await post(app, '/v1/sessions/s1/messages', { text: 'hi' })).json();
  expect((await app.inject({ method: 'GET', url: `/v1/turns/${turnId}` })).statusCode).toBe(200);
  for (const who of [MALLORY, EVE]) {
    for (const url of [`/v1/turns/${turnId}`, `/v1/turns/${turnId}/events`]) {
      const res = await app.inject({ method: 'GET', url, headers: who });
      expect(res.statusCode).toBe(404);
      expect(res.body).not.toContain('alice');
    }
  }
});

test('approvals: decided → 200, unknown or forbidden → 404, twice → 409, other tenant → 404, bad body → 400', async () => {
  const { app, gateway } = await setup();
  const { turnId } = (await post(app, '/v1/sessions/s1/messages', { text: 'hi' })).json();
  const url = `/v1/turns/${turnId}/approvals/call_1`;
  gateway.approvals.push({ kind: 'decided', decision: 'approved' }, { kind: 'already_decided' }, { kind: 'forbidden' });
  const ok = await post(app, url, { approve: true });
  expect(ok.statusCode).toBe(200);
  expect(ok.json()).toEqual({ turnId, toolCallId: 'call_1', decision: 'approved' });
  expect((await post(app, url, { approve: true })).statusCode).toBe(409);
  expect((await post(app, url, { approve: true }, MALLORY)).statusCode).toBe(404);
  expect((await post(app, url, { approve: false })).statusCode).toBe(404);
  expect((await post(app, url, { approve: true }, EVE)).statusCode).toBe(404);
  expect((await post(app, url, { approve: 'yes' })).statusCode).toBe(400);
});

test('message submission is rate limited per user (429 with retry-after), and per tenant', async () => {
  const { app } = await setup({ userPerMinute: 3, tenantPerMinute: 5 });
  for (let i = 0; i < 3; i++) expect((await post(app, '/v1/sessions/s/messages', { text: `m${i}` })).statusCode).toBe(202);
  const limited = await post(app, '/v1/sessions/s/messages', { text: 'again' });
  expect(limited.statusCode).toBe(429);
  expect(limited.json().error.code).toBe('rate_limited');
  expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
  // Another user of the same tenant has their own budget, until the tenant's is spent.
  expect((await post(app, '/v1/sessions/s/messages', { text: 'm' }, MALLORY)).statusCode).toBe(202);
  expect((await post(app, '/v1/sessions/s/messages', { text: 'm' }, MALLORY)).statusCode).toBe(202);
  expect((await post(app, '/v1/sessions/s/messages', { text: 'm' }, MALLORY)).statusCode).toBe(429);
  // Other tenants are unaffected.
  expect((await post(app, '/v1/sessions/s/messages', { text: 'm' }, EVE)).statusCode).toBe(202);
});

test('cancel: a running turn → 202; a finished one → 409; someone else → 404', async () => {
  const { app, gateway } = await setup();
  const { turnId } = (await post(app, '/v1/sessions/s1/messages', { text: 'hi' })).json();
  expect((await post(app, `/v1/turns/${turnId}/cancel`, {})).statusCode).toBe(409);
  const t = gateway.turns.get(turnId) as TurnState;
  gateway.turns.set(turnId, { ...t, status: 'running' });
  expect((await post(app, `/v1/turns/${turnId}/cancel`, {}, MALLORY)).statusCode).toBe(404);
  const res = await post(app, `/v1/turns/${turnId}/cancel`, {});
  expect(res.statusCode).toBe(202);
  expect(res.json()).toEqual({ turnId, status: 'cancelling' });
  expect(gateway.cancelled).toEqual([turnId]);
});

describe('sessions', () => {
  test('GET /v1/sessions/:id/messages returns the caller\'s conversation; unknown or foreign sessions are 404', async () => {
    const { app } = await setup();
    expect((await app.inject({ method: 'GET', url: '/v1/sessions/s9/messages' })).statusCode).toBe(404);
    await post(app, '/v1/sessions/s9/messages', { text: 'first' });
    await post(app, '/v1/sessions/s9/messages', { text: 'second' });
    const res = await app.inject({ method: 'GET', url: '/v1/sessions/s9/messages' });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.messages.map((m: { role: string; content: string }) => `${m.role}:${m.content}`)).toEqual([
      'user:first', 'assistant:hi', 'user:second', 'assistant:hi',
    ]);
    expect(body).toMatchObject({ sessionId: 's9', totalMessages: 4, firstRetainedIndex: 0, queuedTurnIds: [] });
    const other = await app.inject({ method: 'GET', url: '/v1/sessions/s9/messages', headers: MALLORY });
    expect(other.statusCode).toBe(404);
    expect(other.json().error.code).toBe('not_found');
    const bad = await app.inject({ method: 'GET', url: '/v1/sessions/bad%20id/messages' });
    expect(bad.statusCode).toBe(400);
  });

  test("GET /v1/sessions lists the caller's sessions only, newest first, each with its last message; paged with a cursor", async () => {
    const { app } = await setup();
    const empty = await app.inject({ method: 'GET', url: '/v1/sessions' });
    expect(empty.statusCode).toBe(200);
    expect(empty.json()).toEqual({ sessions: [] });
    for (const id of ['s1', 's2', 's3']) await post(app, `/v1/sessions/${id}/messages`, { text: `hello ${id}` });
    await post(app, '/v1/sessions/m1/messages', { text: 'from mallory' }, MALLORY);

    const all = await app.inject({ method: 'GET', url: '/v1/sessions' });
    expect(all.statusCode).toBe(200);
    const body = all.json();
    expect(body.sessions.map((s: { sessionId: string }) => s.sessionId)).toEqual(['s3', 's2', 's1']);
    expect(body.nextCursor).toBeUndefined();
    expect(body.sessions[0]).toMatchObject({ sessionId: 's3', open: true, messagesUrl: '/v1/sessions/s3/messages', lastMessage: { role: 'assistant', preview: 'hi' } });
    expect(body.sessions[0].lastMessage.at).toBe('2026-01-01T00:00:09.000Z');

    const first = (await app.inject({ method: 'GET', url: '/v1/sessions?limit=2' })).json();
    expect(first.sessions.map((s: { sessionId: string }) => s.sessionId)).toEqual(['s3', 's2']);
    expect(first.nextCursor).toEqual(expect.any(String));
    const second = (await app.inject({ method: 'GET', url: `/v1/sessions?limit=2&cursor=${first.nextCursor}` })).json();
    expect(second).toEqual({ sessions: [expect.objectContaining({ sessionId: 's1' })] });

    const mallory = (await app.inject({ method: 'GET', url: '/v1/sessions', headers: MALLORY })).json();
    expect(mallory.sessions.map((s: { sessionId: string }) => s.sessionId)).toEqual(['m1']);
    expect((await app.inject({ method: 'GET', url: '/v1/sessions', headers: EVE })).json()).toEqual({ sessions: [] });
    expect((await app.inject({ method: 'GET', url: '/v1/sessions', headers: { authorization: '' } })).statusCode).toBe(401);
  });

  test.each([
    ['a cursor this list never returned', 'cursor=bm90LWEtY3Vyc29y', 'cursor: not a cursor of this list'],
    ['a cursor that is not base64url', 'cursor=%2F%2F%2F', 'cursor: not a cursor of this list'],
    ['a limit of 0', 'limit=0', 'limit'],
    ['a limit over 100', 'limit=101', 'limit'],
    ['a limit that is no number', 'limit=ten', 'limit'],
    ['an unknown parameter', 'page=2', 'page'],
  ])('GET /v1/sessions with %s → 400 invalid_request saying what is wrong', async (_name, query, says) => {
    const { app } = await setup();
    const res = await app.inject({ method: 'GET', url: `/v1/sessions?${query}` });
    expect(res.statusCode).toBe(400);
    expect(res.json().error.code).toBe('invalid_request');
    expect(res.json().error.message).toContain(says);
  });

  test('a full session queue answers 409 session_busy and starts nothing', async () => {
    const { app, gateway } = await setup();
    gateway.busy = true;
    const res = await post(app, '/v1/sessions/s1/messages', { text: 'hello' });
    expect(res.statusCode).toBe(409);
    expect(res.json().error.code).toBe('session_busy');
    expect(gateway.started).toEqual([]);
  });

  test('the same Idempotency-Key from two users makes two turns', async () => {
    const { app } = await setup();
    const a = await post(app, '/v1/sessions/s1/messages', { text: 'hi' }, { 'idempotency-key': 'k-1' });
    const b = await post(app, '/v1/sessions/s1/messages', { text: 'hi' }, { 'idempotency-key': 'k-1', ...MALLORY });
    const again = await post(app, '/v1/sessions/s1/messages', { text: 'hi' }, { 'idempotency-key': 'k-1' });
    expect(a.statusCode).toBe(202);
    expect(b.statusCode).toBe(202);
    expect(b.json().turnId).not.toBe(a.json().turnId);
    expect(again.statusCode).toBe(200);
    expect(again.json().turnId).toBe(a.json().turnId);
  });
});

test("seed 004's system messages: rate limited (429) and maintenance (503) answers carry them", async () => {
  const { app, gateway } = await setup({ userPerMinute: 1, tenantPerMinute: 100 });
  await post(app, '/v1/sessions/s1/messages', { text: 'one' });
  const limited = await post(app, '/v1/sessions/s1/messages', { text: 'two' });
  expect(limited.statusCode).toBe(429);
  expect(limited.json().error.message).toContain("I'm currently processing too many requests. Please try again in a moment.");
  gateway.down = true;
  const down = await post(app, '/v1/sessions/s1/messages', { text: 'three' }, MALLORY);
  expect(down.statusCode).toBe(503);
  expect(down.json().error.message).toContain('The system is currently undergoing maintenance.');
});
