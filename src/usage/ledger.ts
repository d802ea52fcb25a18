/**
 * Token usage per turn, for budgets and the admin usage route: the worker records each turn once when
 * it ends (from the turn workflow's sink, never on replay); the API sums the records of a period by
 * user or tenant, and checks the day's total before it starts a turn.
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
  turnId: string;
  sessionId: string;
  tenant: string;
  userId: string;
  model: string;
  promptTokens: number;
  completionTokens: number;
  samplingTokens: number;
  /** ISO time the turn ended. */
  at: string;
}

export type UsageGroup = 'user' | 'tenant';

export interface UsageRow {
  tenant: string;
  /** With groupBy `user`. */
  userId?: string;
  model: string;
  turns: number;
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
    const key = `${q.groupBy === 'user' ? r.userId : ''}\u0000${r.model}`;
    const row = rows.get(key) ?? {
      tenant: r.tenant,
      ...(q.groupBy === 'user' ? { userId: r.userId } : {}),
      model: r.model,
      turns: 0,
      promptTokens: 0,
      completionTokens: 0,
      samplingTokens: 0,
    };
    row.turns += 1;
    row.promptTokens += r.promptTokens;
    row.completionTokens += r.completionTokens;
    row.samplingTokens += r.samplingTokens;
    rows.set(key, row);
  }
  return [...rows.values()].sort((a, b) => (a.userId ?? '').localeCompare(b.userId ?? '') || a.model.localeCompare(b.model));
}

function parseRecord(line: string): UsageRecord | undefined {
  try {
    const r = JSON.parse(line) as Partial<UsageRecord>;
    const n = (v: unknown) => typeof v === 'number' && Number.isFinite(v) && v >= 0;
    if (typeof r.turnId !== 'string' || typeof r.tenant !== 'string' || typeof r.userId !== 'string' || typeof r.at !== 'string') return undefined;
    if (!n(r.promptTokens) || !n(r.completionTokens) || !n(r.samplingTokens)) return undefined;
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
        // The first record of a turn counts; a repeat (a worker that ran the last task again) does not.
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
    await q(`CREATE INDEX IF NOT EXISTS ${TABLE}_tenant_user_at ON ${TABLE} (tenant, user_id, at)`);
  });
  return {
    async record(r) {
      await pool.query(
        `INSERT INTO ${TABLE} (turn_id, session_id, tenant, user_id, model, prompt_tokens, completion_tokens, sampling_tokens, at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (turn_id) DO NOTHING`,
        [r.turnId, r.sessionId, r.tenant, r.userId, r.model, r.promptTokens, r.completionTokens, r.samplingTokens, r.at],
      );
    },
    async sum(q) {
      const byUser = q.groupBy === 'user';
      const { rows } = await pool.query<{ user_id: string | null; model: string; turns: string; p: string; c: string; s: string }>(
        `SELECT ${byUser ? 'user_id' : 'NULL::text AS user_id'}, model, count(*)::text AS turns,
                sum(prompt_tokens)::text AS p, sum(completion_tokens)::text AS c, sum(sampling_tokens)::text AS s
           FROM ${TABLE}
          WHERE tenant = $1 AND at >= $2 AND at < $3 AND ($4::text IS NULL OR user_id = $4)
          GROUP BY ${byUser ? 'user_id, ' : ''}model
          ORDER BY ${byUser ? 'user_id, ' : ''}model`,
        [q.tenant, q.from.toISOString(), q.to.toISOString(), q.userId ?? null],
      );
      return rows.map((r) => ({
        tenant: q.tenant,
        ...(byUser && r.user_id !== null ? { userId: r.user_id } : {}),
        model: r.model,
        turns: Number(r.turns),
        promptTokens: Number(r.p),
        completionTokens: Number(r.c),
        samplingTokens: Number(r.s),
      }));
    },
  };
}
