import { memoryKind, memoryMb, type Sample } from './sampler';
import type { TurnRecord } from './users';

/** The soak's figures from what the clients saw, the school store and the samples; pure functions. */
export interface FaultMark {
  at: number;
  end: number;
  name: string;
}

export const percentile = (values: number[], p: number): number => {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;
};
const median = (values: number[]): number => percentile(values, 50);

export interface TurnFigures {
  submitted: number;
  completed: number;
  failed: number;
  failedWithoutReason: number;
  refused: number;
  cancelled: number;
  lost: number;
  /** Counted lost at the drain deadline, seen ended by their record in the extra window after it; by how they ended. */
  late: number;
  lateEnded: Record<string, number>;
  /** Late turns that failed without a reason (the rule "failures have a reason" holds for them too). */
  lateWithoutReason: number;
  reconnects: number;
  /** Turns whose stream missed an event or delivered one twice, with what was wrong. */
  streamFaults: Array<{ turnId: string; via: string; problem: string }>;
  /**
   * Turns that ended (by their record) after their client stopped following at the run's deadline:
   * their stream is judged for gaps and repeats up to the last id it brought, not for the tail it never waited for.
   */
  streamsCutAtDeadline: number;
  reasons: Record<string, number>;
}

/** Whether the durable ids a client received are exactly 1..n, each once, n being the turn's last id. */
export function streamProblem(ids: number[], lastEventId: number | undefined): string | undefined {
  const seen = new Set<number>();
  const repeated = ids.filter((id) => (seen.has(id) ? true : (seen.add(id), false)));
  const max = Math.max(lastEventId ?? 0, ...ids);
  const missed: number[] = [];
  for (let i = 1; i <= max; i++) if (!seen.has(i)) missed.push(i);
  if (repeated.length === 0 && missed.length === 0) return undefined;
  return `${missed.length ? `missed ${missed.slice(0, 10).join(',')}` : ''}${missed.length && repeated.length ? '; ' : ''}${repeated.length ? `repeated ${repeated.slice(0, 10).join(',')}` : ''}`;
}

/** Failure reasons grouped: ids and numbers become N. */
const reasonKey = (reason: string | undefined) => (reason ?? '(none)').replace(/[0-9a-f]{8,}|\d+/g, 'N').slice(0, 120);

/** A turn that ended completed, within the drain or late: its latency (submission to end) counts. */
export const endedCompleted = (t: { outcome: string; serverStatus?: string; endedAt?: number }): boolean =>
  !!t.endedAt && (t.outcome === 'completed' || (t.outcome === 'late' && t.serverStatus === 'completed'));

export function turnFigures(turns: TurnRecord[]): TurnFigures {
  const f: TurnFigures = { submitted: 0, completed: 0, failed: 0, failedWithoutReason: 0, refused: 0, cancelled: 0, lost: 0, late: 0, lateEnded: {}, lateWithoutReason: 0, reconnects: 0, streamFaults: [], streamsCutAtDeadline: 0, reasons: {} };
  for (const t of turns) {
    f.reconnects += t.reconnects;
    if (t.outcome === 'refused') {
      f.refused++;
      f.reasons[t.reason ?? 'refused'] = (f.reasons[t.reason ?? 'refused'] ?? 0) + 1;
      continue;
    }
    f.submitted++;
    if (t.outcome === 'completed') f.completed++;
    else if (t.outcome === 'cancelled') f.cancelled++;
    else if (t.outcome === 'failed') {
      f.failed++;
      if (!t.reason) f.failedWithoutReason++;
      const reason = reasonKey(t.reason);
      f.reasons[reason] = (f.reasons[reason] ?? 0) + 1;
    } else if (t.outcome === 'late') {
      f.late++;
      const ended = t.serverStatus ?? '(unknown)';
      f.lateEnded[ended] = (f.lateEnded[ended] ?? 0) + 1;
      if (ended === 'failed') {
        if (!t.reason) f.lateWithoutReason++;
        const reason = `(late) ${reasonKey(t.reason)}`;
        f.reasons[reason] = (f.reasons[reason] ?? 0) + 1;
      }
    } else f.lost++;
    if (t.outcome !== 'lost' && t.turnId) {
      const cut = t.streamEnded !== true;
      if (cut) f.streamsCutAtDeadline++;
      const problem = streamProblem(t.ids, cut ? undefined : t.lastEventId);
      if (problem) f.streamFaults.push({ turnId: t.turnId, via: t.via, problem });
      if (t.replayConflicts?.length) f.streamFaults.push({ turnId: t.turnId, via: t.via, problem: `sent again after a resend with other content: ids ${t.replayConflicts.join(', ')}` });
    }
  }
  return f;
}

/** p50/p99 of completed turns, late ones included (submission to end, approvals included), in `buckets` windows of the run. */
export function latencySeries(turns: TurnRecord[], start: number, end: number, buckets: number): Array<{ t: number; p50: number; p99: number; n: number }> {
  const width = (end - start) / buckets;
  return Array.from({ length: buckets }, (_, i) => {
    const lat = turns
      .filter((t) => endedCompleted(t) && t.submittedAt >= start + i * width && t.submittedAt < start + (i + 1) * width)
      .map((t) => (t.endedAt ?? 0) - t.submittedAt);
    return { t: start + (i + 0.5) * width, p50: percentile(lat, 50), p99: percentile(lat, 99), n: lat.length };
  });
}

export interface Growth {
  name: string;
  pid: number;
  /**
   * What `memFrom`/`memTo` measure: a single process's RSS, a process tree's summed PSS, or, for a
   * process whose metrics give its heap's floor, its RSS less the heap's garbage not collected yet
   * (`RSS held`: heap in use minus the heap just after the last full collection).
   */
  memKind: 'RSS' | 'PSS' | 'RSS held';
  memFrom: number;
  memTo: number;
  fdsFrom: number;
  fdsTo: number;
  /** Trees: their processes at the most in the first half and at the end, as for fds. */
  processesFrom?: number;
  processesTo?: number;
  /**
   * A tree whose every process caps its own descriptors (PostgreSQL's `max_files_per_process`: a
   * backend opens a relation's file when it first touches it, and past the cap closes the one it used
   * least). Its descriptors grow as backends touch more tables, up to the cap, which no leak can pass;
   * a leak of connections shows as more processes. So for it, flat means: its processes flat, and its
   * descriptors within processes × this cap.
   */
  fdsCapPerProcess?: number;
  mcpFrom?: number;
  mcpTo?: number;
  /** Workers and APIs: the V8 heap in use (MB); workers: the SDK's sticky cache (runs); APIs: live turns held. Medians of the same quarters; reported, not judged. */
  heapFrom?: number;
  heapTo?: number;
  /** The heap just after the last full collection (MB), where the metrics give it: the same quarters. */
  heapLiveFrom?: number;
  heapLiveTo?: number;
  /** The heap V8 holds from the system (MB, committed), where the metrics give it: the same quarters. */
  heapTotalFrom?: number;
  heapTotalTo?: number;
  /** The RSS's file-backed pages (MB) and the memory JavaScript holds outside the V8 heap (MB): the same quarters. */
  rssFileFrom?: number;
  rssFileTo?: number;
  externalFrom?: number;
  externalTo?: number;
  stickyFrom?: number;
  stickyTo?: number;
  liveFrom?: number;
  liveTo?: number;
  /**
   * A worker's stdio MCP servers: the memory the same servers need started afresh on the store as
   * the run left it (soak/fresh.ts). Their data grows with the run; memory is judged against the
   * larger of this and `memFrom`.
   */
  freshMb?: number;
  /** Why the instance was not judged (too short-lived after warm-up), or undefined. */
  skipped?: string;
  /** How long after warm-up it was watched (ms): memory is judged only over RSS_MIN_WINDOW_MS. */
  windowMs: number;
}

/**
 * Memory over a shorter window says nothing of a leak: a heap still growing towards its working size
 * under load looks the same (a 2-minute run saw +8 % and +13 % on an API replica that then levelled
 * off). Shorter runs report it; descriptors and MCP connections are judged at any length.
 */
export const RSS_MIN_WINDOW_MS = 5 * 60_000;

export interface GrowthWindow {
  /** When the run's warm-up ended. */
  warmUpEnd: number;
  /**
   * A process started during the run (a restart) warms up as long as the run did: its heap, caches
   * and pools fill again from nothing, under the full load.
   */
  warmUpMs: number;
  /** Judged only when it lived this long past its warm-up. */
  minSpanMs: number;
}

/**
 * Per process instance (name and pid: a restarted process is a new instance), over the time after its
 * warm-up: its memory at the start and at the end of that window, each the median of the samples of a
 * quarter of the window (a garbage-collected heap saws up and down; one or three samples catch a peak
 * or a trough), and its fds and MCP connections at most in the first half of that window and at its
 * end.
 */
export function growth(samples: Sample[], w: GrowthWindow): Growth[] {
  const byInstance = new Map<string, Sample[]>();
  for (const s of samples) byInstance.set(`${s.name}#${s.pid}`, [...(byInstance.get(`${s.name}#${s.pid}`) ?? []), s]);
  const out: Growth[] = [];
  for (const list of byInstance.values()) {
    const head = list[0] as Sample;
    const judged = list.filter((s) => s.t >= Math.max(w.warmUpEnd, head.t + w.warmUpMs));
    // Too short-lived to judge: shown from its first sample to its last.
    const after = judged.length >= 6 ? judged : list;
    const quarter = Math.max(3, Math.floor(after.length / 4));
    const first = after.slice(0, quarter);
    const last = after.slice(-quarter);
    const span = (judged.at(-1)?.t ?? 0) - (judged[0]?.t ?? 0);
    // Descriptors and connections come and go with the work (a pool's keep-alive sockets, one per call
    // in flight to an HTTP server; a server that is down for a while): flat means the end (the median
    // of the last quarter, as for memory) is no higher than the most the first half already held.
    const early = after.slice(0, Math.max(1, Math.ceil(after.length / 2)));
    const end = last;
    // A V8 heap saws with a period of minutes under load, longer than a quarter: without the garbage
    // it has not collected yet, what a process holds is judged, whatever the phase of its saw.
    const held = head.pssMb === undefined && [...first, ...last].every((s) => s.heapUsedMb !== undefined && s.heapLiveMb !== undefined);
    const mem = held ? heldMb : memoryMb;
    const g: Growth = {
      name: head.name, pid: head.pid, windowMs: span, memKind: held ? 'RSS held' : memoryKind(head),
      memFrom: median(first.map(mem)), memTo: median(last.map(mem)),
      fdsFrom: Math.max(...early.map((s) => s.fds)), fdsTo: median(end.map((s) => s.fds)),
      ...(head.processes !== undefined ? { processesFrom: Math.max(...early.map((s) => s.processes ?? 0)), processesTo: median(end.map((s) => s.processes ?? 0)) } : {}),
      ...(head.mcp !== undefined ? { mcpFrom: Math.max(...early.map((s) => s.mcp ?? 0)), mcpTo: median(end.map((s) => s.mcp ?? 0)) } : {}),
      ...quarters(first, last, 'heapUsedMb', 'heap'),
      ...quarters(first, last, 'heapLiveMb', 'heapLive'),
      ...quarters(first, last, 'heapTotalMb', 'heapTotal'),
      ...quarters(first, last, 'rssFileMb', 'rssFile'),
      ...quarters(first, last, 'externalMb', 'external'),
      ...quarters(first, last, 'stickyCache', 'sticky'),
      ...quarters(first, last, 'liveTurns', 'live'),
    };
    if (judged.length < 6 || span < w.minSpanMs) g.skipped = `lived ${Math.round(span / 1000)} s after its warm-up (< ${Math.round(w.minSpanMs / 1000)} s)`;
    out.push(g);
  }
  return out;
}

/** RSS less the heap's garbage not collected yet: the heap in use above its floor after the last full collection. */
const heldMb = (s: Sample): number => s.rssMb - Math.max(0, (s.heapUsedMb ?? 0) - (s.heapLiveMb ?? s.heapUsedMb ?? 0));

/** `{<as>From, <as>To}`: the medians of a figure over the first and the last quarter, where samples have it. */
function quarters(
  first: Sample[],
  last: Sample[],
  field: 'heapUsedMb' | 'heapLiveMb' | 'heapTotalMb' | 'rssFileMb' | 'externalMb' | 'stickyCache' | 'liveTurns',
  as: 'heap' | 'heapLive' | 'heapTotal' | 'rssFile' | 'external' | 'sticky' | 'live',
): Partial<Growth> {
  const a = first.flatMap((s) => (s[field] === undefined ? [] : [s[field]]));
  const b = last.flatMap((s) => (s[field] === undefined ? [] : [s[field]]));
  return a.length && b.length ? { [`${as}From`]: median(a), [`${as}To`]: median(b) } : {};
}

/** What breaks the rules of the soak in a growth row (memory ≤ +10 %, fds and MCP connections flat). */
export function growthProblem(g: Growth): string | undefined {
  if (g.skipped) return undefined;
  const problems: string[] = [];
  const base = Math.max(g.memFrom, g.freshMb ?? 0);
  if (g.windowMs >= RSS_MIN_WINDOW_MS && g.memTo > base * 1.1) {
    problems.push(`${g.memKind} ${g.memFrom.toFixed(0)} → ${g.memTo.toFixed(0)} MB${g.freshMb === undefined ? '' : ` (a fresh set on the final data: ${g.freshMb.toFixed(0)} MB)`}`);
  }
  if (g.fdsCapPerProcess !== undefined && g.processesFrom !== undefined && g.processesTo !== undefined) {
    if (g.processesTo > g.processesFrom * 1.1 + 1) problems.push(`processes ${g.processesFrom} → ${g.processesTo}`);
    if (g.fdsTo > g.processesTo * g.fdsCapPerProcess) problems.push(`fds ${g.fdsTo}, over ${g.processesTo} processes × ${g.fdsCapPerProcess}`);
  } else if (g.fdsTo > g.fdsFrom * 1.1 + 4) problems.push(`fds ${g.fdsFrom} → ${g.fdsTo}`);
  if (g.mcpTo !== undefined && g.mcpFrom !== undefined && g.mcpTo > g.mcpFrom) problems.push(`MCP connections ${g.mcpFrom} → ${g.mcpTo}`);
  return problems.length ? `${g.name} (pid ${g.pid}): ${problems.join(', ')}` : undefined;
}
