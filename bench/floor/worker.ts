/**
 * The floor's worker, a process of its own so its CPU is metered like the project's worker:
 * `node dist/bench/floor/worker.js <temporal address> <task queue>`. Same SDK, default worker options.
 */
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker, type InjectedSinks } from '@temporalio/worker';
import type { ProtocolActivities, ProtocolSinks } from './protocols';
import { turnEndedSignal } from './protocols';
import { loadPayloadKeyring } from '../../src/config';
import { dataConverterFor } from '../../src/security/data-converter';
import { claimCheckFrom } from '../../src/config/claim-check';
import { DEFAULT_CLAIM_CHECK_THRESHOLD } from '../../src/security/claim-check';

async function main(): Promise<void> {
  const [address, taskQueue] = process.argv.slice(2);
  if (!address || !taskQueue) throw new Error('usage: node dist/bench/floor/worker.js <temporal address> <task queue>');
  const connection = await NativeConnection.connect({ address });
  // The floor pays for the same codecs as the host: sealed with PAYLOAD_KEYS (its client seals what it
  // starts), and measured against the claim check's threshold (its payloads never reach it).
  const claimCheck = await claimCheckFrom({ CLAIM_CHECK_THRESHOLD_BYTES: DEFAULT_CLAIM_CHECK_THRESHOLD, CLAIM_CHECK_DIR: process.env['CLAIM_CHECK_DIR'] ?? '.data/claim-check' }, undefined);
  const dataConverter = dataConverterFor(loadPayloadKeyring(process.env), claimCheck);
  // The session protocols' floor (protocols.ts) needs a client: a predecessor's result, the end's signal.
  const client = new Client({ connection: await Connection.connect({ address }), dataConverter });
  const activities: ProtocolActivities = {
    noop: async () => undefined,
    predecessorMemory: async (turnId) => (await client.workflow.getHandle(turnId).result()) as string[],
  };
  const failed = (err: unknown) => process.stderr.write(`floor worker: a turn's end was not delivered: ${String(err)}\n`);
  const sinks: InjectedSinks<ProtocolSinks> = {
    turnEnd: {
      toSession: { fn: (_info, session, turnId) => void client.workflow.getHandle(session).signal(turnEndedSignal, turnId).catch(failed), callDuringReplay: false },
      toLedger: {
        fn: (_info, ledger, turnId) =>
          void client.workflow.signalWithStart('floorLedger', { workflowId: ledger, taskQueue, signal: turnEndedSignal, signalArgs: [turnId] }).catch(failed),
        callDuringReplay: false,
      },
    },
  };
  const worker = await Worker.create({ connection, taskQueue, workflowsPath: require.resolve('./workflows'), activities, sinks, dataConverter });
  process.stdout.write('FLOOR_WORKER_READY\n');
  await worker.run();
  await connection.close();
}

main().catch((err: unknown) => {
  process.stderr.write(`floor worker: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
