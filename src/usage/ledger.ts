/**
 * Token usage per turn, for budgets and the admin usage route: the worker records each turn once when
 * it ends (from the turn workflow's sink, never on replay), and each summarization of a session's
 * older messages (its activity, src/usage/summary-usage.ts); the API sums the records of a period by
 * user, session or tenant, and checks the day's total before it starts a turn.
 *
 * Two stores: a JSON Lines file (USAGE_LOG, the default: the API and the workers on one host, like the
 * audit file), read incrementally by the API; or the table dmh_usage in PostgreSQL (POSTGRES_URL, for
 * replicas and workers on several machines). A turn is recorded at most once by id in either (a worker
 * that crashed after recording and runs the turn's last task again changes nothing).
 */
import { appendFile, mkdir, open } from 'node:fs/promises';
import path from 'node:path';
import type { Pool } from 'pg';
import { ensureSchema } from '../pg/transaction';

export interface UsageRecord {
  /** The record's key: the turn's id, or for a summarization the key of its activity attempt. */
  turnId: string;
  /** Absent in records written before summaries were counted: a turn. */
  kind?: UsageKind;
  sessionId: string;
  tenant: string;
  userId: string;
  model: string;
  promptTokens: number;
  completionTokens: number;
  samplingTokens: number;
  /** ISO time the turn (or the summarization) ended. */
  at: string;
}

/** A turn's model calls, or a session summarizing its older messages (no turn of its own). */
export type UsageKind = 'turn' | 'summary';

export type UsageGroup = 'user' | 'session' | 'tenant';

export interface UsageRow {
  tenant: string;
  /** With groupBy `user` and `session` (a session id is the owner's own: two users may use the same one). */
  userId?: string;
  /** With groupBy `session`. */
  sessionId?: string;
  model: string;
  turns: number;
  summaries: number;
  promptTokens: number;
  completionTokens: number;
  samplingTokens: number;
}

export interface UsageQuery {
  tenant: string;
  /** Only this user's turns. */
  userId?: string;
  from: Date;
  to: Date;
  groupBy: UsageGroup;
}

export interface UsageLedger {
  record(r: UsageRecord): Promise<void>;
  /** Sums per group and model over [from, to). */
  sum(q: UsageQuery): Promise<UsageRow[]>;
  close?(): Promise<void>;
}

export const totalTokens = (r: Pick<UsageRow, 'promptTokens' | 'completionTokens' | 'samplingTokens'>): number =>
  r.promptTokens + r.completionTokens + r.samplingTokens;

function accumulate(records: Iterable<UsageRecord>, q: UsageQuery): UsageRow[] {
  const rows = new Map<string, UsageRow>();
  const from = q.from.getTime();
  const to = q.to.getTime();
  for (const r of records) {
    const at = Date.parse(r.at);
    if (r.tenant !== q.tenant || at < from || at >= to || (q.userId !== undefined && r.userId !== q.userId)) continue;
    const byUser = q.groupBy !== 'tenant';
    const bySession = q.groupBy === 'session';
    const key = `${byUser ? r.userId : ''}\u0000${bySession ? r.sessionId : ''}\u0000${r.model}`;
    const row = rows.get(key) ?? {
      tenant: r.tenant,
      ...(byUser ? { userId: r.userId } : {}),
      ...(bySession ? { sessionId: r.sessionId } : {}),
      model: r.model,
      turns: 0,
      summaries: 0,
      promptTokens: 0,
      completionTokens: 0,
      samplingTokens: 0,
    };
    if (r.kind === 'summary') row.summaries += 1;
    else row.turns += 1;
    row.promptTokens += r.promptTokens;
    row.completionTokens += r.completionTokens;
    row.samplingTokens += r.samplingTokens;
    rows.set(key, row);
  }
  return [...rows.values()].sort(
    (a, b) => (a.userId ?? '').localeCompare(b.userId ?? '') || (a.sessionId ?? '').localeCompare(b.sessionId ?? '') || a.model.localeCompare(b.model),
  );
}

function parseRecord(line: string): UsageRecord | undefined {
  try {
    const r = JSON.parse(line) as Partial<UsageRecord>;
    const n = (v: unknown) => typeof v === 'number' && Number.isFinite(v) && v >= 0;
    if (typeof r.turnId !== 'string' || typeof r.tenant !== 'string' || typeof r.userId !== 'string' || typeof r.at !== 'string') return undefined;
    if (!n(r.promptTokens) || !n(r.completionTokens) || !n(r.samplingTokens)) return undefined;
    if (r.kind !== undefined && r.kind !== 'turn' && r.kind !== 'summary') return undefined;
    return { sessionId: '', model: '', ...r } as UsageRecord;
  } catch {
    return undefined;
  }
}

/**
 * The file store. Appends are single `write`s of one line (O_APPEND), so the workers of one host do
 * not interleave them; the reader keeps its offset and picks up only new complete lines.
 */
export function fileUsageLedger(file: string): UsageLedger {
  const resolved = path.resolve(file);
  const byTurn = new Map<string, UsageRecord>();
  let offset = 0;
  let reading: Promise<void> | undefined;

  const catchUp = async (): Promise<void> => {
    let fh;
    try {
      fh = await open(resolved, 'r');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw err;
    }
    try {
      const { size } = await fh.stat();
      if (size < offset) {
        // Replaced or truncated: read it again from the start.
        byTurn.clear();
        offset = 0;
      }
      if (size === offset) return;
      const buf = Buffer.alloc(size - offset);
      await fh.read(buf, 0, buf.length, offset);
      const end = buf.lastIndexOf(0x0a);
      if (end < 0) return;
      for (const line of buf.subarray(0, end).toString('utf8').split('\n')) {
        const r = line.trim() ? parseRecord(line) : undefined;
        // The first record of a key counts; a repeat (a worker that ran the last task again) does not.
        if (r && !byTurn.has(r.turnId)) byTurn.set(r.turnId, r);
      }
      offset += end + 1;
    } finally {
      await fh.close();
    }
  };

  return {
    async record(r) {
      await mkdir(path.dirname(resolved), { recursive: true });
      await appendFile(resolved, `${JSON.stringify(r)}\n`, 'utf8');
    },
    async sum(q) {
      reading ??= catchUp().finally(() => (reading = undefined));
      await reading;
      return accumulate(byTurn.values(), q);
    },
  };
}

const TABLE = 'dmh_usage';

/** The PostgreSQL store; the table is created if missing. */
export async function postgresUsageLedger(pool: Pick<Pool, 'query' | 'connect'>): Promise<UsageLedger> {
  await ensureSchema(pool, async (q) => {
    await q(
    `CREATE TABLE IF NOT EXISTS ${TABLE} (
       turn_id text PRIMARY KEY,
       kind text NOT NULL DEFAULT 'turn',
       session_id text NOT NULL,
       tenant text NOT NULL,
       user_id text NOT NULL,
       model text NOT NULL,
       prompt_tokens bigint NOT NULL,
       completion_tokens bigint NOT NULL,
       sampling_tokens bigint NOT NULL,
       at timestamptz NOT NULL
     )`,
    );
    // Tables created before summaries were counted: their rows are turns.
    await q(`ALTER TABLE ${TABLE} ADD COLUMN IF NOT EXISTS kind text NOT NULL DEFAULT 'turn'`);
    await q(`CREATE INDEX IF NOT EXISTS ${TABLE}_tenant_user_at ON ${TABLE} (tenant, user_id, at)`);
  });
  return {
    async record(r) {
      await pool.query(
        `INSERT INTO ${TABLE} (turn_id, kind, session_id, tenant, user_id, model, prompt_tokens, completion_tokens, sampling_tokens, at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (turn_id) DO NOTHING`,
        [r.turnId, r.kind ?? 'turn', r.sessionId, r.tenant, r.userId, r.model, r.promptTokens, r.completionTokens, r.samplingTokens, r.at],
      );
    },
    async sum(q) {
      const byUser = q.groupBy !== 'tenant';
      const bySession = q.groupBy === 'session';
      const groups = `${byUser ? 'user_id, ' : ''}${bySession ? 'session_id, ' : ''}model`;
      const { rows } = await pool.query<{ user_id: string | null; session_id: string | null; model: string; turns: string; summaries: string; p: string; c: string; s: string }>(
        `SELECT ${byUser ? 'user_id' : 'NULL::text AS user_id'}, ${bySession ? 'session_id' : 'NULL::text AS session_id'}, model,
                (count(*) FILTER (WHERE kind <> 'summary'))::text AS turns, (count(*) FILTER (WHERE kind = 'summary'))::text AS summaries,
                sum(prompt_tokens)::text AS p, sum(completion_tokens)::text AS c, sum(sampling_tokens)::text AS s
           FROM ${TABLE}
          WHERE tenant = $1 AND at >= $2 AND at < $3 AND ($4::text IS NULL OR user_id = $4)
          GROUP BY ${groups}
          ORDER BY ${groups}`,
        [q.tenant, q.from.toISOString(), q.to.toISOString(), q.userId ?? null],
      );
      return rows.map((r) => ({
        tenant: q.tenant,
        ...(byUser && r.user_id !== null ? { userId: r.user_id } : {}),
        ...(bySession && r.session_id !== null ? { sessionId: r.session_id } : {}),
        model: r.model,
        turns: Number(r.turns),
        summaries: Number(r.summaries),
        promptTokens: Number(r.p),
        completionTokens: Number(r.c),
        samplingTokens: Number(r.s),
      }));
    },
  };
}
