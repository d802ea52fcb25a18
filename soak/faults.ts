import type { FaultMark } from './figures';
import type { Topology } from './topology';

/**
 * The schedule of faults over a run of `durationMs`: a worker SIGKILLed every 2 minutes, an API replica
 * every 3 (both scaled down with the run when it is shorter than 10 minutes, so a short run sees each
 * fault more than once), and once each: the payments server killed and started again, the bus's
 * PostgreSQL restarted, the Temporal server (and its PostgreSQL) restarted. Faults run one after the
 * other: one that is due while another is under way starts when that one is back, and the users go on
 * until the last one is back.
 *
 * The kills take turns among worker-1 and worker-2, and always take api-1: worker-3 and api-2 live
 * through the run, so each kind of process has an instance watched long enough past its warm-up for
 * its memory to be judged (a worker of three killed in turn every 2 minutes lives 6 minutes at most).
 */
export const KILLED_WORKERS = 2;
export const KILLED_APIS = 1;

export interface Fault {
  atMs: number;
  name: string;
  run: (topology: Topology) => Promise<void>;
}

export function schedule(durationMs: number): Fault[] {
  const scale = Math.min(1, durationMs / 600_000);
  const faults: Fault[] = [];
  let w = 0;
  for (let at = 120_000 * scale; at < durationMs * 0.95; at += 120_000 * scale) {
    const i = w++;
    faults.push({ atMs: at, name: `kill worker-${(i % KILLED_WORKERS) + 1}`, run: (t) => t.killWorker(i % KILLED_WORKERS) });
  }
  let a = 0;
  for (let at = 180_000 * scale; at < durationMs * 0.95; at += 180_000 * scale) {
    const i = a++;
    faults.push({ atMs: at + 5_000 * scale, name: `kill api-${(i % KILLED_APIS) + 1}`, run: (t) => t.killApi(i % KILLED_APIS) });
  }
  faults.push({ atMs: durationMs * 0.42, name: 'kill payments', run: (t) => t.restartPayments() });
  faults.push({ atMs: durationMs * 0.52, name: 'restart bus PostgreSQL', run: (t) => t.restartBus() });
  faults.push({ atMs: durationMs * 0.7, name: 'restart Temporal', run: (t) => t.restartTemporal() });
  return faults.sort((x, y) => x.atMs - y.atMs);
}

/** Runs the schedule from `start`; resolves with what happened when (each fault's start and end). */
export async function runFaults(topology: Topology, faults: Fault[], start: number, log: (line: string) => void): Promise<FaultMark[]> {
  const marks: FaultMark[] = [];
  for (const f of faults) {
    while (Date.now() < start + f.atMs) await new Promise((r) => setTimeout(r, 200));
    const at = Date.now();
    log(`fault: ${f.name}`);
    try {
      await f.run(topology);
      log(`fault: ${f.name}: back after ${((Date.now() - at) / 1000).toFixed(1)} s`);
    } catch (err) {
      log(`fault: ${f.name} failed: ${(err as Error).message}`);
      marks.push({ at, end: Date.now(), name: `${f.name} (failed: ${(err as Error).message.slice(0, 80)})` });
      continue;
    }
    marks.push({ at, end: Date.now(), name: f.name });
  }
  return marks;
}
