import type { EffectFigures } from './effects';
import { endedCompleted, growthProblem, percentile, RSS_MIN_WINDOW_MS, type FaultMark, type Growth, type TurnFigures } from './figures';

/** The soak's verdict and its Markdown report (the table docs/RELIABILITY.md shows). */
export interface SoakFigures {
  users: number;
  minutes: number;
  /** The allocator of the API replicas and workers, and why (soak/allocator.ts). */
  allocator: string;
  /** Their V8 old generation's cap (`--max-old-space-size`, soak/topology.ts), when the run set one. */
  oldSpaceMb?: { api: number; worker: number };
  start: number;
  end: number;
  /** How long turns in flight had after the users stopped, and the extra window lost turns were read again in (ms). */
  drainMs: number;
  lateMs: number;
  turns: TurnFigures;
  effects: EffectFigures;
  latency: Array<{ t: number; p50: number; p99: number; n: number }>;
  overall: { p50: number; p99: number };
  growth: Growth[];
  faults: FaultMark[];
  crashes: Array<{ name: string; at: number }>;
  approvals: number;
  histories: { turns: number; eventsP50: number; eventsMax: number; bytesP50: number; bytesMax: number };
}

export function failures(f: SoakFigures): string[] {
  const out: string[] = [];
  if (f.turns.submitted === 0) out.push('no turn was submitted');
  if (f.turns.lost > 0) out.push(`${f.turns.lost} turns lost (no end seen by the client nor by the turn's record, even ${s(f.lateMs)} after the drain)`);
  const withoutReason = f.turns.failedWithoutReason + f.turns.lateWithoutReason;
  if (withoutReason > 0) out.push(`${withoutReason} turns failed without a reason`);
  if (f.turns.streamFaults.length > 0) out.push(`${f.turns.streamFaults.length} streams missed or repeated an event: ${f.turns.streamFaults.slice(0, 5).map((s) => `${s.turnId} (${s.via}): ${s.problem}`).join('; ')}`);
  const dup = f.effects.extraCharges + f.effects.extraRefunds + f.effects.extraReceipts;
  if (dup > 0) out.push(`${dup} duplicated effects: ${f.effects.details.slice(0, 5).join('; ')}`);
  if (f.effects.missingCharges > 0) out.push(`${f.effects.missingCharges} payments said done without their charge`);
  for (const g of f.growth) {
    const problem = growthProblem(g);
    if (problem) out.push(problem);
  }
  for (const fault of f.faults) if (fault.name.includes('(failed')) out.push(`fault ${fault.name}`);
  return out;
}

const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** A process's heap, its memory outside the heap and of mapped files, and a worker's sticky cache or an API's live turns, over its window, as far as its metrics answered. */
function processFigures(g: Growth): string {
  const parts: string[] = [];
  if (g.heapFrom !== undefined) {
    const floor = g.heapLiveFrom === undefined ? '' : `after a full collection ${g.heapLiveFrom.toFixed(0)} → ${(g.heapLiveTo ?? 0).toFixed(0)}`;
    const committed = g.heapTotalFrom === undefined ? '' : `committed ${g.heapTotalFrom.toFixed(0)} → ${(g.heapTotalTo ?? 0).toFixed(0)}`;
    const more = [floor, committed].filter(Boolean).join('; ');
    parts.push(`heap ${g.heapFrom.toFixed(0)} → ${(g.heapTo ?? 0).toFixed(0)}${more ? ` (${more})` : ''}`);
  }
  if (g.externalFrom !== undefined) parts.push(`outside the heap ${g.externalFrom.toFixed(0)} → ${(g.externalTo ?? 0).toFixed(0)}`);
  if (g.rssFileFrom !== undefined) parts.push(`RSS of mapped files ${g.rssFileFrom.toFixed(0)} → ${(g.rssFileTo ?? 0).toFixed(0)}`);
  if (g.stickyFrom !== undefined) parts.push(`sticky ${g.stickyFrom.toFixed(0)} → ${(g.stickyTo ?? 0).toFixed(0)}`);
  if (g.liveFrom !== undefined) parts.push(`live turns ${g.liveFrom.toFixed(0)} → ${(g.liveTo ?? 0).toFixed(0)}`);
  return parts.join(', ');
}

/** The late turns and how their records say they ended, e.g. `3 (2 completed, 1 failed)`. */
export function lateRow(t: TurnFigures): string {
  const ended = Object.entries(t.lateEnded).map(([status, n]) => `${n} ${status}`);
  return `${t.late}${ended.length ? ` (${ended.join(', ')})` : ''}`;
}

export function markdown(f: SoakFigures, failed: string[], command: string): string {
  const t = f.turns;
  const lines = [
    `Command: \`${command}\` — ${f.users} users, ${f.minutes} min, ${new Date(f.start).toISOString()}; verdict: **${failed.length === 0 ? 'pass' : 'FAIL'}**`,
    '',
    '| figure | value |',
    '|---|---|',
    `| allocator of the API replicas and workers | ${f.allocator} |`,
    ...(f.oldSpaceMb ? [`| V8 old generation cap (API replicas / workers) | ${f.oldSpaceMb.api} MB / ${f.oldSpaceMb.worker} MB |`] : []),
    `| turns submitted | ${t.submitted} (+ ${t.refused} messages refused before a turn) |`,
    `| completed | ${t.completed} |`,
    `| failed, with a reason | ${t.failed - t.failedWithoutReason} |`,
    `| failed without a reason | ${t.failedWithoutReason} |`,
    `| cancelled | ${t.cancelled} |`,
    `| lost | ${t.lost} |`,
    `| late (ended after the ${s(f.drainMs)} drain, within the next ${s(f.lateMs)}; not a failure) | ${lateRow(t)} |`,
    `| streams that missed or repeated an event | ${t.streamFaults.length} (client reconnects: ${t.reconnects}; ${t.streamsCutAtDeadline} followed until the run's deadline only, judged up to their last event) |`,
    `| charges / refunds / receipt mails in the school store | ${f.effects.charges} / ${f.effects.refunds} / ${f.effects.receipts} |`,
    `| duplicated effects (extra charges, refunds, mails) | ${f.effects.extraCharges}, ${f.effects.extraRefunds}, ${f.effects.extraReceipts} |`,
    `| payments said done without their charge | ${f.effects.missingCharges} |`,
    `| approvals answered by the second client | ${f.approvals} |`,
    `| turn latency p50 / p99 (whole run, late turns included) | ${s(f.overall.p50)} / ${s(f.overall.p99)} |`,
    `| history size p50 / max (events) | ${f.histories.eventsP50} / ${f.histories.eventsMax} (${f.histories.turns} turns) |`,
    `| history size p50 / max (bytes) | ${f.histories.bytesP50} / ${f.histories.bytesMax} |`,
    `| unplanned process exits | ${f.crashes.length}${f.crashes.length ? ` (${f.crashes.map((c) => `${c.name} at ${s(c.at - f.start)}`).join(', ')})` : ''} |`,
    '',
    'Faults (time into the run, time until the process was back):',
    '',
    ...f.faults.map((x) => `- ${s(x.at - f.start)}: ${x.name} (${s(x.end - x.at)})`),
    '',
    'Failure reasons:',
    '',
    ...(Object.keys(t.reasons).length ? Object.entries(t.reasons).map(([r, n]) => `- ${n} × ${r}`) : ['- none']),
    '',
    '| window (min) | turns completed (late included) | p50 | p99 |',
    '|---|---|---|---|',
    ...f.latency.map((b) => `| ${((b.t - f.start) / 60_000).toFixed(1)} | ${b.n} | ${s(b.p50)} | ${s(b.p99)} |`),
    '',
    ...(f.growth.some((g) => g.memKind === 'RSS held')
      ? ['`RSS held`: the RSS less the heap the process had not collected yet (heap in use minus the heap after its last full collection): the saw of a V8 heap, minutes long under load, does not decide the verdict.', '']
      : []),
    '| process (pid) | memory after its warm-up → end (MB; medians of the first and last quarter) | fds (most in the first half → end) | MCP connections (same) | V8 heap used (MB; after a full collection, committed); sticky cache of a worker (runs), live turns of an API (same quarters) | judged |',
    '|---|---|---|---|---|---|',
    ...f.growth.map(
      (g) =>
        `| ${g.name} (${g.pid}) | ${g.memKind} ${g.memFrom.toFixed(0)} → ${g.memTo.toFixed(0)}${g.freshMb === undefined ? '' : ` (fresh on the final data: ${g.freshMb.toFixed(0)})`} | ${g.fdsFrom} → ${g.fdsTo}${g.processesFrom === undefined ? '' : ` (processes ${g.processesFrom} → ${g.processesTo ?? ''})`} | ${g.mcpFrom === undefined ? '' : `${g.mcpFrom} → ${g.mcpTo ?? ''}`} | ${processFigures(g)} | ${g.skipped ?? (growthProblem(g) ? 'FAIL' : g.windowMs < RSS_MIN_WINDOW_MS ? 'ok (memory not judged: window under 5 min)' : 'ok')} |`,
    ),
    '',
    ...(failed.length ? ['Failures:', '', ...failed.map((x) => `- ${x}`)] : []),
  ];
  return `${lines.join('\n')}\n`;
}

export const overall = (turns: Array<{ outcome: string; serverStatus?: string; endedAt?: number; submittedAt: number }>) => {
  const lat = turns.filter(endedCompleted).map((x) => (x.endedAt ?? 0) - x.submittedAt);
  return { p50: percentile(lat, 50), p99: percentile(lat, 99) };
};
