/** CPU per turn of the processes a section measures: the Temporal dev server, the worker(s), the bench itself. */
import { CpuMeter } from '../lib/stats';

export interface Pids {
  temporal: number;
  workers: number[];
  /** The floor's worker (bench/floor/worker.ts). */
  floorWorker: number;
}

/** The processes the floor runs on: the same dev server, the floor's worker. */
export const floorPids = (pids: Pids): Pids => ({ ...pids, workers: [pids.floorWorker] });

export function meter(pids: Pids, withBench: boolean): CpuMeter {
  const named: Record<string, number> = { temporal: pids.temporal };
  pids.workers.forEach((pid, i) => (named[`worker${i}`] = pid));
  if (withBench) named['bench'] = process.pid;
  return new CpuMeter(named);
}

export function cpuSplit(used: Record<string, number>, turns: number): { temporal: number; workers: number; bench?: number } {
  const workers = Object.entries(used).filter(([k]) => k.startsWith('worker')).reduce((a, [, v]) => a + v, 0);
  return {
    temporal: (used['temporal'] ?? Number.NaN) / turns,
    workers: workers / turns,
    ...(used['bench'] !== undefined ? { bench: used['bench'] / turns } : {}),
  };
}

