import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { ManagedProcess } from '../../src/cli/processes';
import type { DemoRules } from '../../src/demo-model/rules';
import { bearer, getJson, postMessage, readSse, waitFor, type SseEvent } from '../helpers/http';
import { startPostgres, type TestPostgres } from '../helpers/postgres';
import { SCHOOL_HOST, startSchoolSystem, type SchoolSystem } from '../helpers/school';
import { defaultHostConfig, EXAMPLE_RULES, type SystemOptions } from '../helpers/system';
import { connectWs } from '../helpers/ws';
import { startApiProcess } from '../helpers/api-process';
import { sseEvents } from '../../src/shared/sse';
import { Pool } from 'pg';
import { verifyAuditTable } from '../../src/audit/pg-store';

/**
 * More than one API replica on real processes: two API processes sharing PostgreSQL (live text over
 * LISTEN/NOTIFY, rate limits, worker reports), three workers pushing live text to the first replica
 * only and auditing into PostgreSQL, one Temporal, the school servers. A client posts through one
 * replica and streams from the other; a replica dies under a stream; a worker dies under a payment.
 * Run on the dev server (scale-out.e2e.test.ts) and on the full Temporal server on PostgreSQL
 * (scale-out-cluster.e2e.test.ts).
 */
const LONG = Array.from({ length: 200 }, (_, i) => `word${i}`).join(' ');
const SCHOOL_RULES = JSON.parse(readFileSync(EXAMPLE_RULES, 'utf8')) as DemoRules;
const RULES: DemoRules = { ...SCHOOL_RULES, scripts: [{ name: 'long', match: '^long', steps: [{ text: LONG }] }, ...(SCHOOL_RULES.scripts ?? [])] };
const USER_PER_MINUTE = 6;

export function scaleOutSuite(temporal?: SystemOptions['temporal']): void {
  let sys: SchoolSystem;
  let pg: TestPostgres;
  const apis: Array<{ proc: ManagedProcess; url: string }> = [];
  let workers: ManagedProcess[] = [];
  let apiEnv: NodeJS.ProcessEnv = {};

  beforeAll(async () => {
    sys = await startSchoolSystem({ rules: RULES, toolDelays: 'process_payment=2500', ...(temporal ? { temporal } : {}) });
    // The in-process API of the test system is not one of the replicas: its worker goes.
    await sys.worker.stop();
    pg = await startPostgres();
    sys.onStop(() => pg.stop());
    const hostConfig = path.join(sys.dir, 'host.json');
    writeFileSync(hostConfig, JSON.stringify(defaultHostConfig(SCHOOL_HOST)));
    const liveSecret = randomBytes(16).toString('hex');
    apiEnv = { POSTGRES_URL: pg.url, LIVE_SECRET: liveSecret, HOST_CONFIG: hostConfig, RATE_LIMIT_USER_PER_MIN: String(USER_PER_MINUTE) };
    for (let i = 0; i < 2; i++) apis.push(await startApiProcess(sys, apiEnv));
    // Workers are told to push to the first replica only, as a load balancer may route them; sharing
    // the replicas' PostgreSQL, they publish on its bus instead (decision 0020).
    for (let i = 0; i < 3; i++) {
      // Their audit chain is one PostgreSQL table (the file's lock holds on one host only).
      workers.push(await sys.startWorker({ LIVE_PUSH_URL: `${apis[0]?.url ?? ''}/internal/live`, LIVE_SECRET: liveSecret, POSTGRES_URL: pg.url, AUDIT_STORE: 'postgres' }));
    }
    // One turn first, read through both replicas, so the tests do not pay for cold processes: workers
    // spawning their MCP servers and loading the workflow bundle, and a fresh replica's first read of a
    // running turn (measured here: ~2 s, after which its stream starts at the end of the turn).
    const headers = bearer(await sys.token('admin'));
    const warm = await postMessage(apis[0]?.url ?? '', 'warm-up', 'long', headers);
    const done = await readSse(`${apis[0]?.url ?? ''}${warm.body.eventsUrl as string}`, { headers, timeoutMs: 60_000 });
    if (done.at(-1)?.event !== 'done') throw new Error(`warm-up turn did not complete: ${JSON.stringify(done.at(-1))}`);
    const seen = await readSse(`${apis[1]?.url ?? ''}${warm.body.eventsUrl as string}`, { headers, timeoutMs: 60_000 });
    if (seen.at(-1)?.event !== 'done') throw new Error('the second replica cannot read the warm-up turn');
  }, 180_000);
  afterAll(async () => {
    await sys?.stop();
  }, 60_000);

  /** The live text rebuilt from text_delta events (offsets checked). */
  function liveText(events: SseEvent[]): string {
    let text = '';
    for (const e of events) {
      if (e.event !== 'text_delta') continue;
      const offset = e.data.offset as number;
      if (offset > text.length) throw new Error(`gap: offset ${offset} after ${text.length} characters`);
      text = text.slice(0, offset) + (e.data.text as string);
    }
    return text;
  }

  test('posted through one replica, the turn streams live from the other (SSE and WebSocket)', async () => {
    const [api1, api2] = apis as unknown as [{ url: string }, { url: string }];
    const headers = bearer(await sys.token('admin'));
    // Slow enough (about 4 s of text) that a stream whose first read is slow on a loaded machine still
    // starts while the model writes.
    sys.model.setFaults([{ chunkDelayMs: 20, times: 1 }]);
    const socket = await connectWs(`${api2.url.replace(/^http/, 'ws')}/ws?sessionId=replicas`, headers);
    const post = await postMessage(api1.url, 'replicas', 'long please', headers);
    expect(post.status).toBe(202);
    const events = await readSse(`${api2.url}${post.body.eventsUrl as string}`, { headers, timeoutMs: 60_000 });
    expect(events.at(-1)?.event).toBe('done');
    const deltas = events.filter((e) => e.event === 'text_delta');
    expect(deltas.length).toBeGreaterThan(3);
    expect(events.findIndex((e) => e.event === 'text_delta')).toBeLessThan(events.findIndex((e) => e.event === 'text'));
    expect(liveText(events)).toBe(LONG);

    // The WebSocket on the second replica saw the same turn, live text included.
    await socket.next((f) => f.type === 'status' && f.payload.status === 'completed' && f.payload.turnId === post.body.turnId, 30_000);
    const wsText = socket.frames
      .filter((f) => f.type === 'text_delta' && f.payload.turnId === post.body.turnId)
      .reduce((text: string, f) => text.slice(0, f.payload.offset as number) + (f.payload.content as string), '');
    expect(wsText).toBe(LONG);
    socket.ws.close();
  }, 90_000);

  test('rate limits hold across replicas: the budget is per user, not per replica', async () => {
    const headers = bearer(await sys.token('teacher'));
    const statuses: number[] = [];
    const accepted: string[] = [];
    for (let i = 0; i < USER_PER_MINUTE + 2; i++) {
      const api = apis[i % 2] as { url: string };
      const post = await postMessage(api.url, `limits-${i}`, 'long', headers);
      statuses.push(post.status);
      if (post.status === 202) accepted.push(post.body.turnId as string);
    }

    expect(statuses.filter((s) => s === 202)).toHaveLength(USER_PER_MINUTE);
    expect(statuses.slice(USER_PER_MINUTE)).toEqual([429, 429]);
    // The other user's budget is untouched.
    const student = bearer(await sys.token('student'));
    const other = await postMessage((apis[1] as { url: string }).url, 'limits-other', 'long', student);
    expect(other.status).toBe(202);
    // The accepted turns finish before the next test scripts the model (a fault applies to the next request).
    const finished = async (turnId: string, as: Record<string, string>) =>
      await waitFor(async () => ((await getJson(`${(apis[0] as { url: string }).url}/v1/turns/${turnId}`, as)).body.status === 'completed' ? true : undefined), 30_000, 200);
    for (const turnId of accepted) await finished(turnId, headers);
    await finished(other.body.turnId as string, student);
  }, 60_000);

  test('/healthz: every replica reports every worker (their reports go into the shared table, not to one replica), and the same servers', async () => {
    const expected = workers.map((w) => w.pid).sort();
    const pidsOf = (body: { workers: Array<{ worker: string }> }) => body.workers.map((w) => Number(w.worker.split('@')[0])).sort();
    for (const api of apis) {
      const health = await waitFor(async () => {
        const h = await getJson(`${api.url}/healthz`);
        return pidsOf(h.body).join() === expected.join() ? h : undefined;
      }, 20_000, 250);
      expect(health.status).toBe(200);
      expect(health.body.status).toBe('ok');
      const servers = ['admin', 'comms', 'payments', 'student', 'teacher'];
      expect(health.body.mcp.servers.map((s: { server: string; state: string }) => `${s.server}:${s.state}`)).toEqual(servers.map((s) => `${s}:connected`));
      for (const w of health.body.workers) expect(w.servers.map((s: { server: string }) => s.server).sort()).toEqual(servers);
    }
  }, 60_000);

  test('a replica killed mid-stream: the client resumes on the other with Last-Event-ID and loses nothing', async () => {
    const [api1, api2] = apis as unknown as [{ url: string; proc: ManagedProcess }, { url: string; proc: ManagedProcess }];
    const headers = bearer(await sys.token('admin'));
    // Slow enough to kill the replica while the model writes.
    sys.model.setFaults([{ chunkDelayMs: 40, times: 1 }]);
    const post = await postMessage(api1.url, 'failover', 'long please', headers);
    expect(post.status).toBe(202);

    const before: SseEvent[] = [];
    const res = await fetch(`${api2.url}${post.body.eventsUrl as string}`, { headers: { ...headers, accept: 'text/event-stream' } });
    expect(res.status).toBe(200);
    let killed: Promise<void> | undefined;
    try {
      for await (const e of sseEvents(res.body as unknown as AsyncIterable<Uint8Array>)) {
        before.push(e);
        if (!killed && before.filter((x) => x.event === 'text_delta').length >= 5) killed = api2.proc.kill();
      }
    } catch {
      // The replica died under the stream: that is the point.
    }
    await killed;
    if (!killed) throw new Error(`the stream ended before five deltas: ${JSON.stringify(before.map((e) => [e.event, e.event === 'notice' ? e.data : '']))}`);
    expect(before.at(-1)?.event).not.toBe('done');
    const lastEventId = [...before].reverse().find((e) => e.id !== undefined)?.id;
    expect(lastEventId).toBeDefined();

    // The client reconnects to the surviving replica from where it was.
    const after = await readSse(`${api1.url}${post.body.eventsUrl as string}`, { headers, lastEventId, timeoutMs: 60_000 });
    expect(after.at(-1)?.event).toBe('done');
    const durable = [...before, ...after].filter((e) => e.id !== undefined).map((e) => Number(e.id));
    expect(durable).toEqual(Array.from({ length: durable.length }, (_, i) => i + 1));
    expect(after.find((e) => e.event === 'text')?.data.text).toBe(LONG);
    // The live text restarts with the current step's text so far, so the resumed stream alone rebuilds it.
    expect(LONG.startsWith(liveText(after))).toBe(true);
    expect(after.filter((e) => e.event === 'text_delta').length).toBeGreaterThan(0);
  }, 90_000);

  test('the worker running a payment is SIGKILLed: another worker finishes the turn, with one charge', async () => {
    // The second replica was killed above.
    const [api1] = apis as unknown as [{ url: string }];
    const headers = bearer(await sys.token('admin'));
    const unpaid = sys.store().invoices.find((i) => i.userId === 'u-bob' && i.status === 'unpaid');
    expect(unpaid).toBeDefined();
    const post = await postMessage(api1.url, 'payments', "Process payment for student Bob's invoice", headers);
    const started = await readSse(`${api1.url}${post.body.eventsUrl as string}`, {
      headers,
      timeoutMs: 60_000,
      stopAfter: (e) => e.event === 'tool_call_started' && e.data.name === 'payments__process_payment',
    });
    expect(started.at(-1)?.data.name).toBe('payments__process_payment');
    // Temporal knows which worker took the activity (its identity is pid@host): that one dies.
    let pid: number | undefined;
    for (let i = 0; i < 100 && pid === undefined; i++) {
      const described = await sys.client.workflow.getHandle(post.body.turnId as string).describe();
      const identity = described.raw.pendingActivities?.find((a) => a.activityType?.name === 'callTool')?.lastWorkerIdentity ?? '';
      pid = workers.find((w) => identity.startsWith(`${w.pid}@`))?.pid;
      if (pid === undefined) await new Promise((r) => setTimeout(r, 50));
    }
    const victim = workers.find((w) => w.pid === pid);
    expect(victim).toBeDefined();
    // Killed mid-call: once its attempt is audited (the append precedes the request, and the payments
    // server holds the call 2.5 s). The started event is pushed as the turn schedules the call, so the
    // worker may have only just begun the attempt when it is found.
    const audited = new Pool({ connectionString: pg.url, max: 1 });
    audited.on('error', () => undefined);
    try {
      await waitFor(async () => {
        const { rows } = await audited.query<{ n: string }>(
          "SELECT count(*) AS n FROM dmh_audit WHERE entry::jsonb->>'workflowId' = $1 AND entry::jsonb->>'tool' = 'process_payment' AND entry::jsonb->>'kind' = 'tool_call'",
          [post.body.turnId as string],
        );
        return Number(rows[0]?.n ?? 0) >= 1 ? true : undefined;
      }, 10_000, 20);
    } finally {
      await audited.end();
    }
    await victim?.kill();
    workers = workers.filter((w) => w !== victim);

    const rest = await readSse(`${api1.url}${post.body.eventsUrl as string}`, { headers, timeoutMs: 120_000 });
    expect(rest.at(-1)?.event).toBe('done');
    const store = sys.store();
    const invoice = store.invoices.find((i) => i.id === unpaid?.id);
    expect(invoice?.status).toBe('paid');
    expect(store.transactions.filter((t) => t.invoiceId === unpaid?.id)).toHaveLength(1);
    expect(store.outbox.filter((m) => m.subject === `Payment receipt for invoice ${unpaid?.id ?? ''}`)).toHaveLength(1);

    // Every worker appended to the one chain in PostgreSQL, which verifies; the payment's attempts are
    // all there (the killed worker's too), each with its worker attempt number.
    const db = new Pool({ connectionString: pg.url, max: 1 });
    db.on('error', () => undefined);
    try {
      // The turn's usage entry is appended after its `done` goes out: the chain is complete once it is there.
      await waitFor(async () => {
        const { rows } = await db.query<{ n: string }>(
          "SELECT count(*) AS n FROM dmh_audit WHERE entry::jsonb->>'workflowId' = $1 AND entry::jsonb->>'kind' = 'turn_usage'",
          [post.body.turnId as string],
        );
        return Number(rows[0]?.n ?? 0) >= 1 ? true : undefined;
      }, 10_000, 50);
      const verified = await verifyAuditTable(db);
      expect(verified.ok).toBe(true);
      const { rows } = await db.query<{ entry: string }>('SELECT entry FROM dmh_audit ORDER BY seq');
      const entries = rows.map((r) => JSON.parse(r.entry) as { kind: string; tool?: string; workflowId?: string; attempt?: number; outcome?: string });
      expect(verified.ok && verified.entries).toBe(entries.length);
      const payment = entries.filter((e) => e.workflowId === post.body.turnId && e.tool === 'process_payment');
      expect(payment.filter((e) => e.kind === 'tool_call').length).toBeGreaterThanOrEqual(2);
      expect(payment.filter((e) => e.kind === 'tool_result' && e.outcome === 'ok')).toHaveLength(1);
    } finally {
      await db.end();
    }
  }, 150_000);

  test('the replica the workers are told to push to is killed mid-turn: a client on another keeps its live text and gets every durable event on time', async () => {
    // The second replica was killed above; a third joins (the first read of a fresh replica is slow: warmed).
    const [api1] = apis as unknown as [{ url: string; proc: ManagedProcess }];
    const api3 = await startApiProcess(sys, apiEnv);
    const headers = bearer(await sys.token('admin'));
    const warm = await postMessage(api3.url, 'push-target-warm', 'long', headers);
    expect((await readSse(`${api3.url}${warm.body.eventsUrl as string}`, { headers, timeoutMs: 60_000 })).at(-1)?.event).toBe('done');

    // About 8 s of text: the kill lands while the model writes.
    sys.model.setFaults([{ chunkDelayMs: 40, times: 1 }]);
    const post = await postMessage(api3.url, 'push-target', 'long please', headers);
    expect(post.status).toBe(202);
    const res = await fetch(`${api3.url}${post.body.eventsUrl as string}`, { headers: { ...headers, accept: 'text/event-stream' } });
    const events: Array<SseEvent & { receivedAt: number }> = [];
    let killedAt = 0;
    /** Events received before the kill. */
    let before = 0;
    let killed: Promise<void> | undefined;
    for await (const e of sseEvents(res.body as unknown as AsyncIterable<Uint8Array>)) {
      events.push({ ...e, receivedAt: Date.now() });
      if (!killed && events.filter((x) => x.event === 'text_delta').length >= 5) {
        before = events.length;
        killedAt = Date.now();
        killed = api1.proc.kill();
      }
    }
    await killed;
    expect(killedAt).toBeGreaterThan(0);
    expect(events.at(-1)?.event).toBe('done');
    const deltasAfter = events.slice(before).filter((e) => e.event === 'text_delta');
    expect(deltasAfter.length).toBeGreaterThan(0);
    // Live text: within a second of the kill, and all of it (no word lost to the dead replica).
    expect((deltasAfter[0] as { receivedAt: number }).receivedAt - killedAt).toBeLessThan(1_000);
    expect(liveText(events)).toBe(LONG);
    const durable = events.filter((e) => e.id !== undefined);
    expect(durable.map((e) => Number(e.id))).toEqual(Array.from({ length: durable.length }, (_, i) => i + 1));
    // No durable event late: each reached the client within 2 s of its workflow time, and `done` within
    // 2 s of the turn's close as Temporal recorded it (generous for a busy machine; pushes take milliseconds).
    const late = durable.filter((e) => e.receivedAt - Date.parse(e.data.at as string) > 2_000).map((e) => `${e.event} ${e.receivedAt - Date.parse(e.data.at as string)} ms`);
    expect(late).toEqual([]);
    const closed = (await sys.client.workflow.getHandle(post.body.turnId as string).describe()).closeTime;
    expect(closed).toBeDefined();
    expect((events.at(-1) as { receivedAt: number }).receivedAt - (closed as Date).getTime()).toBeLessThan(2_000);
  }, 120_000);
}
