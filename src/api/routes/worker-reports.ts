/**
 * POST /internal/workers: each worker's periodic report of its MCP servers' states (see
 * src/health/reporter.ts), kept for /healthz (src/health/reports.ts). Guarded like live text, by the
 * shared worker secret.
 */
import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import { WORKER_PHASES, type WorkerReports } from '../../health/reports';
import { describeIssues } from '../../shared/issues';
import { ServerStatusSchema } from '../contract';
import { sendError, workerRouteOptions } from '../worker-secret';

export const WORKER_REPORTS_PATH = '/internal/workers';

const WorkerReportSchema = z
  .object({
    worker: z.string().min(1).max(256),
    everyMs: z.number().int().min(100).max(3_600_000),
    servers: z.array(ServerStatusSchema).max(1_000),
    phase: z.enum(WORKER_PHASES).optional(),
    detail: z.string().max(1_000).optional(),
  })
  .strict();

export const workerReportRoutes: FastifyPluginAsync<{ reports: WorkerReports; secret: string }> = async (app, opts) => {
  app.post(WORKER_REPORTS_PATH, {
    bodyLimit: 1024 * 1024,
    ...workerRouteOptions(opts.secret, WORKER_REPORTS_PATH, 'Worker reports'),
    handler: async (request, reply) => {
      const parsed = WorkerReportSchema.safeParse(request.body);
      if (!parsed.success) {
        return sendError(reply, 400, 'invalid_request', `worker report: ${describeIssues(parsed.error.issues.slice(0, 3), '').join('; ')}`);
      }
      await opts.reports.record(parsed.data);
      return reply.status(204).send();
    },
  });
};
