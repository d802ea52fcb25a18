/**
 * The claim check's blobs in PostgreSQL (table dmh_claim_check), when POSTGRES_URL is set: workers
 * and API replicas on several machines read what any of them stored. One row per digest; `last_used`
 * is refreshed by a put and, at most once an hour, by a get, and the sweep deletes rows unused since
 * the cutoff. A put and a sweep cannot cross: the sweep's DELETE re-checks `last_used` on the row it
 * deletes, and a put's upsert sets it to now() under the row's lock.
 */
import type { Pool } from 'pg';
import { ensureSchema } from '../pg/transaction';
import { TOUCH_AFTER_MS, type BlobStore } from './blob-store';

export const CLAIM_CHECK_TABLE = 'dmh_claim_check';

type Db = Pick<Pool, 'connect' | 'query'>;

export async function postgresBlobStore(pool: Db): Promise<BlobStore> {
  await ensureSchema(pool, async (q) => {
    await q(`CREATE TABLE IF NOT EXISTS ${CLAIM_CHECK_TABLE} (
               digest text PRIMARY KEY,
               size integer NOT NULL,
               data bytea NOT NULL,
               created_at timestamptz NOT NULL DEFAULT now(),
               last_used timestamptz NOT NULL DEFAULT now()
             )`);
    await q(`CREATE INDEX IF NOT EXISTS ${CLAIM_CHECK_TABLE}_last_used ON ${CLAIM_CHECK_TABLE} (last_used)`);
  });
  return {
    where: `the PostgreSQL table ${CLAIM_CHECK_TABLE}`,
    async put(digest, bytes) {
      await pool.query(
        `INSERT INTO ${CLAIM_CHECK_TABLE} (digest, size, data) VALUES ($1, $2, $3)
         ON CONFLICT (digest) DO UPDATE SET last_used = now()`,
        [digest, bytes.length, Buffer.from(bytes)],
      );
    },
    async get(digest) {
      const { rows } = await pool.query<{ data: Buffer; stale: boolean }>(
        `SELECT data, last_used < now() - make_interval(secs => $2) AS stale FROM ${CLAIM_CHECK_TABLE} WHERE digest = $1`,
        [digest, TOUCH_AFTER_MS / 1000],
      );
      const row = rows[0];
      if (!row) return undefined;
      if (row.stale) await pool.query(`UPDATE ${CLAIM_CHECK_TABLE} SET last_used = now() WHERE digest = $1`, [digest]);
      return new Uint8Array(row.data);
    },
    async deleteUnusedSince(cutoff) {
      const result = await pool.query(`DELETE FROM ${CLAIM_CHECK_TABLE} WHERE last_used < $1`, [cutoff]);
      return result.rowCount ?? 0;
    },
  };
}
