/**
 * PostgreSQL helpers shared by the stores that keep the host's state there (live-text bus, rate
 * limits, worker reports, usage, audit chain, OAuth tokens).
 */
import type { Pool } from 'pg';

export type Query = (sql: string, params?: unknown[]) => Promise<{ rows: Array<Record<string, unknown>> }>;

/** Runs `fn` in one transaction on one connection (`begin` may set the isolation level); rolls back on error. */
export async function inTransaction<T>(pool: Pick<Pool, 'connect'>, fn: (q: Query) => Promise<T>, begin = 'BEGIN'): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query(begin);
    try {
      const result = await fn((sql, params) => client.query(sql, params));
      await client.query('COMMIT');
      return result;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    }
  } finally {
    client.release();
  }
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
