/**
 * 1. Latency per turn: in-process host loop, the durable turn, and Temporal's floor (a workflow of the
 * turn's shape with no-op activities), interleaved; the history breakdown; CPU per turn of the durable
 * turn and of the floor, each measured in a block of its own.
 */
import type { TestSystem } from '../../tests/helpers/system';
import { CATEGORIES, turnBreakdown, type Category, type TurnBreakdown } from '../lib/history';
import { STEP_COUNTS } from '../lib/scripts';
import { summarize, type Summary } from '../lib/stats';
import { log, type Options } from '../options';
import type { FloorShape } from '../floor/workflows';
import type { Paths } from '../paths';
import { cpuSplit, floorPids, meter, type Pids } from './cpu';

export interface LatencyRow {
  toolSteps: number;
  llmSteps: number;
  turns: number;
  inProcess: Summary;
  durable: Summary;
  /** Temporal's floor for this shape of turn. */
  floor: Summary;
  shape: FloorShape;
  addedPerTurn: { p50: number; p99: number };
  addedPerStep: { p50: number; p99: number };
  /** Mean wall time per in-process turn inside LLM calls and tool phases: the work itself. */
  inProcessWork: { llmMs: number; toolMs: number };
  breakdown: { spanMean: number; outsideHistoryMean: number; byCategoryMean: Record<Category, number>; workflowTasks: number; activities: number; historyEvents: number; historyBytes: number };
  /** CPU ms per durable turn of the Temporal dev server and the worker process(es), in a block of durable turns only. */
  cpuPerDurableTurn: { temporal: number; workers: number };
  /** The same for the floor: the dev server and the floor's worker. */
  cpuPerFloorTurn: { temporal: number; workers: number };
}

/** Turns per CPU block (durable, then floor), after the interleaved latency runs. */
const cpuTurns = (opts: Options): number => Math.min(opts.turns, 30);

async function cpuPerTurn(pids: Pids, turns: number, run: () => Promise<unknown>): Promise<{ temporal: number; workers: number }> {
  const cpu = meter(pids, false);
  for (let i = 0; i < turns; i++) await run();
  const used = cpuSplit(cpu.stop(), turns);
  return { temporal: used.temporal, workers: used.workers };
}


export async function latencySection(sys: TestSystem, pids: Pids, paths: Paths, opts: Options, resetNotes: () => void): Promise<LatencyRow[]> {
  const rows: LatencyRow[] = [];
  for (const toolSteps of STEP_COUNTS) {
    resetNotes();
    log(`latency: ${toolSteps} tool step(s): ${opts.warmup} warm-up + ${opts.turns} measured turns per path (in-process, durable, floor), interleaved`);
    // The floor copies the shape of a real turn of this configuration.
    const shape = await paths.shapeOf(await paths.durable(toolSteps));
    for (let i = 0; i < opts.warmup; i++) {
      await paths.inProcess(toolSteps);
      await paths.durable(toolSteps);
      await paths.floor(shape);
    }
    const inProcess: number[] = [];
    const durable: number[] = [];
    const floor: number[] = [];
    const ids: string[] = [];
    const work = { llmMs: 0, toolMs: 0 };
    const rotations = [['in', 'du', 'fl'], ['du', 'fl', 'in'], ['fl', 'in', 'du']] as const;
    for (let i = 0; i < opts.turns; i++) {
      // Rotate which path goes first so none always runs right after another.
      for (const which of rotations[i % 3] ?? rotations[0]) {
        const t0 = performance.now();
        if (which === 'in') {
          const r = await paths.inProcess(toolSteps);
          inProcess.push(performance.now() - t0);
          work.llmMs += r.llmMs / opts.turns;
          work.toolMs += r.toolMs / opts.turns;
        } else if (which === 'du') {
          ids.push(await paths.durable(toolSteps));
          durable.push(performance.now() - t0);
        } else {
          await paths.floor(shape);
          floor.push(performance.now() - t0);
        }
      }
    }
    log(`latency: ${toolSteps} tool step(s): CPU blocks of ${cpuTurns(opts)} durable, then floor, turns`);
    const cpuDurable = await cpuPerTurn(pids, cpuTurns(opts), () => paths.durable(toolSteps));
    const cpuFloor = await cpuPerTurn(floorPids(pids), cpuTurns(opts), () => paths.floor(shape));
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
      floor: summarize(floor),
      shape,
      addedPerTurn: { p50: duS.p50 - inS.p50, p99: duS.p99 - inS.p99 },
      addedPerStep: { p50: (duS.p50 - inS.p50) / llmSteps, p99: (duS.p99 - inS.p99) / llmSteps },
      inProcessWork: work,
      cpuPerDurableTurn: cpuDurable,
      cpuPerFloorTurn: cpuFloor,
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

