/**
 * `npm start` says "up" only when a turn can run: it asks the API's GET /healthz/ready until that
 * answers ready (Temporal reachable, the worker connected to its MCP servers; src/health/readiness.ts),
 * telling the operator what is still pending whenever that changes, for at most `timeoutMs`.
 */
export interface ReadyWait {
  ready: boolean;
  /** What was still missing when the wait gave up (empty when ready). */
  pending: string[];
}

export async function waitUntilReady(
  apiUrl: string,
  opts: { timeoutMs: number; intervalMs?: number; onPending?: (pending: string[]) => void },
): Promise<ReadyWait> {
  const deadline = Date.now() + opts.timeoutMs;
  let last = '';
  let pending: string[] = ['no answer from /healthz/ready yet'];
  for (;;) {
    try {
      const res = await fetch(`${apiUrl}/healthz/ready`, { signal: AbortSignal.timeout(5_000) });
      const body = (await res.json()) as { status?: string; pending?: unknown };
      if (res.ok && body.status === 'ready') return { ready: true, pending: [] };
      pending = Array.isArray(body.pending) ? body.pending.map(String) : [`HTTP ${res.status}`];
    } catch (err) {
      pending = [`/healthz/ready: ${err instanceof Error ? err.message : String(err)}`];
    }
    const said = pending.join('; ');
    if (said !== last) {
      last = said;
      opts.onPending?.(pending);
    }
    if (Date.now() >= deadline) return { ready: false, pending };
    await new Promise((r) => setTimeout(r, opts.intervalMs ?? 250));
  }
}
