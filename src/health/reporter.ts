/**
 * The worker's end of ./reports.ts: every `everyMs` it asks its pool for the servers' states and
 * POSTs them to the API (the route beside live text, under the same shared secret, failing over
 * between replicas like live text), or writes them to the replicas' PostgreSQL table itself
 * (`deliver`). The first report leaves at once, so a new worker shows in /healthz within a round
 * trip; while the worker still connects its servers it reports `connecting` and what it is doing,
 * and the worker asks for a report the moment they are connected (reportNow).
 *
 * Best effort: a report that fails is logged (at most once a minute) and the next one follows on
 * schedule. Never two reports at once: the next waits for the previous one to finish.
 */
import type { ServerStatus } from '../shared/tool-types';
import { createFailoverPost } from '../live/transport';
import type { WorkerPhase, WorkerReport } from './reports';

export interface ReporterLogger {
  warn(obj: Record<string, unknown>, msg?: string): void;
}

export interface WorkerReporterOptions {
  /** The API's report route, e.g. http://127.0.0.1:3000/internal/workers, or it on several replicas (tried in turn). */
  url?: string | readonly string[];
  /** Sent as `authorization: Bearer <secret>` with `url`, never logged. */
  secret?: string;
  /** Delivers a report instead of `url` (e.g. into the shared PostgreSQL table). */
  deliver?: (report: WorkerReport) => Promise<void>;
  worker: string;
  everyMs: number;
  status: () => Promise<ServerStatus[]>;
  /**
   * What the worker is doing, read before the servers' states: while `connecting`, status() is not
   * asked (it would wait for the connections) and the report says `detail` instead. Absent: no phase
   * is reported (older APIs).
   */
  phase?: () => { phase: WorkerPhase; detail?: string };
  logger: ReporterLogger;
  requestTimeoutMs?: number;
}

export interface WorkerReporter {
  /**
   * Sends a report now (and restarts the schedule from it); resolves when it was sent or failed.
   * The report it waits for reads the servers' states after the call: with one already in flight
   * (whose states were read before), it is the one after that.
   */
  reportNow(): Promise<void>;
  stop(): void;
}

const WARN_EVERY_MS = 60_000;

/** The report route beside the live-text route: `.../internal/live` → `.../internal/workers`. */
export function reportUrlFrom(livePushUrl: string): string {
  return new URL('workers', livePushUrl).toString();
}

export function startWorkerReporter(opts: WorkerReporterOptions): WorkerReporter {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  // The cycle whose report is on its way (it read the servers' states when it started), and the one
  // promised to callers of reportNow() who came meanwhile: they asked after that read, so they get
  // the cycle after it, which starts when `inFlight` ends and serves all of them (it reads later).
  let inFlight: Promise<void> | undefined;
  let next: Promise<void> | undefined;
  let lastWarn = 0;
  const deliver =
    opts.deliver ??
    ((): ((report: WorkerReport) => Promise<void>) => {
      const poster = createFailoverPost({
        urls: typeof opts.url === 'string' ? [opts.url] : [...(opts.url ?? [])],
        secret: opts.secret ?? '',
        requestTimeoutMs: opts.requestTimeoutMs ?? Math.max(opts.everyMs, 5_000),
      });
      return (report) => poster.post(report);
    })();
  const where = typeof opts.url === 'string' ? opts.url : (opts.url?.join(',') ?? 'shared table');

  // Calls status() before its first await: a cycle reads the states from the moment it starts.
  const send = async (): Promise<void> => {
    try {
      const phase = opts.phase?.();
      const servers = phase?.phase === 'connecting' ? [] : await opts.status();
      await deliver({ worker: opts.worker, everyMs: opts.everyMs, servers, ...(phase ?? {}) });
    } catch (err) {
      if (Date.now() - lastWarn >= WARN_EVERY_MS) {
        lastWarn = Date.now();
        opts.logger.warn({ url: where, err: err instanceof Error ? err.message : String(err) }, 'worker report failed; /healthz will miss this worker until one succeeds');
      }
    }
  };

  const schedule = (): void => {
    timer = setTimeout(() => void cycle(), opts.everyMs);
    timer.unref();
  };

  const start = (): Promise<void> => {
    if (timer) clearTimeout(timer);
    inFlight = send().finally(() => {
      inFlight = undefined;
      // With a cycle promised, the schedule restarts from that one instead.
      if (!stopped && !next) schedule();
    });
    return inFlight;
  };

  const cycle = (): Promise<void> => {
    if (!inFlight) return start();
    next ??= inFlight.then(() => {
      next = undefined;
      return start();
    });
    return next;
  };

  void cycle();
  return {
    reportNow: cycle,
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
    },
  };
}
