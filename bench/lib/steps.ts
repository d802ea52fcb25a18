/**
 * Where two paths of the same schedule differ, step by step: the median of each workflow task and
 * each activity (in history order) over several turns of each path, read from their histories
 * (bench/lib/history.ts). Steps are matched by position, so both paths must run the same schedule:
 * a direct turn and the floor with the turn's I/O do (catalog as a local activity, model, the tool
 * calls in parallel, model).
 */
import type { TurnBreakdown } from './history';
import { table } from './stats';

export interface StepRow {
  step: string;
  a: number;
  b: number;
}

const median = (xs: number[]): number => {
  const s = xs.filter((x) => Number.isFinite(x)).sort((p, q) => p - q);
  if (s.length === 0) return Number.NaN;
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
};

/** The median of each step of `a`'s turns beside the same step of `b`'s (by position; a missing step is NaN). */
export function stepMedians(a: readonly TurnBreakdown[], b: readonly TurnBreakdown[]): StepRow[] {
  const rows: StepRow[] = [];
  const longest = (pick: (t: TurnBreakdown) => unknown[]) => Math.max(0, ...[...a, ...b].map((t) => pick(t).length));
  const at = <T>(turns: readonly TurnBreakdown[], pick: (t: TurnBreakdown) => T[], i: number, value: (s: T) => number) =>
    median(turns.map((t) => pick(t)[i]).filter((s): s is T => s !== undefined).map(value));
  for (let i = 0; i < longest((t) => t.workflowTaskSteps); i++) {
    rows.push({ step: `workflow task ${i + 1}: queued`, a: at(a, (t) => t.workflowTaskSteps, i, (s) => s.queuedMs), b: at(b, (t) => t.workflowTaskSteps, i, (s) => s.queuedMs) });
    rows.push({ step: `workflow task ${i + 1}: running`, a: at(a, (t) => t.workflowTaskSteps, i, (s) => s.runningMs), b: at(b, (t) => t.workflowTaskSteps, i, (s) => s.runningMs) });
  }
  for (let i = 0; i < longest((t) => t.activitySteps); i++) {
    const type = (turns: readonly TurnBreakdown[]) => turns.find((t) => t.activitySteps[i])?.activitySteps[i]?.type ?? '-';
    const name = `activity ${i + 1} (${type(a)} / ${type(b)})`;
    rows.push({ step: `${name}: queued`, a: at(a, (t) => t.activitySteps, i, (s) => s.queuedMs), b: at(b, (t) => t.activitySteps, i, (s) => s.queuedMs) });
    rows.push({ step: `${name}: running`, a: at(a, (t) => t.activitySteps, i, (s) => s.runningMs), b: at(b, (t) => t.activitySteps, i, (s) => s.runningMs) });
  }
  rows.push({ step: 'history span (started → completed)', a: median(a.map((t) => t.spanMs)), b: median(b.map((t) => t.spanMs)) });
  return rows;
}

export function renderSteps(rows: readonly StepRow[], labelA: string, labelB: string): string {
  const f = (n: number) => (Number.isFinite(n) ? n.toFixed(1) : '-');
  const d = (n: number) => (Number.isFinite(n) ? `${n < 0 ? '−' : '+'}${Math.abs(n).toFixed(1)}` : '-');
  return table(['step (median ms)', labelA, labelB, 'difference'], rows.map((r) => [r.step, f(r.a), f(r.b), d(r.a - r.b)]));
}
