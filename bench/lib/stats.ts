import { readdirSync, readFileSync } from 'node:fs';

/** Small numeric and formatting helpers for the benchmark report. */

export interface Summary {
  n: number;
  mean: number;
  p50: number;
  p90: number;
  p95: number;
  p99: number;
  min: number;
  max: number;
}

/** Nearest-rank percentile of an ascending array (p in 0..100). */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))] as number;
}

export function summarize(samples: readonly number[]): Summary {
  const sorted = [...samples].sort((a, b) => a - b);
  const sum = sorted.reduce((a, b) => a + b, 0);
  return {
    n: sorted.length,
    mean: sorted.length ? sum / sorted.length : Number.NaN,
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p95: percentile(sorted, 95),
    p99: percentile(sorted, 99),
    min: sorted[0] ?? Number.NaN,
    max: sorted[sorted.length - 1] ?? Number.NaN,
  };
}

/** Milliseconds with a precision that suits their size. */
export function ms(value: number): string {
  if (!Number.isFinite(value)) return 'n/a';
  if (Math.abs(value) >= 100) return value.toFixed(0);
  if (Math.abs(value) >= 10) return value.toFixed(1);
  return value.toFixed(2);
}

export function round(value: number, digits = 2): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

/** A plain-text table with right-aligned numeric columns; usable as-is in Markdown. */
export function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    `| ${cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join(' | ')} |`;
  const rule = `|${widths.map((w, i) => (i === 0 ? '-'.repeat(w + 2) : `${'-'.repeat(w + 1)}:`)).join('|')}|`;
  return [line(headers), rule, ...rows.map(line)].join('\n');
}

/** Runs `count` jobs with at most `concurrency` in flight; returns each job's latency in ms and the wall time. */
export async function runConcurrent(
  count: number,
  concurrency: number,
  job: (index: number) => Promise<void>,
): Promise<{ latencies: number[]; wallMs: number }> {
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  const lane = async (): Promise<void> => {
    for (;;) {
      const i = next++;
      if (i >= count) return;
      const t0 = performance.now();
      await job(i);
      latencies.push(performance.now() - t0);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, () => lane()));
  return { latencies, wallMs: performance.now() - started };
}

/** CPU time (user + system) a process has used so far, in ms; NaN where /proc is not available. */
export function cpuMs(pid: number): number {
  try {
    // Fields after the command name; utime and stime are the 12th and 13th of those, in clock ticks.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * (1000 / CLOCK_TICKS);
  } catch {
    return Number.NaN;
  }
}
/**
 * CPU ms of a process and all its descendants alive now (e.g. scripts/temporal-cluster.sh: the
 * Temporal server and its PostgreSQL). Descendants that already exited are not counted.
 */
export function cpuTreeMs(root: number): number {
  const parent = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      parent.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // Gone meanwhile.
    }
  }
  const inTree = (pid: number): boolean => {
    for (let p: number | undefined = pid, hops = 0; p !== undefined && p > 1 && hops < 64; p = parent.get(p), hops++) if (p === root) return true;
    return false;
  };
  let total = 0;
  for (const pid of parent.keys()) if (inTree(pid)) total += cpuMs(pid) || 0;
  return total;
}

/** USER_HZ: 100 on every mainstream Linux build. */
const CLOCK_TICKS = 100;

/** CPU ms used by each named process between two points. */
export class CpuMeter {
  private readonly start: Map<string, number>;
  constructor(private readonly pids: Readonly<Record<string, number>>) {
    this.start = new Map(Object.entries(pids).map(([name, pid]) => [name, cpuMs(pid)]));
  }
  stop(): Record<string, number> {
    return Object.fromEntries(Object.entries(this.pids).map(([name, pid]) => [name, cpuMs(pid) - (this.start.get(name) ?? Number.NaN)]));
  }
}
