/**
 * The floor's worker, a process of its own so its CPU is metered like the project's worker:
 * `node dist/bench/floor/worker.js <temporal address> <task queue>`. Same SDK, default worker options.
 */
import { NativeConnection, Worker } from '@temporalio/worker';
import type { FloorActivities } from './workflows';
import { loadPayloadKeyring } from '../../src/config';
import { dataConverterFor } from '../../src/security/data-converter';

async function main(): Promise<void> {
  const [address, taskQueue] = process.argv.slice(2);
  if (!address || !taskQueue) throw new Error('usage: node dist/bench/floor/worker.js <temporal address> <task queue>');
  const connection = await NativeConnection.connect({ address });
  const activities: FloorActivities = { noop: async () => undefined };
  // With PAYLOAD_KEYS, the floor pays for the same codec as the host (its client seals what it starts).
  const dataConverter = dataConverterFor(loadPayloadKeyring(process.env));
  const worker = await Worker.create({ connection, taskQueue, workflowsPath: require.resolve('./workflows'), activities, dataConverter });
  process.stdout.write('FLOOR_WORKER_READY\n');
  await worker.run();
  await connection.close();
}

main().catch((err: unknown) => {
  process.stderr.write(`floor worker: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
