/** 1. Latency per turn: in-process host loop vs the durable turn, interleaved, with the history breakdown. */
import type { TestSystem } from '../../tests/helpers/system';
import { CATEGORIES, turnBreakdown, type Category, type TurnBreakdown } from '../lib/history';
import { STEP_COUNTS } from '../lib/scripts';
import { summarize, type Summary } from '../lib/stats';
import { log, type Options } from '../options';
import type { Paths } from '../paths';
import { cpuSplit, meter, type Pids } from './cpu';

export interface LatencyRow {
  toolSteps: number;
  llmSteps: number;
  turns: number;
  inProcess: Summary;
  durable: Summary;
  addedPerTurn: { p50: number; p99: number };
  addedPerStep: { p50: number; p99: number };
  /** Mean wall time per in-process turn inside LLM calls and tool phases: the work itself. */
  inProcessWork: { llmMs: number; toolMs: number };
  breakdown: { spanMean: number; outsideHistoryMean: number; byCategoryMean: Record<Category, number>; workflowTasks: number; activities: number; historyEvents: number; historyBytes: number };
  /** CPU ms per durable turn of the Temporal dev server and the worker process(es) (idle otherwise). */
  cpuPerDurableTurn: { temporal: number; workers: number };
}


export async function latencySection(sys: TestSystem, pids: Pids, paths: Paths, opts: Options, resetNotes: () => void): Promise<LatencyRow[]> {
  const rows: LatencyRow[] = [];
  for (const toolSteps of STEP_COUNTS) {
    resetNotes();
    log(`latency: ${toolSteps} tool step(s): ${opts.warmup} warm-up + ${opts.turns} measured turns per path, interleaved`);
    for (let i = 0; i < opts.warmup; i++) {
      await paths.inProcess(toolSteps);
      await paths.durable(toolSteps);
    }
    const inProcess: number[] = [];
    const durable: number[] = [];
    const ids: string[] = [];
    const work = { llmMs: 0, toolMs: 0 };
    const cpu = meter(pids, false);
    for (let i = 0; i < opts.turns; i++) {
      // Alternate which path goes first so neither always runs right after the other.
      const order = i % 2 === 0 ? (['in', 'du'] as const) : (['du', 'in'] as const);
      for (const which of order) {
        const t0 = performance.now();
        if (which === 'in') {
          const r = await paths.inProcess(toolSteps);
          inProcess.push(performance.now() - t0);
          work.llmMs += r.llmMs / opts.turns;
          work.toolMs += r.toolMs / opts.turns;
        } else {
          ids.push(await paths.durable(toolSteps));
          durable.push(performance.now() - t0);
        }
      }
    }
    const cpuUsed = cpuSplit(cpu.stop(), opts.turns);
    const breakdowns: TurnBreakdown[] = [];
    for (const id of ids) breakdowns.push(await turnBreakdown(sys.client.workflow.getHandle(id)));
    const mean = (f: (b: TurnBreakdown) => number) => breakdowns.reduce((a, b) => a + f(b), 0) / breakdowns.length;
    const byCategoryMean = Object.fromEntries(CATEGORIES.map((c) => [c, mean((b) => b.byCategory[c])])) as Record<Category, number>;
    const spanMean = mean((b) => b.spanMs);
    const inS = summarize(inProcess);
    const duS = summarize(durable);
    const llmSteps = toolSteps + 1;
    rows.push({
      toolSteps,
      llmSteps,
      turns: opts.turns,
      inProcess: inS,
      durable: duS,
      addedPerTurn: { p50: duS.p50 - inS.p50, p99: duS.p99 - inS.p99 },
      addedPerStep: { p50: (duS.p50 - inS.p50) / llmSteps, p99: (duS.p99 - inS.p99) / llmSteps },
      inProcessWork: work,
      cpuPerDurableTurn: { temporal: cpuUsed.temporal, workers: cpuUsed.workers },
      breakdown: {
        spanMean,
        outsideHistoryMean: duS.mean - spanMean,
        byCategoryMean,
        workflowTasks: mean((b) => b.workflowTasks),
        activities: mean((b) => b.activities),
        historyEvents: mean((b) => b.historyEvents),
        historyBytes: mean((b) => b.historyBytes),
      },
    });
  }
  return rows;
}

