/**
 * `npm run sessions:migrate`: moves the sessions still held by session workflows of decision 0016's
 * protocol into closed carriers under the same ids (decision 0041; src/session-migration.ts). Run it
 * while the workers of the release that still has the session workflow run on TASK_QUEUE (they answer
 * the queries and run the carriers), with the same Temporal, payload-key and claim-check settings as
 * they have. Exit 0 when every session moved, 3 when busy ones are left (run it again later), 1 on a
 * failure. Running it again once all moved does nothing.
 */
import { Client, Connection } from '@temporalio/client';
import { Pool } from 'pg';
import { loadEnvConfig, loadPayloadKeyring } from '../config';
import { claimCheckFrom } from '../config/claim-check';
import { dataConverterFor } from '../security/data-converter';
import { migrateSessions } from '../session-migration';

async function main(): Promise<number> {
  const env = loadEnvConfig();
  const pool = env.POSTGRES_URL ? new Pool({ connectionString: env.POSTGRES_URL, max: 2 }) : undefined;
  pool?.on('error', () => undefined);
  const connection = await Connection.connect({ address: env.TEMPORAL_ADDRESS });
  try {
    const client = new Client({ connection, namespace: env.TEMPORAL_NAMESPACE, dataConverter: dataConverterFor(loadPayloadKeyring(env), await claimCheckFrom(env, pool)) });
    const report = await migrateSessions(client, env.TASK_QUEUE, (line) => process.stdout.write(`${line}\n`));
    process.stdout.write(`sessions:migrate: ${report.migrated.length} migrated, ${report.busy.length} busy (run again later), ${report.failed.length} failed\n`);
    return report.failed.length > 0 ? 1 : report.busy.length > 0 ? 3 : 0;
  } finally {
    await connection.close();
    await pool?.end();
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`sessions:migrate: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
