/** 2. Throughput at several concurrency levels: in-process, durable and Temporal's floor, within a time budget. */
import { runConcurrent, summarize, type Summary } from '../lib/stats';
import { log, type Options } from '../options';
import type { Paths } from '../paths';
import { cpuSplit, floorPids, meter, type Pids } from './cpu';

export interface ThroughputRow {
  concurrency: number;
  total: number;
  inProcess: { turnsPerSecond: number; latency: Summary };
  durable: { turnsPerSecond: number; latency: Summary; cpuPerTurn: { temporal: number; workers: number; bench?: number } };
  floor: { turnsPerSecond: number; latency: Summary; cpuPerTurn: { temporal: number; workers: number; bench?: number } };
}

export async function throughputSection(pids: Pids, paths: Paths, opts: Options, resetNotes: () => void, started: number): Promise<{ rows: ThroughputRow[]; skipped: number[] }> {
  const rows: ThroughputRow[] = [];
  const skipped: number[] = [];
  log('throughput: warm-up at concurrency 4');
  const shape = await paths.shapeOf(await paths.durable(1));
  await runConcurrent(16, 4, async () => void (await paths.inProcess(1)));
  await runConcurrent(16, 4, async () => void (await paths.durable(1)));
  await runConcurrent(16, 4, async () => await paths.floor(shape));
  for (const c of opts.levels) {
    const elapsedS = (performance.now() - started) / 1000;
    // A level takes about as long as the previous one did (throughput hardly grows past saturation).
    const prev = rows[rows.length - 1];
    const estimateS = prev
      ? opts.total / prev.inProcess.turnsPerSecond + opts.total / prev.durable.turnsPerSecond + opts.total / prev.floor.turnsPerSecond
      : 0;
    if (elapsedS + estimateS > opts.budgetS) {
      log(`throughput: skipping concurrency ${c}: ${elapsedS.toFixed(0)} s elapsed + ~${estimateS.toFixed(0)} s needed > ${opts.budgetS} s budget`);
      skipped.push(c);
      continue;
    }
    resetNotes();
    log(`throughput: concurrency ${c}, ${opts.total} turns per path`);
    const inRun = await runConcurrent(opts.total, c, async () => void (await paths.inProcess(1)));
    const cpu = meter(pids, true);
    const duRun = await runConcurrent(opts.total, c, async () => void (await paths.durable(1)));
    const cpuPerTurn = cpuSplit(cpu.stop(), opts.total);
    const floorCpu = meter(floorPids(pids), true);
    const flRun = await runConcurrent(opts.total, c, async () => await paths.floor(shape));
    const floorCpuPerTurn = cpuSplit(floorCpu.stop(), opts.total);
    rows.push({
      concurrency: c,
      total: opts.total,
      inProcess: { turnsPerSecond: opts.total / (inRun.wallMs / 1000), latency: summarize(inRun.latencies) },
      durable: { turnsPerSecond: opts.total / (duRun.wallMs / 1000), latency: summarize(duRun.latencies), cpuPerTurn },
      floor: { turnsPerSecond: opts.total / (flRun.wallMs / 1000), latency: summarize(flRun.latencies), cpuPerTurn: floorCpuPerTurn },
    });
  }
  return { rows, skipped };
}

