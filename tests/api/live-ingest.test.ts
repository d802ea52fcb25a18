import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyInstance } from 'fastify';
import { createLiveTextHub, type LiveTextHub } from '../../src/live/hub';
import { registerLiveIngest } from '../../src/api/routes/live-ingest';
import type { LiveChunk } from '../../src/live/chunk';
import { createLivePublisher, createNoopPublisher, type LivePublisher } from '../../src/live/publisher';

const SECRET = 'live-secret-0123456789abcdef';
const T = 'session-1:turn-1';

let app: FastifyInstance;
let hub: LiveTextHub;
let url: string;
/** Status codes of the requests the ingest route answered, in order. */
let answered: number[] = [];
let publishers: LivePublisher[] = [];

beforeAll(async () => {
  hub = createLiveTextHub();
  app = Fastify({ logger: false });
  app.addHook('onResponse', async (_request, reply) => {
    answered.push(reply.statusCode);
  });
  registerLiveIngest(app, { hub, secret: SECRET });
  await app.listen({ host: '127.0.0.1', port: 0 });
  url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/internal/live`;
});

afterAll(async () => {
  hub.close();
  await app.close();
});

beforeEach(() => {
  answered = [];
});

afterEach(async () => {
  for (const p of publishers) await p.close();
  publishers = [];
});

/** A logger that keeps what it is given, serialized as a log line would be. */
function captureLogger() {
  const lines: string[] = [];
  return { lines, warn: (obj: Record<string, unknown>, msg?: string) => lines.push(JSON.stringify({ ...obj, msg })) };
}

function publisher(overrides: Partial<Parameters<typeof createLivePublisher>[0]> = {}): LivePublisher {
  const p = createLivePublisher({ url, secret: SECRET, ...overrides });
  publishers.push(p);
  return p;
}

/** Tokens as a model streams them: short pieces, a few per event-loop turn. */
function tokens(n: number): string[] {
  return Array.from({ length: n }, (_, i) => (i % 7 === 0 ? `\nline ${i}: ` : `tok${i} `));
}

test('many quick deltas arrive whole, in order, in far fewer requests than deltas', async () => {
  const seen: LiveChunk[] = [];
  const unsubscribe = hub.subscribe(T, (c) => seen.push(c));
  const p = publisher();
  const pieces = tokens(2_000);
  for (let i = 0; i < pieces.length; i++) {
    p.delta(T, 1, 1, pieces[i] as string);
    if (i % 20 === 19) await new Promise((r) => setImmediate(r));
  }
  p.end(T, 1, 1);
  await p.flush();
  unsubscribe();

  const text = pieces.join('');
  expect(hub.snapshot(T)).toEqual({ step: 1, attempt: 1, text, ended: true, gap: false, truncated: false });
  // Listeners got normalized chunks adding up to the same text.
  let rebuilt = '';
  for (const c of seen.filter((x) => x.kind === 'delta')) {
    expect(c.offset).toBe(rebuilt.length);
    rebuilt += c.text;
  }
  expect(rebuilt).toBe(text);
  expect(seen.at(-1)).toMatchObject({ kind: 'end', offset: text.length });

  expect(answered.every((s) => s === 204)).toBe(true);
  expect(answered.length).toBeGreaterThan(1);
  expect(answered.length).toBeLessThan(pieces.length / 10);
  expect(p.stats()).toMatchObject({ queued: 0, dropped: 0, failedRequests: 0, requests: answered.length });
});

test('the first delta leaves at once, not after a batching delay', async () => {
  const p = publisher();
  const started = Date.now();
  p.delta('turn-fast', 1, 1, 'Hi');
  while (hub.snapshot('turn-fast')?.text !== 'Hi' && Date.now() - started < 2_000) await new Promise((r) => setTimeout(r, 2));
  expect(hub.snapshot('turn-fast')?.text).toBe('Hi');
  expect(Date.now() - started).toBeLessThan(500);
  expect(answered).toEqual([204]);
});

/** Resolves once `done()` holds; fails after a generous deadline (never a fixed sleep). */
async function until(done: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

/** One turn of the event loop: a request the publisher meant to send now has been started by then. */
const tick = () => new Promise((r) => setImmediate(r));

test('text and a turn\'s events on its way wait for the request interval; a step\'s end or the turn\'s end takes them along at once, whole and in order', async () => {
  const turn = 'session-1:turn-interval';
  const seen: LiveChunk[] = [];
  const unsubscribe = hub.subscribe(turn, (c) => seen.push(c));
  // An interval no test outlives: whatever leaves early, leaves because it must not wait.
  const p = publisher({ minRequestIntervalMs: 600_000 });

  p.delta(turn, 1, 1, 'Hello');
  await until(() => hub.snapshot(turn)?.text === 'Hello', 'the first delta');
  await until(() => p.stats().sent === 1, 'the first answer');
  expect(p.stats()).toMatchObject({ requests: 1, queued: 0 });

  // A model streaming on: every piece waits for the interval, coalesced into one chunk.
  for (const piece of [', wor', 'ld', '!']) {
    p.delta(turn, 1, 1, piece);
    await tick();
  }
  expect(p.stats()).toMatchObject({ requests: 1, queued: 1 });
  expect(hub.snapshot(turn)?.text).toBe('Hello');

  // The step's end is not text: it goes at once, with the text that waited ahead of it.
  p.end(turn, 1, 1);
  await until(() => hub.snapshot(turn)?.ended === true, 'the end of step 1');
  expect(hub.snapshot(turn)?.text).toBe('Hello, world!');
  await p.flush();
  expect(p.stats()).toMatchObject({ requests: 2, queued: 0, dropped: 0 });

  // Step 2's text waits again, and so does a durable event a turn makes on its way (decision 0048),
  // until an event that ends the turn comes to take them along.
  p.delta(turn, 2, 1, 'Done');
  await tick();
  expect(p.stats()).toMatchObject({ requests: 2, queued: 1 });
  p.event(turn, { id: 1, type: 'status', at: new Date().toISOString(), data: { status: 'running', phase: 'calling_llm', step: 2 } }, { sessionId: 'session-1' });
  await tick();
  expect(p.stats()).toMatchObject({ requests: 2, queued: 2 });
  expect(seen.some((c) => c.kind === 'event')).toBe(false);
  p.event(turn, { id: 2, type: 'done', at: new Date().toISOString(), data: {} }, { sessionId: 'session-1' });
  await until(() => seen.filter((c) => c.kind === 'event').length === 2, 'the events');
  expect(hub.snapshot(turn)).toMatchObject({ step: 2, text: 'Done' });
  // The hub has it before the publisher has the answer: wait for that (nothing is left to send).
  await p.flush();
  expect(p.stats()).toMatchObject({ requests: 3, queued: 0, sent: 6, dropped: 0 });
  expect(answered).toEqual([204, 204, 204]);
  expect(seen.map((c) => c.kind)).toEqual(['delta', 'delta', 'end', 'delta', 'event', 'event']);
  unsubscribe();
});

test('a memory handed on reaches the hub beside the turn\'s events, for the API alone; one too large or not a plain memory is not sent', async () => {
  const turn = 'session-1:turn-memory';
  const p = publisher();
  const memory = { messages: [{ role: 'user' as const, content: 'hi' }, { role: 'assistant' as const, content: 'hello' }] };
  p.memory(turn, { messages: [{ role: 'user', content: 'x'.repeat(70 * 1024) }] });
  p.memory(turn, { messages: [{ role: 'system', content: 'not a memory' }] });
  p.event(turn, { id: 1, type: 'status', at: new Date().toISOString(), data: {} }, { sessionId: 'session-1' });
  p.memory(turn, memory);
  p.event(turn, { id: 2, type: 'done', at: new Date().toISOString(), data: {} }, { sessionId: 'session-1' });
  await p.flush();
  expect(hub.events.endOf(turn)).toBe('completed');
  expect(hub.events.memoryOf(turn)).toEqual(memory);
  expect(p.stats()).toMatchObject({ sent: 3, dropped: 0 });
  expect(answered.every((code) => code === 204)).toBe(true);
});

test('flush sends waiting text now, and pushes share one kept-alive connection', async () => {
  let connections = 0;
  const count = () => connections++;
  app.server.on('connection', count);
  try {
    const p = publisher({ minRequestIntervalMs: 600_000 });
    for (let i = 0; i < 10; i++) {
      p.delta('turn-flush', 1, 1, `piece ${i} `);
      await p.flush();
    }
    expect(hub.snapshot('turn-flush')?.text).toBe(Array.from({ length: 10 }, (_, i) => `piece ${i} `).join(''));
    expect(p.stats()).toMatchObject({ requests: 10, sent: 10, queued: 0 });
    expect(connections).toBe(1);
  } finally {
    app.server.off('connection', count);
  }
});

test('a retried attempt sends a reset first; subscribers drop the partial text', async () => {
  const turn = 'turn-retry';
  const seen: LiveChunk[] = [];
  hub.subscribe(turn, (c) => seen.push(c));
  const p = publisher();
  p.delta(turn, 1, 1, 'partial answer that will be');
  await p.flush();
  // The attempt failed (no end); Temporal retried it.
  p.delta(turn, 1, 2, 'the full ');
  p.delta(turn, 1, 2, 'answer');
  p.end(turn, 1, 2);
  await p.flush();
  expect(hub.snapshot(turn)).toMatchObject({ step: 1, attempt: 2, text: 'the full answer', ended: true, gap: false });
  expect(seen.map((c) => [c.kind, c.attempt, c.text])).toEqual([
    ['delta', 1, 'partial answer that will be'],
    ['reset', 2, ''],
    ['delta', 2, 'the full answer'],
    ['end', 2, ''],
  ]);
});

test('concurrent turns interleave without mixing, and large deltas are split to fit the wire limits', async () => {
  const p = publisher();
  const big = 'x'.repeat(150_000) + 'END';
  const parts = { a: [] as string[], b: [] as string[] };
  for (let i = 0; i < 300; i++) {
    const a = `a${i} `;
    const b = `b${i} `;
    parts.a.push(a);
    parts.b.push(b);
    p.delta('turn-a', 2, 1, a);
    p.delta('turn-b', 1, 1, b);
    if (i === 150) {
      p.delta('turn-a', 2, 1, big);
      parts.a.push(big);
    }
    if (i % 30 === 0) await new Promise((r) => setImmediate(r));
  }
  p.end('turn-a', 2, 1);
  p.end('turn-b', 1, 1);
  await p.flush();
  expect(hub.snapshot('turn-a')).toMatchObject({ step: 2, text: parts.a.join(''), ended: true, gap: false });
  expect(hub.snapshot('turn-b')).toMatchObject({ step: 1, text: parts.b.join(''), ended: true, gap: false });
  expect(answered.every((s) => s === 204)).toBe(true);
  expect(answered.length).toBeLessThan(60);
});

test('a full buffer drops deltas (counted) without throwing; offsets still advance, so the gap shows', async () => {
  const p = publisher({ maxBufferedChunks: 2 });
  // One synchronous burst, several attempts: nothing coalesces, only two chunks fit.
  for (const id of ['full-1', 'full-2', 'full-3', 'full-4']) p.delta(id, 1, 1, 'hello');
  await p.flush();
  expect(p.stats()).toMatchObject({ sent: 2, dropped: 2, queued: 0 });
  expect(hub.snapshot('full-1')?.text).toBe('hello');
  expect(hub.snapshot('full-3')).toBeUndefined();

  const q = publisher({ maxBufferedChunks: 1 });
  q.delta('full-5', 1, 1, 'one ');
  q.delta('full-6', 1, 1, 'lost');
  q.delta('full-5', 1, 1, 'two'); // coalesces with 'one '
  await q.flush();
  q.delta('full-6', 1, 1, ' tail');
  q.end('full-6', 1, 1);
  await q.flush();
  expect(hub.snapshot('full-5')?.text).toBe('one two');
  expect(hub.snapshot('full-6')).toMatchObject({ text: '', gap: true, ended: true });
});

test('a wrong secret gets 401; the publisher does not throw, drops, warns once, and never logs the secret', async () => {
  for (const authorization of [undefined, 'Bearer nope', `Bearer ${SECRET}x`, SECRET]) {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) },
      body: JSON.stringify({ chunks: [] }),
    });
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({ error: { code: 'unauthorized', message: expect.any(String) } });
  }

  const logger = captureLogger();
  const wrong = 'wrong-secret-do-not-log';
  const p = publisher({ secret: wrong, logger, retryDelayMs: 0 });
  expect(() => {
    for (let i = 0; i < 50; i++) p.delta('turn-denied', 1, 1, `t${i}`);
    p.end('turn-denied', 1, 1);
  }).not.toThrow();
  await p.flush();
  for (let i = 0; i < 50; i++) p.delta('turn-denied', 2, 1, `more${i}`);
  await p.flush();
  expect(hub.snapshot('turn-denied')).toBeUndefined();
  const stats = p.stats();
  expect(stats.sent).toBe(0);
  expect(stats.dropped).toBeGreaterThan(0);
  expect(stats.requests).toBe(2);
  expect(stats.failedRequests).toBe(2);
  expect(stats.dropped).toBe(3);
  expect(logger.lines).toHaveLength(1);
  expect(logger.lines[0]).toContain('HTTP 401');
  expect(logger.lines.join('\n')).not.toContain(wrong);
});

test('an unreachable API: the publisher does not throw, drops and counts, warns once without the secret', async () => {
  // A port that was just free: connections are refused.
  const probe = http.createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  const port = (probe.address() as AddressInfo).port;
  await new Promise<void>((r) => probe.close(() => r()));

  const logger = captureLogger();
  const p = publisher({ url: `http://127.0.0.1:${port}/internal/live`, logger, retryDelayMs: 50 });
  expect(() => {
    for (let i = 0; i < 100; i++) p.delta('turn-down', 1, 2, `t${i} `);
    p.end('turn-down', 1, 2);
  }).not.toThrow();
  await p.flush();
  await new Promise((r) => setTimeout(r, 120));
  p.delta('turn-down', 2, 1, 'later');
  await p.flush();
  const stats = p.stats();
  expect(stats.sent).toBe(0);
  expect(stats.queued).toBe(0);
  expect(stats.requests).toBeGreaterThanOrEqual(2);
  // reset + deltas (coalesced) + end + the later delta: all dropped, none lost track of.
  expect(stats.dropped).toBeGreaterThanOrEqual(4);
  expect(logger.lines).toHaveLength(1);
  expect(logger.lines[0]).toMatch(/ECONNREFUSED|fetch failed/);
  expect(logger.lines.join('\n')).not.toContain(SECRET);
  await expect(p.close()).resolves.toBeUndefined();
  // Closed: further calls are ignored, still without throwing.
  expect(() => p.delta('turn-down', 3, 1, 'x')).not.toThrow();
});

test('invalid batches get 400 with the API error shape; nothing is ingested', async () => {
  const post = async (body: string) => {
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${SECRET}` }, body });
    return { status: res.status, body: (await res.json()) as { error: { code: string; message: string } } };
  };
  const bad = await post(JSON.stringify({ chunks: [{ turnId: 'turn-bad', step: 0, attempt: 1, kind: 'delta', offset: 0, text: 'x' }] }));
  expect(bad.status).toBe(400);
  expect(bad.body.error.code).toBe('invalid_request');
  expect(bad.body.error.message).toContain('chunks.0.step');
  expect((await post('{not json')).body.error.code).toBe('invalid_json');
  expect((await post(JSON.stringify({ chunks: [{ turnId: 'x'.repeat(201), step: 1, attempt: 1, kind: 'delta', offset: 0, text: 'x' }] }))).status).toBe(400);
  expect(hub.snapshot('turn-bad')).toBeUndefined();
});

test('registration refuses an empty secret and paths under the user-token prefixes', () => {
  const other = Fastify({ logger: false });
  expect(() => registerLiveIngest(other, { hub, secret: '' })).toThrow(/secret/);
  expect(() => registerLiveIngest(other, { hub, secret: SECRET, path: '/v1/live' })).toThrow(/outside \/v1/);
  expect(() => registerLiveIngest(other, { hub, secret: SECRET, path: '/ws' })).toThrow(/outside \/v1/);
  expect(() => createLivePublisher({ url, secret: '' })).toThrow(/secret/);
  void other.close();
});

test('the noop publisher has the same interface and does nothing', async () => {
  const p = createNoopPublisher();
  p.delta(T, 1, 1, 'x');
  p.end(T, 1, 1);
  await p.flush();
  await p.close();
  expect(p.stats()).toEqual({ queued: 0, sent: 0, dropped: 0, requests: 0, failedRequests: 0 });
});

/** An address nothing listens on (a replica that died): a port taken and released. */
async function deadUrl(): Promise<string> {
  const server = http.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  await new Promise((r) => server.close(r));
  return `http://127.0.0.1:${port}/internal/live`;
}

test('several addresses: a dead one costs one failed connect per batch until another answers, and then none; nothing is dropped', async () => {
  const dead = await deadUrl();
  const log = captureLogger();
  const p = publisher({ url: [dead, url], logger: log });
  p.delta('turn-failover', 1, 1, 'first ');
  await p.flush();
  expect(hub.snapshot('turn-failover')?.text).toBe('first ');
  p.delta('turn-failover', 1, 1, 'second');
  p.end('turn-failover', 1, 1);
  await p.flush();
  expect(hub.snapshot('turn-failover')).toMatchObject({ text: 'first second', ended: true, gap: false });
  // Every batch reached the live address; the dead one was tried once, for the first batch only.
  expect(p.stats()).toMatchObject({ dropped: 0, failedRequests: 0 });
  expect(answered.length).toBe(p.stats().requests);
  expect(log.lines).toEqual([]);
});

test('several addresses, none answering: the batch is dropped once, the warning names each address and no secret', async () => {
  const log = captureLogger();
  const p = publisher({ url: [await deadUrl(), await deadUrl()], logger: log, retryDelayMs: 0 });
  p.delta('turn-nowhere', 1, 1, 'lost');
  await p.flush();
  expect(p.stats()).toMatchObject({ dropped: 1, failedRequests: 1 });
  expect(log.lines).toHaveLength(1);
  expect(log.lines[0]).toMatch(/127\.0\.0\.1:\d+\/internal\/live: .*ECONNREFUSED.*; http:\/\/127\.0\.0\.1:\d+\/internal\/live: /);
  expect(log.lines[0]).not.toContain(SECRET);
});

test('a 4xx is the batch\'s or the secret\'s fault, not the address\'s: no other address is tried', async () => {
  const other = createLiveTextHub();
  const second = Fastify({ logger: false });
  registerLiveIngest(second, { hub: other, secret: SECRET });
  await second.listen({ host: '127.0.0.1', port: 0 });
  try {
    const secondUrl = `http://127.0.0.1:${(second.server.address() as AddressInfo).port}/internal/live`;
    const p = publisher({ url: [url, secondUrl], secret: 'a-wrong-secret-0123456789', retryDelayMs: 0 });
    p.delta('turn-4xx', 1, 1, 'refused');
    await p.flush();
    expect(answered).toEqual([401]);
    expect(other.snapshot('turn-4xx')).toBeUndefined();
    expect(p.stats()).toMatchObject({ dropped: 1, failedRequests: 1 });
  } finally {
    other.close();
    await second.close();
  }
});
