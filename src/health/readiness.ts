/**
 * The API's readiness (GET /healthz/ready): can a turn submitted here run and stream? Three checks,
 * each with what it found (docs/decisions/0020-live-text-without-a-single-target.md, README "Health"):
 *
 * - `temporal`: the frontend answers. One failed or slow call does not flip readiness: it flips once
 *   the calls have kept failing for `graceMs` (and at least twice), and flips back on the first success.
 * - `bus` (only with POSTGRES_URL): this replica LISTENs for live text. Down for longer than
 *   `busGraceMs` (a reconnect normally takes half a second) and it is not ready: its streams would
 *   miss live text and pushed events.
 * - `workers`: at least one worker reported within its interval and has connected its MCP servers; one
 *   still connecting says what it is doing. The servers' states are detail, never a reason to be unready
 *   (a server that is down is a degraded service, not a dead replica).
 *
 * Liveness (GET /healthz/live) asks nothing of anyone: the process answers, and says how late its
 * event loop has been.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { type McpHealth, type ReceivedReport, summarize } from './reports';

export interface ReadinessSources {
  temporal: () => Promise<{ ok: boolean; error?: string }>;
  /** Absent: no bus configured (one replica). */
  bus?: () => { ok: boolean; downSinceMs?: number };
  workers: () => Promise<ReceivedReport[]>;
}

export interface ReadinessOptions {
  /** How long Temporal calls may keep failing before readiness flips (default 5000). */
  graceMs?: number;
  /** How long the bus may be deaf before readiness flips (default 1000). */
  busGraceMs?: number;
  now?: () => number;
}

export interface Check {
  ok: boolean;
  detail?: string;
}

export interface Readiness {
  status: 'ready' | 'not_ready';
  checks: { temporal: Check; bus?: Check; workers: Check & { ready: number; connecting: number } };
  /** What is still missing, one sentence each; empty when ready. */
  pending: string[];
  /** The MCP servers over all workers' reports: detail only. */
  mcp: McpHealth;
}

export function createReadiness(sources: ReadinessSources, opts: ReadinessOptions = {}): { ready(): Promise<Readiness> } {
  const graceMs = opts.graceMs ?? 5_000;
  const busGraceMs = opts.busGraceMs ?? 1_000;
  const now = opts.now ?? Date.now;
  /** When Temporal calls started failing, and how many failed since (0: the last one succeeded). */
  let failing = { since: 0, count: 0 };
  /** Never answered yet: nothing to be lenient about. */
  let everOk = false;

  const temporalCheck = async (): Promise<Check> => {
    const t = await sources.temporal().catch((err: unknown) => ({ ok: false, error: err instanceof Error ? err.message : String(err) }));
    if (t.ok) {
      failing = { since: 0, count: 0 };
      everOk = true;
      return { ok: true };
    }
    if (failing.count === 0) failing.since = now();
    failing.count++;
    const persistent = !everOk || (failing.count >= 2 && now() - failing.since >= graceMs);
    const detail = t.error ?? 'unreachable';
    return persistent ? { ok: false, detail } : { ok: true, detail: `one failed call tolerated: ${detail}` };
  };

  const busCheck = (): Check | undefined => {
    if (!sources.bus) return undefined;
    const b = sources.bus();
    if (b.ok) return { ok: true };
    if (b.downSinceMs !== undefined && b.downSinceMs < busGraceMs) return { ok: true, detail: 'reconnecting its LISTEN connection' };
    return {
      ok: false,
      detail: b.downSinceMs === undefined ? 'not listening for live text yet' : `not listening for live text for ${Math.round(b.downSinceMs / 1000)} s (reconnecting)`,
    };
  };

  return {
    async ready() {
      const [temporal, reports] = await Promise.all([temporalCheck(), sources.workers().catch((err: unknown) => err as Error)]);
      const bus = busCheck();
      const pending: string[] = [];
      let workers: Readiness['checks']['workers'];
      let mcp: McpHealth;
      if (reports instanceof Error) {
        workers = { ok: false, ready: 0, connecting: 0, detail: `worker reports unreadable: ${reports.message}` };
        mcp = { ok: false, servers: [], error: workers.detail ?? '' };
      } else {
        const connecting = reports.filter((r) => r.phase === 'connecting');
        const ready = reports.length - connecting.length;
        const first = connecting[0];
        const detail =
          ready > 0
            ? undefined
            : first
              ? `worker ${first.worker} is starting: ${first.detail ?? 'connecting its MCP servers'}`
              : 'no worker has reported within its interval (is a worker running?)';
        workers = { ok: ready > 0, ready, connecting: connecting.length, ...(detail ? { detail } : {}) };
        mcp = summarize(reports);
      }
      if (!temporal.ok) pending.push(`Temporal: ${temporal.detail ?? 'unreachable'}`);
      if (bus && !bus.ok) pending.push(`live-text bus: ${bus.detail ?? 'not listening'}`);
      if (!workers.ok) pending.push(`workers: ${workers.detail ?? 'none ready'}`);
      return { status: pending.length === 0 ? 'ready' : 'not_ready', checks: { temporal, ...(bus ? { bus } : {}), workers }, pending, mcp };
    },
  };
}

/** Liveness: the process answers; `eventLoopDelayMs` is the worst event-loop delay since the last ask. */
export function createLiveness(): { live(): { status: 'live'; uptimeSeconds: number; eventLoopDelayMs: number } } {
  let histogram: ReturnType<typeof monitorEventLoopDelay> | undefined;
  return {
    live() {
      // Measured from the first ask on: an app that is never probed pays nothing.
      if (!histogram) {
        histogram = monitorEventLoopDelay({ resolution: 20 });
        histogram.enable();
        return { status: 'live', uptimeSeconds: Math.round(process.uptime()), eventLoopDelayMs: 0 };
      }
      const delayMs = Number.isFinite(histogram.max) ? Math.round(histogram.max / 1e6) : 0;
      histogram.reset();
      return { status: 'live', uptimeSeconds: Math.round(process.uptime()), eventLoopDelayMs: delayMs };
    },
  };
}
