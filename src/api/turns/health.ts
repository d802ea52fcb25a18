/** The host's health: Temporal reachable, and the MCP servers as the workers last reported them. */
import type { z } from 'zod';
import type { Health } from '../contract';
import { summarize } from '../../health/reports';
import { createLiveness, createReadiness } from '../../health/readiness';
import type { TurnServiceOptions } from './options';

export function createHealth(opts: TurnServiceOptions) {
  const readiness = createReadiness({
    temporal: () => opts.gateway.temporalHealth(),
    workers: () => opts.workerReports.current(),
    ...(opts.busListening ? { bus: opts.busListening } : {}),
  });
  const liveness = createLiveness();
  return {
    /** GET /healthz/ready: see src/health/readiness.ts. */
    ready: () => readiness.ready(),
    /** GET /healthz/live: the process answers. */
    live: () => liveness.live(),
    /**
     * Never throws: a Temporal outage is the answer (`down`), not an error. Starts no workflow (anyone
     * may call it): the MCP part comes from the workers' own reports, the same on every replica.
     */
    async health(): Promise<z.output<typeof Health>> {
      const [temporal, reports] = await Promise.all([
        opts.gateway.temporalHealth(),
        opts.workerReports.current().catch((err: unknown) => err as Error),
      ]);
      const mcp: z.output<typeof Health>['mcp'] =
        reports instanceof Error ? { ok: false, servers: [], error: `worker reports unreadable: ${reports.message}` } : summarize(reports);
      const workers =
        reports instanceof Error
          ? []
          : reports.map((r) => ({ worker: r.worker, reportedAt: r.reportedAt, servers: r.servers, ...(r.phase ? { phase: r.phase } : {}), ...(r.detail ? { detail: r.detail } : {}) }));
      return { status: !temporal.ok ? 'down' : mcp.ok ? 'ok' : 'degraded', temporal, mcp, workers };
    },
  };
}
