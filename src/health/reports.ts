/**
 * What each worker last said about its MCP servers, and the health answer built from all of them.
 *
 * The API has no MCP connections (stdio servers are the workers' children), and asking one worker
 * through a workflow made /healthz start workflows for anyone who called it and flap with whichever
 * worker answered. Instead every worker reports its servers' states every few seconds
 * (./reporter.ts); the API keeps the latest report per worker, forgets a worker that missed three
 * reports, and answers /healthz from the reports it holds: no workflow, and the same answer whichever
 * replica or worker is asked.
 *
 * In memory for one API process; in PostgreSQL (table dmh_worker_reports) when replicas share one,
 * so a worker's report reaches every replica whichever one the load balancer gave it.
 */
import type { Pool } from 'pg';
import { ensureSchema } from '../pg/transaction';
import type { ServerStatus } from '../shared/tool-types';

/** `connecting`: the worker is still opening its MCP servers (its servers are not listed yet); `ready`: it has. */
export const WORKER_PHASES = ['connecting', 'ready'] as const;
export type WorkerPhase = (typeof WORKER_PHASES)[number];

export interface WorkerReport {
  /** The worker's Temporal identity (pid@host unless configured). */
  worker: string;
  /** How often this worker reports; three missed reports and it counts as gone. */
  everyMs: number;
  servers: ServerStatus[];
  /** Absent from workers that predate it: they report once connected, i.e. `ready`. */
  phase?: WorkerPhase;
  /** What a `connecting` worker is doing, e.g. "connecting 5 MCP servers: admin, comms, ...". */
  detail?: string;
}

export interface ReceivedReport extends WorkerReport {
  /** When the API received it (the API's clock, or PostgreSQL's: never the worker's). */
  reportedAt: string;
}

export interface WorkerReports {
  record(report: WorkerReport): Promise<void>;
  /** The latest report of every worker that has not missed three in a row, by worker name. */
  current(): Promise<ReceivedReport[]>;
}

/** Reports older than this many of their own intervals are ignored. */
export const MISSED_REPORTS = 3;

export function memoryWorkerReports(now: () => number = Date.now): WorkerReports {
  const latest = new Map<string, { at: number; report: WorkerReport }>();
  return {
    async record(report) {
      latest.set(report.worker, { at: now(), report });
    },
    async current() {
      const t = now();
      const fresh: ReceivedReport[] = [];
      for (const [worker, { at, report }] of latest) {
        if (t - at > MISSED_REPORTS * report.everyMs) {
          latest.delete(worker);
          continue;
        }
        fresh.push({ ...report, reportedAt: new Date(at).toISOString() });
      }
      return fresh.sort((a, b) => a.worker.localeCompare(b.worker));
    },
  };
}

const TABLE = 'dmh_worker_reports';

/** Reports in PostgreSQL, shared by every API replica; the table is created if missing. */
export async function postgresWorkerReports(pool: Pick<Pool, 'query' | 'connect'>): Promise<WorkerReports> {
  await ensureSchema(pool, async (q) => {
    await q(`CREATE TABLE IF NOT EXISTS ${TABLE} (worker text PRIMARY KEY, reported_at timestamptz NOT NULL, every_ms integer NOT NULL, servers jsonb NOT NULL)`);
    // Added with worker phases (decision 0020); tables made before get them here.
    await q(`ALTER TABLE ${TABLE} ADD COLUMN IF NOT EXISTS phase text, ADD COLUMN IF NOT EXISTS detail text`);
  });
  let writes = 0;
  return {
    async record(report) {
      await pool.query(
        `INSERT INTO ${TABLE} (worker, reported_at, every_ms, servers, phase, detail) VALUES ($1, now(), $2, $3, $4, $5)
         ON CONFLICT (worker) DO UPDATE SET reported_at = now(), every_ms = EXCLUDED.every_ms, servers = EXCLUDED.servers,
           phase = EXCLUDED.phase, detail = EXCLUDED.detail`,
        [report.worker, report.everyMs, JSON.stringify(report.servers), report.phase ?? null, report.detail ?? null],
      );
      // Workers come and go (every restart is a new pid): drop the long gone now and then.
      if (++writes % 100 === 1) await pool.query(`DELETE FROM ${TABLE} WHERE reported_at < now() - interval '1 day'`);
    },
    async current() {
      const { rows } = await pool.query<{ worker: string; reported_at: Date; every_ms: number; servers: ServerStatus[]; phase: string | null; detail: string | null }>(
        `SELECT worker, reported_at, every_ms, servers, phase, detail FROM ${TABLE}
          WHERE reported_at > now() - make_interval(secs => every_ms * ${MISSED_REPORTS} / 1000.0)
          ORDER BY worker`,
      );
      return rows.map((r) => ({
        worker: r.worker,
        everyMs: r.every_ms,
        servers: r.servers,
        reportedAt: r.reported_at.toISOString(),
        ...(r.phase === 'connecting' || r.phase === 'ready' ? { phase: r.phase } : {}),
        ...(r.detail ? { detail: r.detail } : {}),
      }));
    },
  };
}

export interface McpHealth {
  ok: boolean;
  /** One entry per server: unavailable if any reporting worker cannot use it (which one says `error`). */
  servers: ServerStatus[];
  error?: string;
}

/**
 * One state per server over all workers' reports. A server counts as connected only if every worker
 * that reports it has it connected: a turn's call can land on any worker, so one worker that cannot
 * reach a server is a degraded service, and the answer does not depend on which worker was asked.
 */
export function summarize(all: readonly ReceivedReport[]): McpHealth {
  if (all.length === 0) {
    return { ok: false, servers: [], error: 'no worker has reported its MCP servers recently (is a worker running?)' };
  }
  // A worker still connecting has no server states to give yet: it says what it is doing instead.
  const reports = all.filter((r) => r.phase !== 'connecting');
  if (reports.length === 0) {
    const first = all[0] as ReceivedReport;
    const others = all.length > 1 ? ` (and ${all.length - 1} more worker${all.length > 2 ? 's' : ''})` : '';
    return { ok: false, servers: [], error: `worker ${first.worker} is starting: ${first.detail ?? 'connecting its MCP servers'}${others}` };
  }
  const byServer = new Map<string, Array<{ worker: string; status: ServerStatus }>>();
  for (const r of reports) {
    for (const status of r.servers) {
      const seen = byServer.get(status.server) ?? [];
      seen.push({ worker: r.worker, status });
      byServer.set(status.server, seen);
    }
  }
  const servers: ServerStatus[] = [];
  for (const [, seen] of [...byServer].sort(([a], [b]) => a.localeCompare(b))) {
    const bad = seen.filter((s) => s.status.state === 'unavailable');
    const first = (bad[0] ?? seen[0]) as { status: ServerStatus };
    if (bad.length === 0 || seen.length === 1) {
      servers.push(first.status);
      continue;
    }
    const why = first.status.error ? `: ${first.status.error}` : '';
    servers.push({ ...first.status, error: `unavailable on ${bad.length} of ${seen.length} workers${why}` });
  }
  return { ok: servers.every((s) => s.state !== 'unavailable'), servers };
}
