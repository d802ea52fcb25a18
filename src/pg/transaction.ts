/**
 * PostgreSQL helpers shared by the stores that keep the host's state there (live-text bus, rate
 * limits, worker reports, usage, audit chain, OAuth tokens).
 */
import type { Pool, PoolClient } from 'pg';

export type Query = (sql: string, params?: unknown[]) => Promise<{ rows: Array<Record<string, unknown>> }>;

/**
 * Runs `fn` with one pooled connection. While a connection is checked out, the pool no longer
 * listens for its errors: one the server ends meanwhile (a restart's "terminating connection") would
 * raise an unhandled 'error' and end the process. It is heard here instead, the next query fails, and
 * the connection is released broken, so the pool discards it.
 */
export async function withConnection<T>(pool: Pick<Pool, 'connect'>, fn: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  const onError = (err: Error): void => {
    broken = err;
  };
  client.on('error', onError);
  try {
    return await fn(client);
  } finally {
    client.off('error', onError);
    client.release(broken);
  }
}

/** Runs `fn` in one transaction on one connection (`begin` may set the isolation level); rolls back on error. */
export async function inTransaction<T>(pool: Pick<Pool, 'connect'>, fn: (q: Query) => Promise<T>, begin = 'BEGIN'): Promise<T> {
  return await withConnection(pool, async (client) => {
    await client.query(begin);
    try {
      const result = await fn((sql, params) => client.query(sql, params));
      await client.query('COMMIT');
      return result;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    }
  });
}

/** Advisory lock key under which every store creates its tables (any constant all processes share). */
const SCHEMA_LOCK = 0x646d6873; // "dmhs"

/**
 * Creates tables (and what goes with them) once, even when API replicas and workers start at the same
 * moment: `CREATE TABLE IF NOT EXISTS` alone races in PostgreSQL (two creators, one fails on the type
 * name), so creators take turns under a transaction-level advisory lock.
 */
export async function ensureSchema(pool: Pick<Pool, 'connect'>, create: (q: Query) => Promise<void>): Promise<void> {
  await inTransaction(pool, async (q) => {
    await q('SELECT pg_advisory_xact_lock($1)', [SCHEMA_LOCK]);
    await create(q);
  });
}
