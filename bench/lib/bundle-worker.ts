/**
 * A worker for bench/bundle-cost.ts: the given prebuilt workflow bundle, no-op activities. Runs the
 * bundle's `catalogWorkflow`, whose only activity returns an empty catalog, so what it costs is what
 * a new workflow of that bundle costs the worker. Prints WORKER_READY once polling.
 */
import { NativeConnection, Worker } from '@temporalio/worker';
import { tracingWorkerOptions } from '../../src/cli/workflow-bundle';
import { loadPayloadKeyring } from '../../src/config';
import { dataConverterFor } from '../../src/security/data-converter';

async function main(): Promise<void> {
  const [address, taskQueue, bundle] = process.argv.slice(2);
  if (!address || !taskQueue || !bundle) throw new Error('usage: bundle-worker ADDRESS TASK_QUEUE BUNDLE_FILE');
  const connection = await NativeConnection.connect({ address });
  const worker = await Worker.create({
    connection,
    taskQueue,
    workflowBundle: { codePath: bundle },
    // PAYLOAD_KEYS from the environment, as bundle-cost.ts's client has them.
    dataConverter: dataConverterFor(loadPayloadKeyring(process.env)),
    // The bundle's tracing interceptors export through this sink (a no-op here).
    sinks: tracingWorkerOptions().sinks,
    activities: { listCatalog: async () => ({ tools: [], servers: [] }) },
  });
  process.once('SIGTERM', () => worker.shutdown());
  process.stdout.write('WORKER_READY\n');
  await worker.run();
  await connection.close();
}

main().catch((err: unknown) => {
  process.stderr.write(`bundle-worker: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
