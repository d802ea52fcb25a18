/**
 * The audit chain in PostgreSQL (table dmh_audit), for workers on several machines: the file's lock
 * only works on one host. One writer at a time per chain: each append runs in a transaction holding
 * a transaction-level advisory lock, reads the last row, checks it (a damaged tail is refused, as in
 * the file) and inserts the next entry; the primary key on seq would refuse a fork anyway.
 *
 * Each row keeps the entry's exact JSON text (what was hashed, as the file's line would be), with
 * seq and hash beside it for ordering. A trigger refuses UPDATE, DELETE and TRUNCATE: rows can only
 * be added. Someone who can drop the trigger can still rewrite rows, which is what the chain and
 * verifyAuditTable are for (record the head hash elsewhere to detect a rewritten tail).
 */
import type { Pool } from 'pg';
import { AuditLogError, EMPTY_CHAIN, headOf, nextEntry, type AuditChainStore, type AuditDraft } from './chain';
import { GENESIS_HASH, type AuditEntry } from './schema';
import { checkLine, type AuditVerifyResult, type ChainState } from './verify';
import { ensureSchema, inTransaction } from '../pg/transaction';

export const AUDIT_TABLE = 'dmh_audit';
/** Advisory lock key of the chain's writer order (any constant all appenders agree on). */
const LOCK_KEY = 0x646d6861; // "dmha"

type Db = Pick<Pool, 'connect' | 'query'>;

/** Creates the table and its append-only trigger if missing (safe when several workers start at once). */
async function ensureTable(pool: Db): Promise<void> {
  await ensureSchema(pool, async (q) => {
    await q(`CREATE TABLE IF NOT EXISTS ${AUDIT_TABLE} (
               seq bigint PRIMARY KEY CHECK (seq > 0),
               hash text NOT NULL,
               entry text NOT NULL
             )`);
    await q(`CREATE OR REPLACE FUNCTION ${AUDIT_TABLE}_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
             BEGIN RAISE EXCEPTION 'the audit trail is append-only'; END $$`);
    const { rows } = await q(`SELECT 1 FROM pg_trigger WHERE tgname = '${AUDIT_TABLE}_append_only' AND tgrelid = '${AUDIT_TABLE}'::regclass`);
    if (rows.length === 0) {
      await q(`CREATE TRIGGER ${AUDIT_TABLE}_append_only BEFORE UPDATE OR DELETE ON ${AUDIT_TABLE}
               FOR EACH ROW EXECUTE FUNCTION ${AUDIT_TABLE}_append_only()`);
      await q(`CREATE TRIGGER ${AUDIT_TABLE}_no_truncate BEFORE TRUNCATE ON ${AUDIT_TABLE}
               FOR EACH STATEMENT EXECUTE FUNCTION ${AUDIT_TABLE}_append_only()`);
    }
  });
}

export async function postgresAuditStore(pool: Db): Promise<AuditChainStore> {
  await ensureTable(pool);
  const where = `PostgreSQL table ${AUDIT_TABLE}`;
  return {
    where,
    async append(draft: AuditDraft): Promise<AuditEntry> {
      return await inTransaction(pool, async (q) => {
        await q('SELECT pg_advisory_xact_lock($1)', [LOCK_KEY]);
        const { rows } = await q(`SELECT entry FROM ${AUDIT_TABLE} ORDER BY seq DESC LIMIT 1`);
        const last = rows[0]?.['entry'];
        const entry = nextEntry(draft, typeof last === 'string' ? headOf(last, where) : EMPTY_CHAIN);
        try {
          await q(`INSERT INTO ${AUDIT_TABLE} (seq, hash, entry) VALUES ($1, $2, $3)`, [entry.seq, entry.hash, JSON.stringify(entry)]);
        } catch (err) {
          // Only a writer that bypassed the lock can take this seq first.
          if ((err as { code?: string }).code === '23505') throw new AuditLogError('lock_compromised', `audit entry ${entry.seq} was written by another writer; entry not written`);
          throw err;
        }
        return entry;
      });
    },
  };
}

/**
 * Verifies the chain in the table as verifyAuditLog does a file, on one consistent snapshot (appends
 * arriving meanwhile are left for the next run). `line` in a break is the row's position in seq order.
 */
export async function verifyAuditTable(pool: Db, pageSize = 1_000): Promise<AuditVerifyResult> {
  return await inTransaction(
    pool,
    async (q) => {
      const exists = await q(`SELECT to_regclass($1) AS t`, [AUDIT_TABLE]);
      if (!exists.rows[0]?.['t']) return { ok: true, entries: 0, headHash: GENESIS_HASH, missing: true } as const;
      const state: ChainState = { seq: 0, hash: GENESIS_HASH };
      let position = 0;
      let after = 0;
      for (;;) {
        const { rows } = await q(`SELECT seq::text AS seq_text, hash, entry FROM ${AUDIT_TABLE} WHERE seq > $1 ORDER BY seq LIMIT $2`, [after, pageSize]);
        for (const row of rows) {
          position += 1;
          const bad = checkLine(String(row['entry']), position, state);
          if (bad) return { ok: false, entries: position - 1, firstBad: bad } as const;
          // The columns beside the entry are for ordering only, but they must not disagree with it.
          if (String(state.seq) !== row['seq_text'] || state.hash !== row['hash']) {
            return { ok: false, entries: position - 1, firstBad: { line: position, seq: state.seq, reason: 'the row\'s seq or hash column disagrees with its entry' } } as const;
          }
          after = state.seq;
        }
        if (rows.length < pageSize) return { ok: true, entries: position, headHash: state.hash } as const;
      }
    },
    'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY',
  );
}
