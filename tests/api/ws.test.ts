import { memoryRateLimiters } from '../../src/api/rate-limits';
import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import WebSocket from 'ws';
import { buildApp, type AppDeps } from '../../src/api/app';
import { fakeAuth, openPolicy } from '../helpers/fake-auth';
import type { ApprovalOutcome, TurnGateway } from '../../src/api/gateway';
import { SYSTEM_MESSAGES } from '../../src/api/system-messages';
import { wsMaxFrameBytes } from '../../src/shared/message-limits';
import { createLiveTextHub, type LiveTextHub } from '../../src/live/hub';
import type { Catalog } from '../../src/shared/tool-types';
import type { TurnEvent, TurnState } from '../../src/shared/turn';
import { connectWs, turnEnded, type WsClient } from '../helpers/ws';
import { noSessionEdits } from '../helpers/no-session-edits';
import { waitFor } from '../helpers/http';
import type { SessionView, TranscriptMessage } from '../../src/shared/session';
import type { UserContext } from '../../src/shared/user';

/**
 * A gateway over in-memory turns that progress over time, like the real ones: a submitted turn is the
 * session's active turn and gains an event every `stepMs` (LLM step, tool call, tool result, answer,
 * done) unless held; a text containing "fail" makes the tool call fail.
 */
function fakeGateway(stepMs = 10) {
  type Turn = TurnState & { script: Array<Omit<TurnEvent, 'id' | 'at'>>; held: boolean; userText: string };
  const turns = new Map<string, Turn>();
  const sessions = new Map<string, { messages: TranscriptMessage[]; active: string[] }>();
  const timers = new Set<NodeJS.Timeout>();
  const keyOf = (owner: { id: string; tenant: string }, sessionId: string) => `${owner.tenant}/${owner.id}/${sessionId}`;

  const push = (t: Turn, e: Omit<TurnEvent, 'id' | 'at'>) => t.events.push({ ...e, id: t.events.length + 1, at: new Date().toISOString() });
  const finish = (t: Turn, status: TurnState['status']) => {
    t.status = status;
    const s = sessions.get(keyOf(t.owner!, t.sessionId))!;
    s.active = s.active.filter((id) => id !== t.turnId);
    const user = s.messages.find((m) => m.turnId === t.turnId);
    if (user) user.status = status;
    if (status === 'completed') s.messages.push({ index: s.messages.length, role: 'assistant', content: t.text ?? '', turnId: t.turnId, at: 'now', status });
  };
  const step = (t: Turn) => {
    if (t.status !== 'running' || t.held) return;
    const next = t.script.shift();
    if (!next) return;
    push(t, next);
    if (next.type === 'text') t.text = String(next.data.text);
    if (next.type === 'done') finish(t, 'completed');
  };

  const g = {
    turns,
    cancelled: [] as string[],
    getTurnCalls: 0,
    async submitMessage({ turnId, sessionId, text, user }: { turnId: string; sessionId: string; text: string; user: UserContext }) {
      if (turns.has(turnId)) return { kind: 'accepted' as const, created: false, position: 0 };
      const owner = { id: user.id, tenant: user.tenant };
      const key = keyOf(owner, sessionId);
      const s = sessions.get(key) ?? { messages: [], active: [] };
      sessions.set(key, s);
      const fail = text.includes('fail');
      const t: Turn = {
        turnId, sessionId, owner, status: 'running', toolCalls: [], steps: 1, events: [], userText: text, held: text.includes('hold'),
        script: [
          { type: 'tool_call_started', data: { toolCallId: 'c1', name: 'notes__add_note', server: 'notes', tool: 'add_note', arguments: {} } },
          { type: 'tool_call_finished', data: { toolCallId: 'c1', name: 'notes__add_note', isError: fail, result: fail ? 'Error: disk full\nat line 2' : 'saved' } },
          { type: 'text', data: { text: `answer to ${text}` } },
          { type: 'done', data: { status: 'completed' } },
        ],
      };
      push(t, { type: 'status', data: { status: 'running', phase: 'calling_llm', step: 1 } });
      turns.set(turnId, t);
      s.active.push(turnId);
      s.messages.push({ index: s.messages.length, role: 'user', content: text, turnId, at: 'now', status: 'running' });
      const timer = setInterval(() => {
        step(t);
        if (t.status !== 'running') {
          clearInterval(timer);
          timers.delete(timer);
        }
      }, stepMs);
      timer.unref();
      timers.add(timer);
      return { kind: 'accepted' as const, created: true, position: s.active.length - 1 };
    },
    async getSession(user: UserContext, sessionId: string): Promise<SessionView | null> {
      const s = sessions.get(keyOf(user, sessionId));
      if (!s) return null;
      return {
        sessionId, owner: { id: user.id, tenant: user.tenant }, messages: s.messages, totalMessages: s.messages.length,
        turnsCompleted: 0, ...(s.active[0] ? { activeTurnId: s.active[0] } : {}), queuedTurnIds: s.active.slice(1), run: 1,
      };
    },
    async getTurn(turnId: string, after?: number): Promise<TurnState | null> {
      g.getTurnCalls++;
      const t = turns.get(turnId);
      if (!t) return null;
      return { turnId: t.turnId, sessionId: t.sessionId, owner: t.owner!, status: t.status, ...(t.text ? { text: t.text } : {}), toolCalls: [], steps: 1, events: t.events.filter((e) => e.id > (after ?? 0)) };
    },
    async cancelTurn(turnId: string) {
      g.cancelled.push(turnId);
      const t = turns.get(turnId);
      if (t && t.status === 'running') {
        push(t, { type: 'cancelled', data: { status: 'cancelled' } });
        finish(t, 'cancelled');
      }
    },
    /** Lets a held turn run on. */
    release(turnId: string) {
      const t = turns.get(turnId);
      if (t) t.held = false;
    },
    /** `call-ok` is the one call waiting for a decision. */
    async decideApproval(_turnId: string, input: { toolCallId: string; approve: boolean }): Promise<ApprovalOutcome> {
      return input.toolCallId === 'call-ok' ? { kind: 'decided', decision: input.approve ? 'approved' : 'rejected' } : { kind: 'not_pending' };
    },
    async awaitingApproval() {
      return [];
    },
    async listSessions() {
      return { sessions: [] };
    },
    ...noSessionEdits,
    async listTurns() {
      return [];
    },
    async catalog(): Promise<Catalog> {
      return { tools: [], servers: [] };
    },
    async temporalHealth() {
      return { ok: true };
    },
    stop() {
      for (const t of timers) clearInterval(t);
    },
  };
  return g satisfies TurnGateway;
}

const ALICE = { authorization: 'Bearer alice@demo' };
const MALLORY = { authorization: 'Bearer mallory@demo' };

type Client = WsClient;

let apps: FastifyInstance[] = [];
let gateways: Array<ReturnType<typeof fakeGateway>> = [];
let clients: WebSocket[] = [];

async function setup(extra: Partial<AppDeps> = {}) {
  const gateway = fakeGateway();
  const app = await buildApp({
    gateway,
    auth: fakeAuth,
    policy: () => openPolicy,
    limiters: memoryRateLimiters({ userPerMinute: 1_000, tenantPerMinute: 1_000 }),
    maxMessageChars: 100,
    ssePollMs: 5,
    ...extra,
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  apps.push(app);
  gateways.push(gateway);
  const address = app.server.address() as { port: number };
  const base = `ws://127.0.0.1:${address.port}`;
  return { app, gateway, base, http: `http://127.0.0.1:${address.port}` };
}

const connect = (url: string, headers: Record<string, string> = ALICE, options: WebSocket.ClientOptions = {}): Promise<Client> =>
  connectWs(url, headers, options, clients);

/** The HTTP answer to an upgrade that was refused. */
function refused(url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    clients.push(ws);
    ws.on('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    ws.on('open', () => reject(new Error('the upgrade was accepted')));
    ws.on('error', () => undefined);
  });
}

const isComplete = turnEnded;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** What `p` resolves to, or `fallback` after `ms` (the timer does not outlive the answer). */
async function within<T, F>(p: Promise<T>, ms: number, fallback: F): Promise<T | F> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<F>((r) => (timer = setTimeout(() => r(fallback), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

afterEach(async () => {
  for (const c of clients) c.terminate();
  clients = [];
  for (const app of apps) await app.close();
  apps = [];
  for (const g of gateways) g.stop();
  gateways = [];
});

test('no token → 401 before the upgrade; a bad session id → 400; a plain GET → 426', async () => {
  const { base, http } = await setup();
  const none = await refused(`${base}/ws?sessionId=s1`);
  expect(none.status).toBe(401);
  expect(JSON.parse(none.body).error.code).toBe('missing_token');
  expect((await refused(`${base}/ws?sessionId=s1&access_token=nobody`)).status).toBe(401);
  const bad = await refused(`${base}/ws?sessionId=bad%20id`, ALICE);
  expect(bad.status).toBe(400);
  expect(JSON.parse(bad.body).error.code).toBe('invalid_request');
  const plain = await fetch(`${http}/ws?sessionId=s1`, { headers: ALICE });
  expect(plain.status).toBe(426);
  expect(((await plain.json()) as { error: { code: string } }).error.code).toBe('upgrade_required');
});

test('the token may come as ?access_token (browsers) and never reaches the log', async () => {
  let log = '';
  const logger = pino({ level: 'debug' }, { write: (line: string) => void (log += line) });
  const { base } = await setup({ logger });
  const c = await connect(`${base}/ws?sessionId=s1&access_token=${encodeURIComponent('alice@demo')}`, {});
  const hello = await c.next((f) => f.type === 'connection');
  expect(hello.payload).toEqual(expect.objectContaining({ state: 'connected', sessionId: 's1' }));
  c.send({ type: 'message', payload: { text: 'hi' } });
  await c.next((f) => f.type === 'text');
  // The request line is logged, with the token redacted.
  expect(log).toMatch(/"url":"\/ws\?sessionId=s1&access_token=\[redacted\]"/);
  expect(log).not.toContain('alice%40demo');
  expect(log).not.toContain('alice@demo');
});

test('connection message and welcome; a message → processing → events → text → complete', async () => {
  const { base } = await setup();
  const c = await connect(`${base}/ws?sessionId=s1`);
  const hello = await c.next((f) => f.type === 'connection');
  expect(hello.payload).toEqual({ state: 'connected', sessionId: 's1', clientId: expect.any(String), message: expect.any(String) });
  expect(c.frames[1]).toEqual({ type: 'system', payload: { code: 'welcome', message: SYSTEM_MESSAGES.WELCOME } });

  c.send({ type: 'message', payload: { text: 'add a note' } });
  const processing = await c.next((f) => f.type === 'status' && f.payload.state === 'processing' && f.payload.message === 'Working on it');
  const { turnId } = processing.payload;
  expect(turnId).toMatch(/^turn-s1-/);
  expect(processing.payload.position).toBe(0);
  await c.next(isComplete(turnId));

  const mine = c.frames.filter((f) => f.payload?.turnId === turnId);
  // Every durable event, in order, once.
  expect(mine.filter((f) => f.type === 'event').map((f) => [f.payload.id, f.payload.event])).toEqual([
    [1, 'status'],
    [2, 'tool_call_started'],
    [3, 'tool_call_finished'],
    [4, 'text'],
    [5, 'done'],
  ]);
  // ...and the seed's messages beside them.
  expect(mine.filter((f) => f.type !== 'event').map((f) => [f.type, f.payload.state ?? '', f.payload.tool ?? f.payload.content ?? f.payload.status ?? ''])).toEqual([
    ['status', 'processing', ''],
    ['status', 'processing', 'notes__add_note'],
    ['status', 'complete', 'notes__add_note'],
    ['text', '', 'answer to add a note'],
    ['status', 'complete', 'completed'],
  ]);
  expect(mine.find((f) => f.type === 'status' && f.payload.state === 'complete' && f.payload.tool)?.payload.data).toEqual({ isError: false, result: 'saved' });
  expect(mine.find((f) => f.type === 'text')?.payload).toEqual({ content: 'answer to add a note', turnId, final: true });
});

test('a failed tool call gets the seed tool-error system message', async () => {
  const { base } = await setup();
  const c = await connect(`${base}/ws?sessionId=s1`);
  c.send({ type: 'message', payload: { text: 'please fail' } });
  const err = await c.next((f) => f.type === 'system' && f.payload.code === 'tool_error');
  expect(err.payload.message).toBe(SYSTEM_MESSAGES.TOOL_ERROR('notes__add_note', 'disk full'));
  const finished = c.frames.find((f) => f.type === 'status' && f.payload.state === 'complete' && f.payload.tool);
  expect(finished?.payload.data).toEqual({ isError: true, result: 'Error: disk full\nat line 2' });
});

test('two connections to one session both get the turn; turns started over HTTP reach them too', async () => {
  const { base, http, app } = await setup();
  const a = await connect(`${base}/ws?sessionId=shared`);
  const b = await connect(`${base}/ws?sessionId=shared`);
  await a.next((f) => f.type === 'connection');
  await b.next((f) => f.type === 'connection');
  expect(app.activeConnections('shared')).toHaveLength(2);
  expect(app.activeConnections('shared').map((m) => m.userId)).toEqual(['alice', 'alice']);

  a.send({ type: 'message', payload: { text: 'from a' } });
  const { turnId } = (await a.next((f) => f.type === 'status' && f.payload.message === 'Working on it')).payload;
  await a.next(isComplete(turnId));
  await b.next(isComplete(turnId));
  const events = (c: Client, id: string) => c.frames.filter((f) => f.type === 'event' && f.payload.turnId === id).map((f) => f.payload.id);
  expect(events(a, turnId)).toEqual([1, 2, 3, 4, 5]);
  expect(events(b, turnId)).toEqual([1, 2, 3, 4, 5]);
  expect(b.frames.find((f) => f.type === 'text')?.payload.content).toBe('answer to from a');
  // Only the sender gets the acknowledgement.
  expect(b.frames.some((f) => f.type === 'status' && f.payload.message === 'Working on it')).toBe(false);

  // A turn started over HTTP is found by polling the session.
  const posted = await fetch(`${http}/v1/sessions/shared/messages`, { method: 'POST', headers: { ...ALICE, 'content-type': 'application/json' }, body: JSON.stringify({ text: 'from http' }) });
  const httpTurn = ((await posted.json()) as { turnId: string }).turnId;
  await a.next(isComplete(httpTurn));
  await b.next(isComplete(httpTurn));
  expect(events(b, httpTurn)).toEqual([1, 2, 3, 4, 5]);

  a.ws.close();
  await a.closed;
  // The server has dropped the closed one (its close handler ran), not just the client.
  await waitFor(async () => (app.activeConnections('shared').length === 1 ? true : undefined), 10_000, 10);
});

test('another user with the same session id gets a session of their own and sees nothing of the first', async () => {
  const { base } = await setup();
  const alice = await connect(`${base}/ws?sessionId=same`);
  await alice.next((f) => f.type === 'connection');
  alice.send({ type: 'message', payload: { text: 'secret plans' } });
  const { turnId } = (await alice.next((f) => f.type === 'status' && f.payload.message === 'Working on it')).payload;

  const mallory = await connect(`${base}/ws?sessionId=same`, MALLORY);
  // Even naming Alice's turn to resume does not help.
  const sneaky = await connect(`${base}/ws?sessionId=same&lastEventId=${turnId}:0`, MALLORY);
  expect((await mallory.next((f) => f.type === 'connection')).payload.state).toBe('connected');
  await alice.next(isComplete(turnId));
  await sleep(100);
  for (const c of [mallory, sneaky]) {
    expect(c.frames.map((f) => f.type)).toEqual(['connection', 'system']);
    expect(JSON.stringify(c.frames)).not.toContain('secret plans');
  }
  // Mallory's own messages are hers only.
  mallory.send({ type: 'message', payload: { text: 'mine' } });
  const hers = (await mallory.next((f) => f.type === 'status' && f.payload.message === 'Working on it')).payload.turnId;
  await mallory.next(isComplete(hers));
  await sleep(50);
  expect(alice.frames.some((f) => f.payload?.turnId === hers)).toBe(false);
});

test('invalid frames get an error and the connection stays open; app-level ping → pong', async () => {
  const { base } = await setup();
  const c = await connect(`${base}/ws?sessionId=s1`);
  await c.next((f) => f.type === 'connection');
  const errors: Array<[unknown, string]> = [
    ['not json', 'invalid_json'],
    ['[1,2]', 'invalid_message'],
    [{ type: 'nope' }, 'unknown_type'],
    [{ type: 'message' }, 'invalid_message'],
    [{ type: 'message', payload: { text: '   ' } }, 'invalid_message'],
    [{ type: 'message', payload: { text: 5 } }, 'invalid_message'],
    [{ type: 'message', payload: { text: 'hi', extra: 1 } }, 'invalid_message'],
    [{ type: 'message', payload: { text: 'hi', idempotencyKey: 'has space' } }, 'invalid_message'],
    [{ type: 'message', payload: { text: 'x'.repeat(101) } }, 'payload_too_large'],
    [{ type: 'cancel', payload: {} }, 'invalid_message'],
    [{ type: 'cancel', payload: { turnId: 'turn-s1-unknown' } }, 'not_found'],
  ];
  for (const [frame, code] of errors) {
    const from = c.frames.length;
    c.send(frame);
    const err = await c.next((f) => f.type === 'error', 3_000, from);
    expect({ frame, code: err.payload.code }).toEqual({ frame, code });
    expect(typeof err.payload.message).toBe('string');
  }
  c.ws.send(Buffer.from([1, 2, 3]), { binary: true });
  expect((await c.next((f) => f.type === 'error', 3_000, c.frames.length)).payload.code).toBe('invalid_message');

  const from = c.frames.length;
  c.send({ type: 'ping' });
  expect((await c.next((f) => f.type === 'pong', 3_000, from)).payload.at).toEqual(expect.any(String));
  expect(c.ws.readyState).toBe(WebSocket.OPEN);
  // Still a working session.
  c.send({ type: 'message', payload: { text: 'still here' } });
  await c.next((f) => f.type === 'text');
});

test('a frame over the size limit gets a frame_too_large error frame, then the socket closes with 1009', async () => {
  const { base } = await setup({ maxMessageChars: 16_000 });
  const limit = wsMaxFrameBytes(16_000);
  const c = await connect(`${base}/ws?sessionId=s1`);
  await c.next((f) => f.type === 'connection');
  // Right at the limit: read, and refused by the message rules with the socket left open.
  const atLimit = JSON.stringify({ type: 'message', payload: { text: '' } }).length;
  c.send(JSON.stringify({ type: 'message', payload: { text: 'x'.repeat(limit - atLimit) } }));
  expect((await c.next((f) => f.type === 'error', 3_000, c.frames.length)).payload.code).toBe('payload_too_large');
  const from = c.frames.length;
  c.send({ type: 'message', payload: { text: 'x'.repeat(limit) } });
  const err = await c.next((f) => f.type === 'error', 3_000, from);
  expect(err.payload).toEqual({ code: 'frame_too_large', message: expect.stringContaining(String(limit)) });
  expect(await c.closed).toBe(1009);
});

test('refusals of the HTTP route come as error frames: rate limit, same turn for a repeated idempotency key', async () => {
  const { base, gateway } = await setup({ limiters: memoryRateLimiters({ userPerMinute: 2, tenantPerMinute: 100 }) });
  const c = await connect(`${base}/ws?sessionId=s1`);
  await c.next((f) => f.type === 'connection');
  c.send({ type: 'message', payload: { text: 'one', idempotencyKey: 'k-1' } });
  const first = await c.next((f) => f.type === 'status' && f.payload.message === 'Working on it');
  await c.next(isComplete(first.payload.turnId));
  const from = c.frames.length;
  c.send({ type: 'message', payload: { text: 'one', idempotencyKey: 'k-1' } });
  const again = await c.next((f) => f.type === 'status' && f.payload.message === 'Working on it', 3_000, from);
  expect(again.payload).toEqual(expect.objectContaining({ turnId: first.payload.turnId, created: false }));
  // The client asked again: it gets that turn's answer again.
  await c.next((f) => f.type === 'text', 3_000, from);
  expect(gateway.turns.size).toBe(1);
  c.send({ type: 'message', payload: { text: 'three' } });
  const limited = await c.next((f) => f.type === 'error', 3_000, from);
  expect(limited.payload.code).toBe('rate_limited');
  expect(c.ws.readyState).toBe(WebSocket.OPEN);
});

test('cancel: only the owner, and the turn ends cancelled', async () => {
  const { base, gateway } = await setup();
  const c = await connect(`${base}/ws?sessionId=s1`);
  c.send({ type: 'message', payload: { text: 'hold on' } });
  const { turnId } = (await c.next((f) => f.type === 'status' && f.payload.message === 'Working on it')).payload;
  const m = await connect(`${base}/ws?sessionId=s1`, MALLORY);
  await m.next((f) => f.type === 'connection');
  m.send({ type: 'cancel', payload: { turnId } });
  expect((await m.next((f) => f.type === 'error')).payload.code).toBe('not_found');
  expect(gateway.cancelled).toEqual([]);

  c.send({ type: 'cancel', payload: { turnId } });
  await c.next((f) => f.type === 'status' && f.payload.status === 'cancelling');
  const end = await c.next(isComplete(turnId));
  expect(end.payload.status).toBe('cancelled');
  expect(gateway.cancelled).toEqual([turnId]);
  c.send({ type: 'cancel', payload: { turnId } });
  expect((await c.next((f) => f.type === 'error')).payload.code).toBe('already_finished');
});

test('approve: a decision over the socket follows the HTTP route\'s rules and is answered by an approval frame', async () => {
  const { base } = await setup();
  const c = await connect(`${base}/ws?sessionId=s1`);
  c.send({ type: 'message', payload: { text: 'hold on' } });
  const { turnId } = (await c.next((f) => f.type === 'status' && f.payload.message === 'Working on it')).payload;
  const refusals: Array<[unknown, string]> = [
    [{ type: 'approve', payload: { turnId } }, 'invalid_message'],
    [{ type: 'approve', payload: { turnId, toolCallId: 'call-ok', approve: 'yes' } }, 'invalid_message'],
    [{ type: 'approve', payload: { turnId, toolCallId: 'call-other', approve: true } }, 'not_found'],
    [{ type: 'approve', payload: { turnId: 'turn-s1-unknown', toolCallId: 'call-ok', approve: true } }, 'not_found'],
  ];
  for (const [frame, code] of refusals) {
    const from = c.frames.length;
    c.send(frame);
    expect({ frame, code: (await c.next((f) => f.type === 'error', 3_000, from)).payload.code }).toEqual({ frame, code });
  }
  const from = c.frames.length;
  c.send({ type: 'approve', payload: { turnId, toolCallId: 'call-ok', approve: false } });
  expect((await c.next((f) => f.type === 'approval', 3_000, from)).payload).toEqual({ turnId, toolCallId: 'call-ok', decision: 'rejected' });
});

test('a silent connection is terminated; one that answers pings stays', async () => {
  const { base, app } = await setup({ ws: { pingIntervalMs: 40, staleAfterMs: 200 } });
  const silent = await connect(`${base}/ws?sessionId=quiet`, ALICE, { autoPong: false });
  const alive = await connect(`${base}/ws?sessionId=lively`);
  await silent.next((f) => f.type === 'connection');
  await alive.next((f) => f.type === 'connection');
  expect(app.activeConnections()).toHaveLength(2);
  const code = await within(silent.closed, 3_000, 'still open');
  expect(code).toBe(1006); // terminated, no close handshake
  await sleep(300);
  expect(alive.ws.readyState).toBe(WebSocket.OPEN);
  expect(app.activeConnections().map((m) => m.sessionId)).toEqual(['lively']);
});

test('reconnecting: "reconnected", a running turn streams again from its first event or after ?lastEventId', async () => {
  const { base, gateway } = await setup();
  const first = await connect(`${base}/ws?sessionId=r1`);
  first.send({ type: 'message', payload: { text: 'quick' } });
  const quick = (await first.next((f) => f.type === 'status' && f.payload.message === 'Working on it')).payload.turnId;
  await first.next(isComplete(quick));
  first.send({ type: 'message', payload: { text: 'hold this' } });
  const held = (await first.next((f) => f.type === 'status' && f.payload.message === 'Working on it' && f.payload.turnId !== quick)).payload.turnId;
  await first.next((f) => f.type === 'event' && f.payload.turnId === held);
  first.ws.close();
  await first.closed;

  const again = await connect(`${base}/ws?sessionId=r1`);
  const hello = await again.next((f) => f.type === 'connection');
  expect(hello.payload.state).toBe('reconnected');
  expect(again.frames.some((f) => f.type === 'system' && f.payload.code === 'welcome')).toBe(false);
  // The finished turn is not replayed; the running one is, from event 1.
  await again.next((f) => f.type === 'event' && f.payload.turnId === held && f.payload.id === 1);
  expect(again.frames.some((f) => f.payload?.turnId === quick)).toBe(false);

  const resumed = await connect(`${base}/ws?sessionId=r1&lastEventId=${held}:1`);
  await resumed.next((f) => f.type === 'connection');
  gateway.release(held);
  await again.next(isComplete(held));
  await resumed.next(isComplete(held));
  const ids = (c: Client) => c.frames.filter((f) => f.type === 'event' && f.payload.turnId === held).map((f) => f.payload.id);
  expect(ids(again)).toEqual([1, 2, 3, 4, 5]);
  expect(ids(resumed)).toEqual([2, 3, 4, 5]);

  // A turn that ended while the client was away: the rest of it, after the id it names.
  const late = await connect(`${base}/ws?sessionId=r1&lastEventId=${quick}:3`);
  await late.next((f) => f.type === 'text' && f.payload.turnId === quick);
  expect(late.frames.filter((f) => f.type === 'event').map((f) => f.payload.id)).toEqual([4, 5]);
});

test('live text from the LiveTextHub reaches the socket, with a reset when the model call is retried', async () => {
  const hub: LiveTextHub = createLiveTextHub();
  const { base, gateway } = await setup({ live: { hub } });
  try {
    const c = await connect(`${base}/ws?sessionId=live`);
    c.send({ type: 'message', payload: { text: 'hold the line' } });
    const { turnId } = (await c.next((f) => f.type === 'status' && f.payload.message === 'Working on it')).payload;
    hub.ingest([
      { turnId, step: 1, attempt: 1, kind: 'delta', offset: 0, text: 'Hel' },
      { turnId, step: 1, attempt: 1, kind: 'delta', offset: 3, text: 'lo' },
    ]);
    await c.next((f) => f.type === 'text_delta' && f.payload.offset === 3);
    // A second socket joining mid-step gets the text so far in one piece.
    const late = await connect(`${base}/ws?sessionId=live`);
    const snap = await late.next((f) => f.type === 'text_delta');
    expect(snap.payload).toEqual({ turnId, step: 1, attempt: 1, offset: 0, content: 'Hello' });

    hub.ingest([{ turnId, step: 1, attempt: 2, kind: 'delta', offset: 0, text: 'Hi' }]);
    await c.next((f) => f.type === 'text_delta' && f.payload.attempt === 2);
    await late.next((f) => f.type === 'text_delta' && f.payload.attempt === 2);
    const live = c.frames.filter((f) => f.type === 'text_delta' || f.type === 'text_reset').map((f) => [f.type, f.payload.attempt, f.payload.offset ?? null, f.payload.content ?? null]);
    expect(live).toEqual([
      ['text_delta', 1, 0, 'Hel'],
      ['text_delta', 1, 3, 'lo'],
      ['text_reset', 2, null, null],
      ['text_delta', 2, 0, 'Hi'],
    ]);
    expect(c.frames.find((f) => f.type === 'text_reset')?.payload).toEqual(expect.objectContaining({ turnId, step: 1, attempt: 2 }));
    gateway.release(turnId);
    await c.next(isComplete(turnId));
  } finally {
    hub.close();
  }
});

test('closing the app closes the sockets', async () => {
  const { base, app } = await setup();
  const c = await connect(`${base}/ws?sessionId=s1`);
  await c.next((f) => f.type === 'connection');
  c.send({ type: 'message', payload: { text: 'hold it' } });
  await c.next((f) => f.type === 'event');
  await app.close();
  apps = apps.filter((a) => a !== app);
  expect(await within(c.closed, 2_000, 'open')).not.toBe('open');
  expect(app.activeConnections()).toEqual([]);
});

test('without a session id the server picks one', async () => {
  const { base } = await setup();
  const c = await connect(`${base}/ws`);
  const hello = await c.next((f) => f.type === 'connection');
  expect(hello.payload.sessionId).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
  c.send({ type: 'message', payload: { text: 'hi' } });
  const { turnId } = (await c.next((f) => f.type === 'status' && f.payload.message === 'Working on it')).payload;
  expect(turnId.startsWith(`turn-${hello.payload.sessionId}-`)).toBe(true);
});
