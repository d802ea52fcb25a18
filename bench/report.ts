/** The printed report: the machine, every section's table and the targets. */
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import type { ScaleResult } from './sections/scale';
import { temporalCli } from '../tests/helpers/system';
import type { PoolingResult } from './lib/pooling';
import { ms, round, table, type Summary } from './lib/stats';
import type { Options } from './options';
import type { LatencyRow } from './sections/latency';
import { renderStreaming, type StreamingResult } from './sections/streaming';
import type { ThroughputRow } from './sections/throughput';

export function machine() {
  const cpus = os.cpus();
  let temporal = 'unknown';
  try {
    temporal = execFileSync(temporalCli(), ['--version'], { encoding: 'utf8' }).trim();
  } catch {
    // reported as unknown
  }
  return {
    nproc: cpus.length,
    cpuModel: cpus[0]?.model ?? 'unknown',
    totalMemGiB: round(os.totalmem() / 2 ** 30, 1),
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    loadAvgAtStart: os.loadavg().map((l) => round(l, 2)),
    node: process.version,
    temporalCli: temporal,
  };
}


/** `a / b` as a ratio with two decimals (`n/a` when b is 0 or not a number). */
const ratio = (a: number, b: number): string => (Number.isFinite(a / b) && b > 0 ? `${(a / b).toFixed(2)}x` : 'n/a');

export function render(
  m: ReturnType<typeof machine>,
  opts: Options,
  latency: LatencyRow[],
  api: Summary | undefined,
  throughput: { rows: ThroughputRow[]; skipped: number[] },
  pooling: PoolingResult[],
  streaming: StreamingResult | undefined,
  targets: Array<{ target: string; measured: string; met: boolean }>,
  scale?: ScaleResult,
): string {
  const out: string[] = [];
  out.push(`Machine: ${m.nproc} CPUs (${m.cpuModel}), ${m.totalMemGiB} GiB, ${m.platform}, Node ${m.node}, ${m.temporalCli}`);
  out.push(
    `Load average (1/5/15 min) at start: ${m.loadAvgAtStart.join(' ')}, at the end: ${os.loadavg().map((l) => l.toFixed(2)).join(' ')} (other processes on the machine count too)`,
  );
  out.push(
    `Durable path: ${opts.workers} worker process(es), default worker options; each turn in a new session (the message appended to the session index, ` +
      'then the turn started with the turns before it: decision 0033), via the API\'s gateway code, result awaited with the Temporal client.',
  );
  out.push(
    "Floor: Temporal's own cost for the same shape, measured in the same run on the same dev server: a workflow started directly with " +
      'as many local and regular activities as the durable turn records in its history, run one after another, doing nothing, on a worker process of its own.',
  );
  out.push('');
  const apiLine = api
    ? `Through the HTTP API (POST → SSE 'done', poll 25 ms), 1 tool step, ${api.n} turns: p50 ${ms(api.p50)} ms, p99 ${ms(api.p99)} ms` +
      (latency[0] ? ` (durable via client p50 ${ms(latency[0].durable.p50)} ms)` : '')
    : undefined;
  if (latency.length > 0) {
    out.push(`1. Latency per turn (ms), ${opts.turns} sequential turns per path, interleaved; each tool step = 1 LLM call + 2 parallel MCP calls`);
    out.push(
      table(
        [
          'tool steps',
          'floor shape',
          'in-process p50',
          'in-process p99',
          'durable p50',
          'durable p99',
          'floor p50',
          'floor p99',
          'durable/floor p50',
          'durable/floor p99',
          'durable/in-process p50',
          'added/step p50',
        ],
        latency.map((r) => [
          String(r.toolSteps),
          `${r.shape.local} local + ${r.shape.regular}`,
          ms(r.inProcess.p50),
          ms(r.inProcess.p99),
          ms(r.durable.p50),
          ms(r.durable.p99),
          ms(r.floor.p50),
          ms(r.floor.p99),
          ratio(r.durable.p50, r.floor.p50),
          ratio(r.durable.p99, r.floor.p99),
          ratio(r.durable.p50, r.inProcess.p50),
          ms(r.addedPerStep.p50),
        ]),
      ),
    );
    const first = latency[0];
    const last = latency[latency.length - 1];
    if (first && last && last.toolSteps > first.toolSteps) {
      const slope = (last.addedPerTurn.p50 - first.addedPerTurn.p50) / (last.toolSteps - first.toolSteps);
      out.push(`Marginal added latency per extra tool step (p50 slope ${first.toolSteps}→${last.toolSteps} steps): ${ms(slope)} ms`);
    }
    if (apiLine) out.push(apiLine);
    out.push('');
    out.push('Where a durable turn spends its time (mean ms per turn; critical path from workflow history)');
    out.push(
      table(
        [
          'tool steps',
          'client latency',
          'outside history',
          'WFT queued',
          'WFT running',
          'activity queued',
          'activity running',
          'other',
          'in-process work',
          'WFTs',
          'activities',
          'history KB',
          'CPU temporal',
          'CPU worker',
          'floor CPU temporal',
          'floor CPU worker',
          'CPU/floor temporal',
          'CPU/floor worker',
        ],
        latency.map((r) => [
          String(r.toolSteps),
          ms(r.durable.mean),
          ms(r.breakdown.outsideHistoryMean),
          ms(r.breakdown.byCategoryMean.workflowQueued),
          ms(r.breakdown.byCategoryMean.workflowTask),
          ms(r.breakdown.byCategoryMean.activityQueued),
          ms(r.breakdown.byCategoryMean.activityRunning),
          ms(r.breakdown.byCategoryMean.other),
          ms(r.inProcessWork.llmMs + r.inProcessWork.toolMs),
          r.breakdown.workflowTasks.toFixed(0),
          r.breakdown.activities.toFixed(0),
          (r.breakdown.historyBytes / 1024).toFixed(1),
          ms(r.cpuPerDurableTurn.temporal),
          ms(r.cpuPerDurableTurn.workers),
          ms(r.cpuPerFloorTurn.temporal),
          ms(r.cpuPerFloorTurn.workers),
          ratio(r.cpuPerDurableTurn.temporal, r.cpuPerFloorTurn.temporal),
          ratio(r.cpuPerDurableTurn.workers, r.cpuPerFloorTurn.workers),
        ]),
      ),
    );
    out.push(
      'outside history = client latency - history span (start RPC before the first event, result delivery after the last); ' +
        'in-process work = LLM calls + tool phases of the in-process turn (what "activity running" would be with zero overhead); ' +
        'CPU = CPU ms per turn used by the Temporal dev server and the worker process(es), in blocks of durable turns only and floor turns only.',
    );
    out.push('');
  }
  if (apiLine && latency.length === 0) out.push(apiLine, '');
  if (throughput.rows.length + throughput.skipped.length > 0) {
    out.push(`2. Throughput, 1-tool-step turns, ${opts.total} turns per level and path`);
    out.push(
      table(
        [
          'concurrency',
          'in-process turns/s',
          'in-process p50',
          'in-process p99',
          'durable turns/s',
          'durable p50',
          'durable p99',
          'floor turns/s',
          'floor p50',
          'durable/floor turns/s',
          'durable/floor p50',
          'CPU/turn temporal',
          'CPU/turn worker',
          'floor CPU/turn temporal',
          'floor CPU/turn worker',
          'CPU/turn bench',
        ],
        throughput.rows.map((r) => [
          String(r.concurrency),
          r.inProcess.turnsPerSecond.toFixed(1),
          ms(r.inProcess.latency.p50),
          ms(r.inProcess.latency.p99),
          r.durable.turnsPerSecond.toFixed(1),
          ms(r.durable.latency.p50),
          ms(r.durable.latency.p99),
          r.floor.turnsPerSecond.toFixed(1),
          ms(r.floor.latency.p50),
          ratio(r.durable.turnsPerSecond, r.floor.turnsPerSecond),
          ratio(r.durable.latency.p50, r.floor.latency.p50),
          ms(r.durable.cpuPerTurn.temporal),
          ms(r.durable.cpuPerTurn.workers),
          ms(r.floor.cpuPerTurn.temporal),
          ms(r.floor.cpuPerTurn.workers),
          ms(r.durable.cpuPerTurn.bench ?? Number.NaN),
        ]),
      ),
    );
    out.push('CPU/turn: CPU ms per durable turn of the dev server, the worker(s) and this process (Temporal client + demo model).');
    if (throughput.skipped.length > 0) out.push(`Skipped (time budget): concurrency ${throughput.skipped.join(', ')}`);
    out.push('');
  }
  if (pooling.length > 0) {
    out.push(`3. stdio tool call: pooled (${opts.pooled} calls) vs connect-per-call (${opts.perCall} calls: spawn + initialize + call + close), ms`);
    out.push(
      table(
        ['call', 'pooled p50', 'pooled p99', 'per-call p50', 'per-call p99', 'speedup p50', 'speedup p99'],
        pooling.map((p) => [
          p.label,
          ms(p.pooled.p50),
          ms(p.pooled.p99),
          ms(p.connectPerCall.p50),
          ms(p.connectPerCall.p99),
          `${p.ratioP50.toFixed(0)}x`,
          `${p.ratioP99.toFixed(0)}x`,
        ]),
      ),
    );
    out.push('');
  }
  if (streaming) out.push(renderStreaming(streaming), '');
  if (scale) out.push(renderScale(scale, opts), '');
  out.push('Targets (reported, not enforced)');
  out.push(table(['target', 'measured', 'met'], targets.map((t) => [t.target, t.measured, t.met ? 'yes' : 'no'])));
  return out.join('\n');
}


function renderScale(scale: ScaleResult, opts: Options): string {
  const h = scale.history;
  return [
    `5. Scale-out on ${opts.temporal === 'cluster' ? 'the full Temporal server (v1.32.2, scripts/temporal-cluster.sh) on PostgreSQL' : 'the Temporal dev server'}: API processes and workers sharing PostgreSQL, 1-tool-step turns through the HTTP API, ${opts.scaleTurns} per row at concurrency ${scale.concurrency}`,
    table(
      ['workers', 'APIs', 'turns/s', 'vs 1 worker, 1 API', 'p50', 'p99', 'PG commits/turn', 'PG rows written/turn', 'NOTIFY/turn', 'CPU/turn workers', 'CPU/turn temporal'],
      scale.rows.map((r) => [
        String(r.workers),
        String(r.apis),
        r.turnsPerSecond.toFixed(2),
        `${r.ratio.toFixed(2)}x`,
        ms(r.p50Ms),
        ms(r.p99Ms),
        r.perTurn.pgCommits.toFixed(1),
        r.perTurn.pgRowsWritten.toFixed(1),
        r.perTurn.notifies.toFixed(2),
        ms(r.perTurn.cpuWorkersMs),
        ms(r.perTurn.cpuTemporalMs),
      ]),
    ),
    `History of one 1-step turn: ${h.turnEvents} events, ${(h.turnBytes / 1024).toFixed(1)} KB; its session (first turn): ${h.sessionEvents} events, ${(h.sessionBytes / 1024).toFixed(1)} KB.`,
    'PG commits and rows: the host database (rate limits, audit chain, worker reports, OAuth), from pg_stat_database; NOTIFY: live-text bus messages seen by a listener.',
  ].join('\n');
}
