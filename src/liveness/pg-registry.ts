/**
 * The liveness registry on PostgreSQL (POSTGRES_URL): workers on any number of machines. Each worker
 * holds a session-level advisory lock, (LOCK_SPACE, its own key), on a connection of its own that
 * does nothing else; its running attempts are rows of dmh_worker_inflight under that key. PostgreSQL
 * releases the lock the moment the worker's socket closes, which the kernel does when the process
 * ends however it ends: a row whose lock nobody holds belongs to a dead worker. A busy worker keeps
 * its lock (the server does not ask the client anything), so no timing is involved.
 *
 * A worker whose lock connection breaks while it lives (the database restarting) looks dead until it
 * has taken its lock again: its running calls may be failed and retried meanwhile, under the same
 * exactly-once rules as any retry (docs/decisions/0014-which-calls-are-sent-again.md).
 */
import { randomInt } from 'node:crypto';
import { hostname } from 'node:os';
import { Client, type Pool } from 'pg';
import type { Logger } from '../logger';
import { ensureSchema } from '../pg/transaction';
import { type InFlight, type LivenessRegistry, type Membership, type Orphan, tokenKey } from './registry';

const TABLE = 'dmh_worker_inflight';
/** The first half of every worker's advisory lock ("dmhw"); the second is the worker's key. */
const LOCK_SPACE = 0x646d6877;

export async function postgresLivenessRegistry(pool: Pick<Pool, 'query' | 'connect'>, connectionString: string, logger?: Pick<Logger, 'warn' | 'info'>): Promise<LivenessRegistry> {
  await ensureSchema(pool, async (q) => {
    await q(
      `CREATE TABLE IF NOT EXISTS ${TABLE} (entry text PRIMARY KEY, worker text NOT NULL, lock_key integer NOT NULL, ` +
        'task_token bytea NOT NULL, workflow_id text NOT NULL, activity_id text NOT NULL, attempt integer NOT NULL, since timestamptz NOT NULL DEFAULT now())',
    );
    await q(`CREATE INDEX IF NOT EXISTS ${TABLE}_lock ON ${TABLE} (lock_key)`);
  });

  /** A connection holding (LOCK_SPACE, key); resolves with the key it got (a fresh one if `key` is taken). */
  async function lockConnection(key: number | undefined): Promise<{ conn: Client; key: number }> {
    const conn = new Client({ connectionString, application_name: 'dmh-worker-liveness' });
    await conn.connect();
    try {
      for (let tries = 0; tries < 20; tries++) {
        const candidate = tries === 0 && key !== undefined ? key : randomInt(1, 2 ** 31 - 1);
        const r = await conn.query('SELECT pg_try_advisory_lock($1, $2) AS ok', [LOCK_SPACE, candidate]);
        if (r.rows[0]?.ok === true) return { conn, key: candidate };
      }
      throw new Error('no free worker lock key after 20 tries');
    } catch (err) {
      await conn.end().catch(() => undefined);
      throw err;
    }
  }

  return {
    async join(): Promise<Membership> {
      const worker = `${hostname()}-${process.pid}-${randomInt(0, 2 ** 24).toString(16)}`;
      let held = await lockConnection(undefined);
      let closed = false;
      // Lost while the worker lives: taken again (the same key when free), its rows moved to the new key.
      const watch = (conn: Client) => {
        let lost = false;
        const onLost = (err?: Error) => {
          if (closed || lost) return;
          lost = true;
          logger?.warn({ err: err?.message ?? 'connection ended' }, 'worker liveness: the lock connection broke; taking the lock again (running calls may be retried meanwhile)');
          void relock();
        };
        conn.on('error', onLost);
        conn.on('end', () => onLost());
      };
      const relock = async (): Promise<void> => {
        for (let delay = 250; !closed; delay = Math.min(delay * 2, 5_000)) {
          try {
            const before = held.key;
            held = await lockConnection(before);
            watch(held.conn);
            if (held.key !== before) await pool.query(`UPDATE ${TABLE} SET lock_key = $1 WHERE worker = $2`, [held.key, worker]);
            logger?.info({ worker }, 'worker liveness: lock taken again');
            return;
          } catch {
            await new Promise((r) => setTimeout(r, delay));
          }
        }
      };
      watch(held.conn);
      return {
        worker,
        async add(entry: InFlight) {
          const key = tokenKey(entry.taskToken);
          await pool.query(
            `INSERT INTO ${TABLE} (entry, worker, lock_key, task_token, workflow_id, activity_id, attempt) VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (entry) DO NOTHING`,
            [key, worker, held.key, Buffer.from(entry.taskToken), entry.workflowId, entry.activityId, entry.attempt],
          );
          return key;
        },
        async remove(key: string) {
          await pool.query(`DELETE FROM ${TABLE} WHERE entry = $1`, [key]);
        },
        async close() {
          closed = true;
          // A worker that stops by itself has finished its calls; the lock goes with the connection.
          await pool.query(`DELETE FROM ${TABLE} WHERE worker = $1`, [worker]).catch(() => undefined);
          await held.conn.end().catch(() => undefined);
        },
      };
    },

    async orphans(): Promise<Orphan[]> {
      // Advisory locks are per database; pg_locks shows the two-key form as (classid, objid, objsubid 2).
      const r = await pool.query(
        `SELECT entry, worker, task_token, workflow_id, activity_id, attempt FROM ${TABLE} i WHERE NOT EXISTS (
           SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
             AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
             AND l.classid = $1::integer::oid AND l.objid = i.lock_key::oid)`,
        [LOCK_SPACE],
      );
      return r.rows.map((row: Record<string, unknown>) => ({
        key: String(row['entry']),
        worker: String(row['worker']),
        taskToken: new Uint8Array(row['task_token'] as Buffer),
        workflowId: String(row['workflow_id']),
        activityId: String(row['activity_id']),
        attempt: Number(row['attempt']),
      }));
    },

    async forget(orphans: readonly Orphan[]) {
      if (orphans.length) await pool.query(`DELETE FROM ${TABLE} WHERE entry = ANY($1::text[])`, [orphans.map((o) => o.key)]);
    },

    async close() {
      // The pool is the caller's.
    },
  };
}
