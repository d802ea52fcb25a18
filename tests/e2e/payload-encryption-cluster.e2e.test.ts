import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import type { TemporalDevServer } from '../../src/cli/processes';
import { bearer, getJson, postMessage, readSse } from '../helpers/http';
import { startSystem, type TestSystem } from '../helpers/system';
import { startTemporalCluster } from '../helpers/temporal-cluster';

/**
 * Payload encryption on the full Temporal server on PostgreSQL (what production runs): after a turn
 * with keys, no row of any table of Temporal's databases holds the user's text, the tool's argument or
 * its result, read byte by byte (bytea columns as raw bytes). The control, a turn without keys on the
 * same server, is found in the same rows, so the search can see clear text when there is some.
 */
jest.setTimeout(240_000);

let dir: string;
let cluster: TemporalDevServer & { postgresUrl: string };
let sealed: TestSystem;
let clear: TestSystem;

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'dmh-sealed-pg-'));
  cluster = await startTemporalCluster(dir);
  // Both systems on the one server; it is stopped here, after them.
  const shared = async (): Promise<TemporalDevServer> => ({ ...cluster, proc: { ...cluster.proc, stop: async () => undefined } });
  sealed = await startSystem({ payloadKeys: `k1:${randomBytes(32).toString('base64')}`, temporal: shared });
  clear = await startSystem({ temporal: shared });
}, 720_000);

afterAll(async () => {
  await sealed?.stop();
  await clear?.stop();
  await cluster?.proc.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
}, 120_000);

/** A turn that saves a note: the secret is in the user's text, the tool's argument and its result. */
async function noteTurn(sys: TestSystem, sessionId: string, secret: string): Promise<void> {
  // Each system has its own signing key: its own token.
  const headers = bearer(await sys.token('admin'));
  const { status, body } = await postMessage(sys.apiUrl, sessionId, `remember that the vault code is ${secret}`, headers);
  expect(status).toBe(202);
  await readSse(`${sys.apiUrl}${body.eventsUrl as string}`, { timeoutMs: 120_000, headers });
  await sys.client.workflow.getHandle(body.turnId as string).result();
  const turn = await getJson(`${sys.apiUrl}/v1/turns/${body.turnId as string}`, headers);
  expect(turn.body.status).toBe('completed');
  expect(JSON.stringify(turn.body.toolCalls)).toContain(secret);
}

/** Every row of every table of Temporal's two databases, as one string (bytea as raw bytes). */
async function everythingStored(): Promise<string> {
  const parts: string[] = [];
  for (const database of ['temporal', 'temporal_visibility']) {
    const url = new URL(cluster.postgresUrl);
    url.pathname = `/${database}`;
    const db = new Client({ connectionString: url.toString() });
    await db.connect();
    try {
      const tables = await db.query<{ name: string }>("SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'");
      // The main store has dozens of tables (executions, history_node, ...), visibility a few.
      expect(tables.rows.map((t) => t.name)).toContain(database === 'temporal' ? 'history_node' : 'executions_visibility');
      for (const { name } of tables.rows) {
        const rows = await db.query(`SELECT * FROM "${name}"`);
        for (const row of rows.rows as Array<Record<string, unknown>>) {
          for (const value of Object.values(row)) parts.push(Buffer.isBuffer(value) ? value.toString('latin1') : typeof value === 'string' ? value : JSON.stringify(value) ?? '');
        }
      }
    } finally {
      await db.end();
    }
  }
  return parts.join('\n');
}

test("with keys, nothing the user wrote or a tool returned is in Temporal's PostgreSQL tables; without keys it is", async () => {
  const hidden = `sealed-${randomBytes(5).toString('hex')}`;
  const visible = `clear-${randomBytes(5).toString('hex')}`;
  await noteTurn(sealed, 'pg-sealed', hidden);
  await noteTurn(clear, 'pg-clear', visible);
  const stored = await everythingStored();
  expect(stored.includes(visible)).toBe(true);
  expect(stored.includes(hidden)).toBe(false);
  expect(stored.includes('binary/encrypted')).toBe(true);
  // The session id is a search attribute: an index, in clear by design.
  expect(stored.includes('pg-sealed')).toBe(true);
});
