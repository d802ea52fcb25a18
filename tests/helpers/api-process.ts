import path from 'node:path';
import { freePort, spawnManaged, type ManagedProcess } from '../../src/cli/processes';
import { DIST, JWT_AUDIENCE, JWT_ISSUER, ROOT, type TestSystem } from './system';

/**
 * An API process (dist/src/api/main.js) on the test system's Temporal and task queue, with its JWT
 * settings, on a free port of 127.0.0.1; stopped with the system. `env` adds to or overrides it
 * (POSTGRES_URL, LIVE_SECRET, HOST_CONFIG, limits, OTEL_* ...).
 */
export async function startApiProcess(sys: Pick<TestSystem, 'temporal' | 'taskQueue' | 'jwtSecret' | 'onStop' | 'workerEnv'>, env: NodeJS.ProcessEnv = {}): Promise<{ proc: ManagedProcess; url: string }> {
  const { proc, match } = await spawnManaged('api', process.execPath, [path.join(DIST, 'src/api/main.js')], {
    env: {
      ...process.env,
      TEMPORAL_ADDRESS: sys.temporal.address,
      TASK_QUEUE: sys.taskQueue,
      JWT_SECRET: sys.jwtSecret,
      JWT_ISSUER,
      JWT_AUDIENCE,
      API_HOST: '127.0.0.1',
      API_PORT: String(await freePort()),
      LOG_LEVEL: 'warn',
      // Payloads stored by reference: where the system's worker stores them.
      ...(sys.workerEnv['CLAIM_CHECK_DIR'] ? { CLAIM_CHECK_DIR: sys.workerEnv['CLAIM_CHECK_DIR'] } : {}),
      ...env,
    },
    cwd: ROOT,
    readyLine: /^API_URL=(\S+)/,
  });
  sys.onStop(() => proc.stop());
  return { proc, url: match?.[1] ?? '' };
}
