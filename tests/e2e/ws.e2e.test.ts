import type WebSocket from 'ws';
import { bearer, getJson } from '../helpers/http';
import { startSystem, type TestSystem } from '../helpers/system';
import { accepted, connectWs, turnEnded, type WsClient } from '../helpers/ws';

/**
 * GET /ws on real parts: the socket's messages become turns on the Temporal dev server, run by the
 * worker process against the demo model and the real MCP servers, and come back over the socket.
 */
let sys: TestSystem;
let token: string;
let clients: WebSocket[] = [];

beforeAll(async () => {
  sys = await startSystem();
  token = await sys.token('admin');
}, 120_000);
afterEach(() => {
  for (const c of clients) c.terminate();
  clients = [];
});
afterAll(async () => {
  await sys?.stop();
});

const wsUrl = (query: string) => `${sys.apiUrl.replace(/^http/, 'ws')}/ws?${query}`;
const TURN_MS = 45_000;

const eventsOf = (c: WsClient, turnId: string) =>
  c.frames.filter((f) => f.type === 'event' && f.payload.turnId === turnId).map((f) => `${f.payload.id}:${f.payload.event}`);

test('a message over the socket runs a turn; a second socket on the session sees the same events', async () => {
  const a = await connectWs(wsUrl('sessionId=ws-e2e'), bearer(token), {}, clients);
  // The browser way: the token in the query string.
  const b = await connectWs(wsUrl(`sessionId=ws-e2e&access_token=${encodeURIComponent(token)}`), {}, {}, clients);
  for (const c of [a, b]) {
    expect((await c.next((f) => f.type === 'connection', 10_000)).payload).toEqual(expect.objectContaining({ sessionId: 'ws-e2e' }));
  }
  // No message yet, so no session yet: both are welcomed to a new one.
  for (const c of [a, b]) {
    expect(c.frames[0]?.payload.state).toBe('connected');
    expect(c.frames[1]).toEqual({ type: 'system', payload: { code: 'welcome', message: expect.any(String) } });
  }

  a.send({ type: 'message', payload: { text: 'echo hi over ws' } });
  const ack = await a.next(accepted, 15_000);
  const { turnId } = ack.payload;
  expect(turnId).toMatch(/^turn-ws-e2e-/);

  const end = await a.next(turnEnded(turnId), TURN_MS);
  expect(end.payload.status).toBe('completed');
  const text = await a.next((f) => f.type === 'text' && f.payload.turnId === turnId);
  expect(text.payload.content).toContain('hi over ws');
  expect(text.payload.final).toBe(true);
  // The seed's tool status messages around the real MCP call.
  await a.next((f) => f.type === 'status' && f.payload.state === 'processing' && f.payload.tool === 'everything__echo');
  const toolDone = await a.next((f) => f.type === 'status' && f.payload.state === 'complete' && f.payload.tool === 'everything__echo');
  expect(toolDone.payload.data.isError).toBe(false);

  // Every durable event, dense from 1, on both sockets alike.
  const events = eventsOf(a, turnId);
  expect(events.map((e) => Number(e.split(':')[0]))).toEqual(events.map((_, i) => i + 1));
  expect(events).toEqual(expect.arrayContaining([expect.stringMatching(/:tool_call_started$/), expect.stringMatching(/:text$/), expect.stringMatching(/:done$/)]));
  await b.next(turnEnded(turnId), TURN_MS);
  expect(eventsOf(b, turnId)).toEqual(events);
  expect(b.frames.find((f) => f.type === 'text' && f.payload.turnId === turnId)?.payload.content).toBe(text.payload.content);
  // ...and the same as the turn's own record.
  const turn = await getJson(`${sys.apiUrl}/v1/turns/${turnId}`, bearer(token));
  expect(turn.body.lastEventId).toBe(events.length);
  expect(turn.body.text).toBe(text.payload.content);
}, 90_000);

test('reconnecting to the session after a turn continues the conversation', async () => {
  const first = await connectWs(wsUrl('sessionId=ws-e2e-again'), bearer(token), {}, clients);
  await first.next((f) => f.type === 'connection', 10_000);
  first.send({ type: 'message', payload: { text: 'echo first round' } });
  const one = (await first.next(accepted, 15_000)).payload.turnId;
  await first.next(turnEnded(one), TURN_MS);
  first.ws.close();
  await first.closed;

  const again = await connectWs(wsUrl('sessionId=ws-e2e-again'), bearer(token), {}, clients);
  const hello = await again.next((f) => f.type === 'connection', 10_000);
  expect(hello.payload.state).toBe('reconnected');
  expect(again.frames.some((f) => f.type === 'system' && f.payload.code === 'welcome')).toBe(false);
  again.send({ type: 'message', payload: { text: 'echo second round' } });
  const two = (await again.next(accepted, 15_000)).payload.turnId;
  expect((await again.next(turnEnded(two), TURN_MS)).payload.status).toBe('completed');
  expect((await again.next((f) => f.type === 'text' && f.payload.turnId === two)).payload.content).toContain('second round');

  const session = await getJson(`${sys.apiUrl}/v1/sessions/ws-e2e-again/messages`, bearer(token));
  expect(session.status).toBe(200);
  const lines = (session.body.messages as Array<{ role: string; content: string; status: string }>).map((m) => `${m.role}: ${m.content}`);
  expect(lines).toHaveLength(4);
  expect(lines[0]).toBe('user: echo first round');
  expect(lines[1]).toMatch(/^assistant: .*first round/);
  expect(lines[2]).toBe('user: echo second round');
  expect(lines[3]).toMatch(/^assistant: .*second round/);
}, 90_000);
