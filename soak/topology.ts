import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { freePort, type ManagedProcess } from '../src/cli/processes';
import type { DemoRules } from '../src/demo-model/rules';
import { startApiProcess } from '../tests/helpers/api-process';
import { startPostgres, type TestPostgres } from '../tests/helpers/postgres';
import { SCHOOL, SCHOOL_HOST, startSchoolSystem, type SchoolSystem } from '../tests/helpers/school';
import { defaultHostConfig } from '../tests/helpers/system';
import { startTemporalCluster } from '../tests/helpers/temporal-cluster';
import { soakAllocator, type Allocator } from './allocator';
import { startProxy, type Proxy } from './proxy';

/**
 * The scale-out topology of tests/e2e/scale-out.suite.ts, kept running under faults: two API
 * processes behind the soak's proxy, three workers, the full Temporal server on PostgreSQL, the
 * shared bus (a second PostgreSQL: live text, rate limits, worker reports, the audit chain), the
 * school servers. A process that exits is started again (a kill is a crash, not a removal).
 */
export interface Slot {
  name: string;
  proc: ManagedProcess;
  /** Starts counted by the supervisor: kills planned by the schedule, and exits nobody asked for. */
  planned: number;
  unplanned: number;
  /** The process's GET /metrics (a worker's WORKER_METRICS_PORT, new at each start; an API's, with METRICS_TOKEN). */
  metrics?: { url: string; token?: string };
}

export interface Topology {
  sys: SchoolSystem;
  proxy: Proxy;
  apis: Slot[];
  workers: Slot[];
  temporalProc(): ManagedProcess;
  bus: TestPostgres;
  /** The allocator the API replicas and workers run with (soak/allocator.ts). */
  allocator: Allocator;
  /** Unplanned exits seen (name, time, output tail). */
  crashes: Array<{ name: string; at: number; tail: string }>;
  /** Adds a student with an email and one unpaid invoice (through the admin server, as an operator would). */
  seedStudents(names: string[]): Promise<void>;
  killWorker(i: number): Promise<void>;
  killApi(i: number): Promise<void>;
  restartPayments(): Promise<void>;
  restartBus(): Promise<void>;
  restartTemporal(): Promise<void>;
  stop(): Promise<void>;
}

const LONG = Array.from({ length: 120 }, (_, i) => `word${i}`).join(' ');
export const LONG_TEXT = LONG;

/**
 * How many workflows Temporal's history service keeps in memory here (8192 by default, as the dev
 * server). A cache that size never fills in a run of minutes, so the server's memory would grow all
 * through the run as the cache fills, bounded but indistinguishable from a leak; at 256 it is full
 * within the warm-up (some 300 turns and sessions), still well above the workflows running at once
 * (a few per user), and whatever grows after it is not the cache.
 */
export const SOAK_TEMPORAL_HOST_CACHE = 256;

/**
 * Temporal's PostgreSQL, for the same reason: its two bounded caches filled through the whole of a
 * 10-minute run at their defaults (its summed PSS 177 → 222 MB and its descriptors 2883 → 3610 over
 * the five minutes after warm-up, 2026-11-26): the shared buffers (128 MB) as the stored histories grow,
 * and each backend's cache of open relation files (up to 1000 per backend) as its ~30 backends come
 * to touch every table and index. Small, both fill within the warm-up.
 */
export const SOAK_TEMPORAL_PG_FILES_PER_PROCESS = 64;
export const SOAK_TEMPORAL_PG_SETTINGS = ['shared_buffers=16MB', `max_files_per_process=${SOAK_TEMPORAL_PG_FILES_PER_PROCESS}`];

/**
 * Temporal's connection pools to that PostgreSQL (TEMPORAL_SQL_MAX_CONNS; 20 for the main store by
 * default, half for visibility). They open connections as load peaks and keep them, so its backends,
 * each with its own descriptors, kept coming past the warm-up (descriptors 2261 → 2535 in the five
 * minutes after it, 2026-11-26). At 8 and 4 they are full within the warm-up.
 */
export const SOAK_TEMPORAL_SQL_MAX_CONNS = 8;
const temporalOptions = { hostCache: SOAK_TEMPORAL_HOST_CACHE, postgresSettings: SOAK_TEMPORAL_PG_SETTINGS, sqlMaxConns: SOAK_TEMPORAL_SQL_MAX_CONNS };

/**
 * Each worker's sticky cache (WORKER_MAX_CACHED_WORKFLOWS), for the same reason again. At the SDK's
 * default (about 1,100 runs here) a worker kept every run whose task it last took, so the runs cached
 * on the longest-lived worker went from 16-21 to 42-64 over a run (2026-11-26) while its main-thread
 * heap stayed flat. At 32, above the ~17 turns a worker runs at once, the cache is full within the
 * warm-up, and whatever grows after it is not the cache.
 */
export const SOAK_WORKER_CACHED_WORKFLOWS = 32;

/**
 * The V8 old generation of the API replicas and the workers (`--max-old-space-size`, MB), for the
 * same reason once more. V8 keeps the pages of its heap's highest saw (its memory reducer only gives
 * them back when the process goes idle, which a loaded replica never does), so a replica's RSS rose in
 * a step the first time the whole load came onto it, minutes after the warm-up, and stayed (api-2:
 * 196 → 250 MB while its heap's floor stayed at 52-54 MB, 2026-11-26). Uncapped, V8 lets the heap grow
 * to several times what is live before a full collection; capped at about twice the most seen live
 * (API 52-57 MB, worker 71-93 MB), the saw reaches its top within the warm-up. The run with the API at
 * 96: its RSS held 163 → 169 MB, 4043 turns, p50 2.8 s (docs/RELIABILITY.md).
 */
export const SOAK_API_OLD_SPACE_MB = 96;
export const SOAK_WORKER_OLD_SPACE_MB = 160;

/**
 * `onStop` hears, as soon as the first process is up, how to stop everything started so far and
 * everything started later (a signal mid-start must not leave the engines running).
 */
export async function startTopology(rules: DemoRules, log: (line: string) => void, onStop: (stop: () => Promise<void>) => void = () => undefined): Promise<Topology> {
  const allocator = soakAllocator();
  const soakRules: DemoRules = { ...rules, scripts: [{ name: 'long', match: '^long', steps: [{ text: LONG }] }, ...(rules.scripts ?? [])] };
  log('starting Temporal (the full server on PostgreSQL), the demo model and the school servers');
  const sys = await startSchoolSystem({ rules: soakRules, toolDelays: 'process_payment=300', temporal: (dir) => startTemporalCluster(dir, temporalOptions) });
  let stopping = false;
  const crashes: Topology['crashes'] = [];
  let temporal = sys.temporal.proc;
  const stopAll = async (): Promise<void> => {
    stopping = true;
    await temporal.stop();
    await sys.stop();
  };
  onStop(stopAll);
  try {
    // The in-process API of the test system is not one of the replicas: its worker goes.
    await sys.worker.stop();
    log('starting the bus (PostgreSQL), two API replicas, the proxy and three workers');
    const bus = await startPostgres();
    sys.onStop(() => bus.stop());
    const hostConfig = path.join(sys.dir, 'host.json');
    writeFileSync(hostConfig, JSON.stringify(defaultHostConfig(SCHOOL_HOST)));
    const liveSecret = randomBytes(16).toString('hex');
    const metricsToken = randomBytes(16).toString('hex');
    log(`API replicas and workers run with ${allocator.name} (${allocator.why})`);
    const apiEnv = { ...allocator.env, NODE_OPTIONS: `--max-old-space-size=${SOAK_API_OLD_SPACE_MB}`, POSTGRES_URL: bus.url, LIVE_SECRET: liveSecret, HOST_CONFIG: hostConfig, RATE_LIMIT_USER_PER_MIN: '10000', RATE_LIMIT_TENANT_PER_MIN: '100000', METRICS_TOKEN: metricsToken };
    const proxy = await startProxy([]);
    sys.onStop(() => proxy.close());
    const workerEnv = { ...allocator.env, NODE_OPTIONS: `--max-old-space-size=${SOAK_WORKER_OLD_SPACE_MB}`, LIVE_PUSH_URL: `${proxy.url}/internal/live`, LIVE_SECRET: liveSecret, POSTGRES_URL: bus.url, AUDIT_STORE: 'postgres', WORKER_MAX_CACHED_WORKFLOWS: String(SOAK_WORKER_CACHED_WORKFLOWS) };

    const supervise = (slot: Slot, start: () => Promise<ManagedProcess>, onStart: (proc: ManagedProcess) => void = () => undefined): void => {
      void slot.proc.exited.then(async () => {
        if (stopping) return;
        if (slot.planned === 0) {
          slot.unplanned++;
          crashes.push({ name: slot.name, at: Date.now(), tail: slot.proc.output().slice(-2_000) });
          log(`${slot.name} exited unplanned: restarting it`);
        } else slot.planned--;
        for (;;) {
          try {
            slot.proc = await start();
            onStart(slot.proc);
            supervise(slot, start, onStart);
            return;
          } catch (err) {
            if (stopping) return;
            log(`${slot.name} did not start (${(err as Error).message}): trying again`);
          }
        }
      });
    };
    const apis: Slot[] = [];
    for (let i = 0; i < 2; i++) {
      // Each replica serves its metrics (the V8 heap, the live turns it holds) for the sampler.
      const slot = { name: `api-${i + 1}`, planned: 0, unplanned: 0 } as Slot;
      const startApi = async () => {
        const api = await startApiProcess(sys, apiEnv);
        proxy.backends[i] = Number(new URL(api.url).port);
        slot.metrics = { url: `${api.url}/metrics`, token: metricsToken };
        return api.proc;
      };
      slot.proc = await startApi();
      apis.push(slot);
      supervise(slot, startApi);
    }
    const workers: Slot[] = [];
    for (let i = 0; i < 3; i++) {
      // Each worker serves its metrics (the SDK's sticky cache, the V8 heap) for the sampler.
      const slot = { name: `worker-${i + 1}`, planned: 0, unplanned: 0 } as Slot;
      const startWorker = async () => {
        const port = await freePort();
        const proc = await sys.startWorker({ ...workerEnv, WORKER_METRICS_PORT: String(port) });
        slot.metrics = { url: `http://127.0.0.1:${port}/metrics` };
        return proc;
      };
      slot.proc = await startWorker();
      workers.push(slot);
      supervise(slot, startWorker);
    }
    const kill = async (slot: Slot | undefined) => {
      if (!slot) return;
      slot.planned++;
      const exited = slot.proc;
      await exited.kill();
      // Back once the supervisor's new process is ready.
      for (let i = 0; i < 1_200 && slot.proc === exited; i++) await new Promise((r) => setTimeout(r, 100));
    };
    return {
      sys, proxy, apis, workers, bus, crashes, allocator,
      temporalProc: () => temporal,
      async seedStudents(names) {
        const client = new Client({ name: 'soak-seed', version: '1' });
        await client.connect(new StdioClientTransport({ command: process.execPath, args: [SCHOOL('admin'), '--stdio', '--data', sys.dataFile], stderr: 'ignore' }));
        try {
          for (const name of names) {
            const added = await client.callTool({ name: 'add_user', arguments: { name, role: 'student', email: `${name.toLowerCase()}@soak.example` } });
            const userId = (added.structuredContent as { user: { id: string } }).user.id;
            await client.callTool({ name: 'issue_invoice', arguments: { userId, amount: 100, description: `soak ${name}` } });
          }
        } finally {
          await client.close();
        }
      },
      killWorker: (i) => kill(workers[i % workers.length]),
      killApi: (i) => kill(apis[i % apis.length]),
      async restartPayments() {
        await sys.payments().kill();
        await sys.startPayments();
      },
      async restartBus() {
        await bus.down();
        await bus.up();
      },
      async restartTemporal() {
        // The script stops the server, then its PostgreSQL (30 s of grace each); killed sooner, it would
        // leave PostgreSQL running on the port the restart needs.
        await temporal.stop(120_000);
        for (let attempt = 1; ; attempt++) {
          try {
            temporal = (await startTemporalCluster(sys.dir, { ...temporalOptions, resume: true })).proc;
            return;
          } catch (err) {
            // PostgreSQL may still be shutting down on a loaded machine: again, a few times.
            if (attempt >= 5) throw err;
            log(`Temporal did not start again (${(err as Error).message.split('\n')[0] ?? ''}): trying again`);
            await new Promise((r) => setTimeout(r, 5_000));
          }
        }
      },
      stop: stopAll,
    };
  } catch (err) {
    await stopAll();
    throw err;
  }
}
