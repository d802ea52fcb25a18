/**
 * The floor's worker, a process of its own so its CPU is metered like the project's worker:
 * `node dist/bench/floor/worker.js <temporal address> <task queue> [<model base URL> <MCP config file>]`.
 * Same SDK, default worker options. With the model and the MCP config, it runs the I/O floor's
 * activities too (io-activities.ts): its MCP servers start at the first tool call and stop with it.
 */
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker, type InjectedSinks } from '@temporalio/worker';
import type { ProtocolActivities, ProtocolSinks } from './protocols';
import type { IoActivities } from './io-turn';
import { ioActivities } from './io-activities';
import { turnEndedSignal } from './protocols';
import { loadPayloadKeyring } from '../../src/config';
import { dataConverterFor } from '../../src/security/data-converter';
import { claimCheckFrom } from '../../src/config/claim-check';
import { DEFAULT_CLAIM_CHECK_THRESHOLD } from '../../src/security/claim-check';

async function main(): Promise<void> {
  const [address, taskQueue, modelUrl, mcpConfigPath] = process.argv.slice(2);
  if (!address || !taskQueue || (modelUrl !== undefined && mcpConfigPath === undefined)) {
    throw new Error('usage: node dist/bench/floor/worker.js <temporal address> <task queue> [<model base URL> <MCP config file>]');
  }
  const connection = await NativeConnection.connect({ address });
  // The floor pays for the same codecs as the host: sealed with PAYLOAD_KEYS (its client seals what it
  // starts), and measured against the claim check's threshold (its payloads never reach it).
  const claimCheck = await claimCheckFrom({ CLAIM_CHECK_THRESHOLD_BYTES: DEFAULT_CLAIM_CHECK_THRESHOLD, CLAIM_CHECK_DIR: process.env['CLAIM_CHECK_DIR'] ?? '.data/claim-check' }, undefined);
  const dataConverter = dataConverterFor(loadPayloadKeyring(process.env), claimCheck);
  // The session protocols' floor (protocols.ts) needs a client: a predecessor's result, the end's signal.
  const client = new Client({ connection: await Connection.connect({ address }), dataConverter });
  const io = modelUrl && mcpConfigPath ? ioActivities(modelUrl, mcpConfigPath) : undefined;
  const notConfigured = (): never => {
    throw new Error('floor worker: started without a model URL and MCP config, it has no I/O floor');
  };
  const activities: ProtocolActivities & IoActivities = {
    model: io?.activities.model ?? notConfigured,
    tool: io?.activities.tool ?? notConfigured,
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
  try {
    await worker.run();
  } finally {
    await io?.close();
    await connection.close();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`floor worker: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
