/**
 * A process that joins a worker liveness registry and records one running call, for the registry
 * tests (tests/unit/liveness-registry.test.ts): `--file DIR` or `--pg URL`, `--token HEX` (the
 * recorded attempt's task token), `--busy` to then block its event loop for good (a live worker too
 * slow to answer anything). Prints `JOINED <worker>` once recorded. Run from dist/ (compiled).
 */
import { Pool } from 'pg';
import { fileLivenessRegistry } from '../../src/liveness/file-registry';
import { postgresLivenessRegistry } from '../../src/liveness/pg-registry';

async function main(): Promise<void> {
  const arg = (name: string) => {
    const i = process.argv.indexOf(name);
    return i >= 0 ? process.argv[i + 1] : undefined;
  };
  const dir = arg('--file');
  const url = arg('--pg');
  const token = arg('--token') ?? '00';
  const registry = dir ? fileLivenessRegistry(dir) : await postgresLivenessRegistry(new Pool({ connectionString: url, max: 2 }), url ?? '');
  const member = await registry.join();
  await member.add({ taskToken: new Uint8Array(Buffer.from(token, 'hex')), workflowId: `wf-${token}`, activityId: '1', attempt: 1 });
  process.stdout.write(`JOINED ${member.worker}\n`);
  if (process.argv.includes('--busy')) {
    // Blocks this thread (timers, sockets, everything) far longer than any test waits.
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 600_000);
  }
  // Otherwise idle until killed.
  setInterval(() => undefined, 60_000);
}

main().catch((err: unknown) => {
  process.stderr.write(`liveness-member: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
