/**
 * The session index on PostgreSQL (POSTGRES_URL), shared by every API replica: one row per link in
 * dmh_session_links, and one per session in dmh_sessions (its first and latest message and its count
 * of turns, which is also the next link's place) so the list of a caller's sessions reads an index
 * in order rather than grouping links.
 *
 * An append takes the session row's lock first (an upsert that counts the new turn), so two appends
 * to one session, from any replicas, get consecutive places; a turn already in the chain rolls that
 * count back and answers with the link it has. Times are timestamptz: an `at` must be what
 * `Date#toISOString` writes, so it comes back as the same string.
 *
 * The owner's title and deletion are columns of the session's row (decision 0037): a deleted session
 * keeps its rows, is left out of the list, its links and its entry, and refuses appends (the upsert
 * that would count the turn updates nothing).
 */
import type { Pool } from 'pg';
import { ensureSchema, inTransaction } from '../../pg/transaction';
import { type Appended, type ChainLink, type LinkEnd, type Owner, SessionDeleted, type SessionEntry, type SessionIndex } from './index-store';

const SESSIONS = 'dmh_sessions';
const LINKS = 'dmh_session_links';
/** A session's key in both tables; ids compare bytewise (as `newerFirst` compares the API's ASCII ids), whatever the database's collation. */
const SESSION_KEY = 'tenant text NOT NULL, user_id text NOT NULL, session_id text COLLATE "C" NOT NULL';

interface LinkRow {
  turn_id: string;
  seq: number;
  at: Date;
  ended: LinkEnd | null;
}

interface SessionRow {
  session_id: string;
  started_at: Date;
  last_at: Date;
  turns: number;
  title: string | null;
}

const toEntry = (r: SessionRow): SessionEntry => ({
  sessionId: r.session_id,
  startedAt: r.started_at.toISOString(),
  lastAt: r.last_at.toISOString(),
  turns: r.turns,
  ...(r.title === null ? {} : { title: r.title }),
});

const toLink = (r: LinkRow): ChainLink => ({ turnId: r.turn_id, seq: r.seq, at: r.at.toISOString(), ...(r.ended ? { ended: r.ended } : {}) });

/** An `at` that comes back as given: an ISO 8601 UTC time with milliseconds. */
function isoTime(name: string, at: string): string {
  const parsed = new Date(at);
  if (Number.isNaN(parsed.getTime()) || parsed.toISOString() !== at) {
    throw new RangeError(`session index: ${name} must be an ISO 8601 UTC time with milliseconds (as Date#toISOString writes it)`);
  }
  return at;
}

/** Thrown inside an append's transaction to roll back its count: the turn is in the chain already. */
class TurnKnown extends Error {}

/** The PostgreSQL index; its tables are created if missing. */
export async function postgresSessionIndex(pool: Pick<Pool, 'query' | 'connect'>): Promise<SessionIndex> {
  await ensureSchema(pool, async (q) => {
    const tables: Array<[string, string]> = [
      [SESSIONS, 'started_at timestamptz NOT NULL, last_at timestamptz NOT NULL, turns integer NOT NULL, PRIMARY KEY (tenant, user_id, session_id)'],
      [
        LINKS,
        "seq integer NOT NULL, turn_id text NOT NULL, at timestamptz NOT NULL, ended text CHECK (ended IN ('completed', 'failed', 'cancelled')), " +
          'PRIMARY KEY (tenant, user_id, session_id, seq), UNIQUE (tenant, user_id, session_id, turn_id)',
      ],
    ];
    for (const [table, columns] of tables) await q(`CREATE TABLE IF NOT EXISTS ${table} (${SESSION_KEY}, ${columns})`);
    // Added after the table first shipped: tables made before have them added.
    await q(`ALTER TABLE ${SESSIONS} ADD COLUMN IF NOT EXISTS title text, ADD COLUMN IF NOT EXISTS deleted_at timestamptz`);
    // The list's order and its cursor (newerFirst): latest message, then id, both descending.
    await q(`CREATE INDEX IF NOT EXISTS ${SESSIONS}_latest ON ${SESSIONS} (tenant, user_id, last_at DESC, session_id DESC)`);
  });

  const linkColumns = 'l.turn_id, l.seq, l.at, l.ended';
  const entryColumns = 'session_id, started_at, last_at, turns, title';
  const ofOwner = 'tenant = $1 AND user_id = $2 AND session_id = $3';

  /** A turn in the chain already: its link and the `depth` before it, nearest first (links never move). */
  async function known(owner: Owner, sessionId: string, turnId: string, depth: number): Promise<Appended> {
    const { rows } = await pool.query<LinkRow>(
      `SELECT ${linkColumns} FROM ${LINKS} l
         JOIN ${LINKS} k ON k.tenant = l.tenant AND k.user_id = l.user_id AND k.session_id = l.session_id AND k.turn_id = $4
        WHERE l.tenant = $1 AND l.user_id = $2 AND l.session_id = $3 AND l.seq <= k.seq AND l.seq >= k.seq - $5
        ORDER BY l.seq DESC`,
      [owner.tenant, owner.id, sessionId, turnId, depth],
    );
    const [link, ...before] = rows.map(toLink);
    if (!link) throw new Error('session index: a turn found in the chain is missing from it');
    return { link, created: false, before };
  }

  return {
    async append(owner, sessionId, turnId, at, depth) {
      isoTime('at', at);
      try {
        return await inTransaction(pool, async (q) => {
          // Creates the session or locks its row, counting this turn: its place is the count before.
          const counted = await q(
            `INSERT INTO ${SESSIONS} AS s (tenant, user_id, session_id, started_at, last_at, turns) VALUES ($1, $2, $3, $4, $4, 1)
             ON CONFLICT (tenant, user_id, session_id) DO UPDATE SET turns = s.turns + 1, last_at = excluded.last_at WHERE s.deleted_at IS NULL
             RETURNING s.turns`,
            [owner.tenant, owner.id, sessionId, at],
          );
          if (counted.rows.length === 0) throw new SessionDeleted(sessionId);
          const seq = Number(counted.rows[0]?.turns) - 1;
          const inserted = await q(
            `INSERT INTO ${LINKS} (tenant, user_id, session_id, seq, turn_id, at) VALUES ($1, $2, $3, $4, $5, $6)
             ON CONFLICT (tenant, user_id, session_id, turn_id) DO NOTHING RETURNING seq`,
            [owner.tenant, owner.id, sessionId, seq, turnId, at],
          );
          if (inserted.rows.length === 0) throw new TurnKnown();
          const before = await q(
            `SELECT ${linkColumns} FROM ${LINKS} l WHERE l.tenant = $1 AND l.user_id = $2 AND l.session_id = $3 AND l.seq < $4 AND l.seq >= $4 - $5
              ORDER BY l.seq DESC`,
            [owner.tenant, owner.id, sessionId, seq, depth],
          );
          return { link: { turnId, seq, at }, created: true, before: (before.rows as unknown as LinkRow[]).map(toLink) };
        });
      } catch (err) {
        if (err instanceof TurnKnown) return await known(owner, sessionId, turnId, depth);
        throw err;
      }
    },

    async links(owner, sessionId, limit) {
      const { rows } = await pool.query<LinkRow>(
        `SELECT ${linkColumns} FROM ${LINKS} l
           JOIN ${SESSIONS} s ON s.tenant = l.tenant AND s.user_id = l.user_id AND s.session_id = l.session_id AND s.deleted_at IS NULL
          WHERE l.tenant = $1 AND l.user_id = $2 AND l.session_id = $3 ORDER BY l.seq DESC LIMIT $4`,
        [owner.tenant, owner.id, sessionId, limit],
      );
      return rows.map(toLink).reverse();
    },

    async ended(owner, sessionId, turnId, status) {
      await pool.query(
        `UPDATE ${LINKS} SET ended = $5 WHERE tenant = $1 AND user_id = $2 AND session_id = $3 AND turn_id = $4 AND ended IS NULL`,
        [owner.tenant, owner.id, sessionId, turnId, status],
      );
    },

    async sessions(owner, limit, cursor) {
      const after = cursor ? 'AND (last_at, session_id) < ($4::timestamptz, $5)' : '';
      const { rows } = await pool.query<SessionRow>(
        `SELECT ${entryColumns} FROM ${SESSIONS} WHERE tenant = $1 AND user_id = $2 AND deleted_at IS NULL ${after}
          ORDER BY last_at DESC, session_id DESC LIMIT $3`,
        [owner.tenant, owner.id, limit + 1, ...(cursor ? [isoTime('cursor.lastAt', cursor.lastAt), cursor.sessionId] : [])],
      );
      const page: SessionEntry[] = rows.slice(0, limit).map(toEntry);
      const last = page.at(-1);
      return rows.length > limit && last ? { sessions: page, next: { lastAt: last.lastAt, sessionId: last.sessionId } } : { sessions: page };
    },

    async session(owner, sessionId) {
      const { rows } = await pool.query<SessionRow & { deleted: boolean }>(
        `SELECT ${entryColumns}, deleted_at IS NOT NULL AS deleted FROM ${SESSIONS} WHERE ${ofOwner}`,
        [owner.tenant, owner.id, sessionId],
      );
      const row = rows[0];
      if (!row) return undefined;
      return row.deleted ? { ...toEntry(row), deleted: true } : toEntry(row);
    },

    async rename(owner, sessionId, title) {
      const { rows } = await pool.query<SessionRow>(
        `UPDATE ${SESSIONS} SET title = $4 WHERE ${ofOwner} AND deleted_at IS NULL RETURNING ${entryColumns}`,
        [owner.tenant, owner.id, sessionId, title],
      );
      return rows[0] ? toEntry(rows[0]) : undefined;
    },

    async remove(owner, sessionId) {
      const { rowCount } = await pool.query(`UPDATE ${SESSIONS} SET deleted_at = now() WHERE ${ofOwner} AND deleted_at IS NULL`, [
        owner.tenant,
        owner.id,
        sessionId,
      ]);
      return (rowCount ?? 0) > 0;
    },
  };
}
