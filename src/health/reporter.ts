/**
 * The worker's end of ./reports.ts: every `everyMs` it asks its pool for the servers' states and
 * POSTs them to the API (the route beside live text, under the same shared secret). The first
 * report leaves at once, so a new worker shows in /healthz within a round trip.
 *
 * Best effort: a report that fails is logged (at most once a minute) and the next one follows on
 * schedule. Never two reports at once: the next waits for the previous one to finish.
 */
import type { ServerStatus } from '../shared/tool-types';

export interface ReporterLogger {
  warn(obj: Record<string, unknown>, msg?: string): void;
}

export interface WorkerReporterOptions {
  /** The API's report route, e.g. http://127.0.0.1:3000/internal/workers */
  url: string;
  /** Sent as `authorization: Bearer <secret>`, never logged. */
  secret: string;
  worker: string;
  everyMs: number;
  status: () => Promise<ServerStatus[]>;
  logger: ReporterLogger;
  requestTimeoutMs?: number;
}

export interface WorkerReporter {
  /** Sends a report now (and restarts the schedule from it); resolves when it was sent or failed. */
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
  let running: Promise<void> | undefined;
  let lastWarn = 0;

  const send = async (): Promise<void> => {
    try {
      const servers = await opts.status();
      const response = await fetch(opts.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${opts.secret}` },
        body: JSON.stringify({ worker: opts.worker, everyMs: opts.everyMs, servers }),
        signal: AbortSignal.timeout(opts.requestTimeoutMs ?? Math.max(opts.everyMs, 5_000)),
      });
      await response.body?.cancel();
      if (!response.ok) throw new Error(`the API answered HTTP ${response.status}`);
    } catch (err) {
      if (Date.now() - lastWarn >= WARN_EVERY_MS) {
        lastWarn = Date.now();
        opts.logger.warn({ url: opts.url, err: err instanceof Error ? err.message : String(err) }, 'worker report failed; /healthz will miss this worker until one succeeds');
      }
    }
  };

  const cycle = (): Promise<void> => {
    if (timer) clearTimeout(timer);
    running ??= send().finally(() => {
      running = undefined;
      if (!stopped) {
        timer = setTimeout(() => void cycle(), opts.everyMs);
        timer.unref();
      }
    });
    return running;
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
