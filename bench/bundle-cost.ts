/**
 * What the workflow bundle costs: its size, and the worker's CPU per new workflow, for one or more
 * bundles side by side on the same dev server (e.g. an older build against today's). Each bundle gets
 * its own worker process and task queue; the workflow is the bundle's `catalogWorkflow` with a no-op
 * activity, so the figure is the cost of starting and finishing a workflow of that bundle.
 *
 *   npm run build && node dist/bench/bundle-cost.js [--bundle FILE]... [--workflows N] [--concurrency N]
 */
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { freePort, spawnManaged, startTemporalDevServer } from '../src/cli/processes';
import { cpuMs, runConcurrent, table } from './lib/stats';
import { loadPayloadKeyring } from '../src/config';
import { dataConverterFor } from '../src/security/data-converter';

const ROOT = path.resolve(__dirname, '..', '..');

function bundleSize(file: string): { total: number; code: number } {
  const text = readFileSync(file, 'utf8');
  const map = text.indexOf('//# sourceMappingURL=data:');
  return { total: statSync(file).size, code: Buffer.byteLength(map >= 0 ? text.slice(0, map) : text) };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      bundle: { type: 'string', multiple: true },
      workflows: { type: 'string', default: '300' },
      warmup: { type: 'string', default: '30' },
      concurrency: { type: 'string', default: '4' },
    },
  });
  const bundles = (values.bundle ?? [path.join(ROOT, 'dist/src/workflow-bundle.js')]).map((b) => path.resolve(b));
  const n = Number(values.workflows);
  const warmup = Number(values.warmup);
  const concurrency = Number(values.concurrency);
  const cli = process.env.TEMPORAL_CLI;
  if (!cli) throw new Error('TEMPORAL_CLI must name a temporal binary (scripts/ensure-temporal.sh prints one)');

  const dir = mkdtempSync(path.join(tmpdir(), 'bundle-cost-'));
  const server = await startTemporalDevServer({ cli, dbFile: path.join(dir, 'temporal.db'), port: await freePort() });
  const connection = await Connection.connect({ address: server.address });
  // With PAYLOAD_KEYS set, payloads are sealed as in production (the worker has the same keys).
  const client = new Client({ connection, dataConverter: dataConverterFor(loadPayloadKeyring(process.env)) });
  const rows: string[][] = [];
  try {
    for (const [i, bundle] of bundles.entries()) {
      const taskQueue = `bundle-cost-${i}`;
      const { proc } = await spawnManaged('worker', process.execPath, [path.join(__dirname, 'lib/bundle-worker.js'), server.address, taskQueue, bundle], {
        readyLine: /WORKER_READY/,
      });
      try {
        const run = (count: number, tag: string) =>
          runConcurrent(count, concurrency, async (k) => {
            await client.workflow.execute('catalogWorkflow', { workflowId: `${tag}-${i}-${k}`, taskQueue });
          });
        await run(warmup, 'warmup');
        const before = cpuMs(proc.pid);
        const started = Date.now();
        await run(n, 'measured');
        const cpu = (cpuMs(proc.pid) - before) / n;
        const rssMiB = Number(readFileSync(`/proc/${proc.pid}/status`, 'utf8').match(/VmRSS:\s+(\d+)/)?.[1] ?? Number.NaN) / 1024;
        const size = bundleSize(bundle);
        rows.push([
          path.relative(process.cwd(), bundle),
          (size.total / 1e6).toFixed(2),
          (size.code / 1e6).toFixed(2),
          cpu.toFixed(2),
          ((n / (Date.now() - started)) * 1000).toFixed(1),
          rssMiB.toFixed(0),
        ]);
      } finally {
        await proc.stop();
      }
    }
  } finally {
    await connection.close();
    await server.proc.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  process.stdout.write(`${n} workflows per bundle after ${warmup} warm-up, concurrency ${concurrency}; worker CPU from /proc\n\n`);
  process.stdout.write(
    `${table(['bundle', 'size MB', 'code MB (no inline map)', 'worker CPU ms / workflow', 'workflows/s', 'worker RSS MiB'], rows)}\n`,
  );
}

main().catch((err: unknown) => {
  process.stderr.write(`bundle-cost: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
  process.exit(1);
});
