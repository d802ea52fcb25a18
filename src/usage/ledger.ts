/**
 * Token usage, for budgets and the admin usage route: each model call's attempt is recorded by its
 * activity before the activity ends, answered or not (src/usage/attempt-usage.ts: a turn's LLM steps,
 * a session's summaries); each turn once more when it ends, for its servers' sampling tokens (the turn
 * workflow's sink, never on replay). The API sums the records of a period by user, session or tenant,
 * and checks the day's total before it starts a turn (docs/decisions/0029-usage-exact.md).
 *
 * Two stores: a JSON Lines file (USAGE_LOG, the default: the API and the workers on one host, like the
 * audit file), read incrementally by the API; or the table dmh_usage in PostgreSQL (POSTGRES_URL, for
 * replicas and workers on several machines). A record counts at most once by its key in either (a
 * worker that crashed after recording and records again changes nothing).
 */
import { appendFileSync, mkdirSync } from 'node:fs';
import { open } from 'node:fs/promises';
import path from 'node:path';
import type { Pool } from 'pg';
import { ensureSchema } from '../pg/transaction';

export interface UsageRecord {
  /** The record's key: the turn's id, or for a model call the key of its activity attempt. */
  turnId: string;
  /** Absent in records written before summaries were counted: a turn. */
  kind?: UsageKind;
  /** With kind `llm`: the turn the attempt belongs to (the report counts a turn once, whatever its records). */
  turn?: string;
  sessionId: string;
  tenant: string;
  userId: string;
  /** The provider that served `model` (openai, anthropic, gemini); absent in records written before providers were. */
  provider?: string;
  model: string;
  promptTokens: number;
  completionTokens: number;
  samplingTokens: number;
  /** ISO time the turn (or the summarization) ended. */
  at: string;
}

/**
 * `turn`: a turn ended (its sampling tokens; before per-attempt records, all its tokens); `llm`: one
 * attempt of a turn's model call; `summary`: one attempt of a session summarizing its older messages.
 */
export type UsageKind = 'turn' | 'llm' | 'summary';

export const USAGE_KINDS: readonly UsageKind[] = ['turn', 'llm', 'summary'];

export type UsageGroup = 'user' | 'session' | 'tenant';

export interface UsageRow {
  tenant: string;
  /** With groupBy `user` and `session` (a session id is the owner's own: two users may use the same one). */
  userId?: string;
  /** With groupBy `session`. */
  sessionId?: string;
  /** The provider that served `model`; '' for records written before providers were. */
  provider: string;
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
  /** Idempotent by key: a record already there stays as it is. */
  record(r: UsageRecord): Promise<void>;
  /** The records of these keys that exist (e.g. a model call's earlier attempts). */
  get(keys: readonly string[]): Promise<UsageRecord[]>;
  /** Sums per group, provider and model over [from, to). */
  sum(q: UsageQuery): Promise<UsageRow[]>;
  close?(): Promise<void>;
}

export const totalTokens = (r: Pick<UsageRow, 'promptTokens' | 'completionTokens' | 'samplingTokens'>): number =>
  r.promptTokens + r.completionTokens + r.samplingTokens;

/** The turn a record counts for, if any (a summary is not a turn). */
const turnOf = (r: UsageRecord): string | undefined => (r.kind === 'summary' ? undefined : r.kind === 'llm' ? (r.turn ?? r.turnId) : r.turnId);

function accumulate(records: Iterable<UsageRecord>, q: UsageQuery): UsageRow[] {
  const rows = new Map<string, UsageRow>();
  const turns = new Map<string, Set<string>>();
  const from = q.from.getTime();
  const to = q.to.getTime();
  for (const r of records) {
    const at = Date.parse(r.at);
    if (r.tenant !== q.tenant || at < from || at >= to || (q.userId !== undefined && r.userId !== q.userId)) continue;
    const byUser = q.groupBy !== 'tenant';
    const bySession = q.groupBy === 'session';
    const provider = r.provider ?? '';
    const key = `${byUser ? r.userId : ''}\u0000${bySession ? r.sessionId : ''}\u0000${provider}\u0000${r.model}`;
    const row = rows.get(key) ?? {
      tenant: r.tenant,
      ...(byUser ? { userId: r.userId } : {}),
      ...(bySession ? { sessionId: r.sessionId } : {}),
      provider,
      model: r.model,
      turns: 0,
      summaries: 0,
      promptTokens: 0,
      completionTokens: 0,
      samplingTokens: 0,
    };
    if (r.kind === 'summary') row.summaries += 1;
    const turn = turnOf(r);
    const seen = turns.get(key) ?? new Set<string>();
    if (turn !== undefined && !seen.has(turn)) {
      seen.add(turn);
      row.turns += 1;
    }
    turns.set(key, seen);
    row.promptTokens += r.promptTokens;
    row.completionTokens += r.completionTokens;
    row.samplingTokens += r.samplingTokens;
    rows.set(key, row);
  }
  return [...rows.values()].sort(
    (a, b) => (a.userId ?? '').localeCompare(b.userId ?? '') || (a.sessionId ?? '').localeCompare(b.sessionId ?? '') || a.provider.localeCompare(b.provider) || a.model.localeCompare(b.model),
  );
}

function parseRecord(line: string): UsageRecord | undefined {
  try {
    const r = JSON.parse(line) as Partial<UsageRecord>;
    const n = (v: unknown) => typeof v === 'number' && Number.isFinite(v) && v >= 0;
    if (typeof r.turnId !== 'string' || typeof r.tenant !== 'string' || typeof r.userId !== 'string' || typeof r.at !== 'string') return undefined;
    if (!n(r.promptTokens) || !n(r.completionTokens) || !n(r.samplingTokens)) return undefined;
    if (r.kind !== undefined && !USAGE_KINDS.includes(r.kind)) return undefined;
    if (r.turn !== undefined && typeof r.turn !== 'string') return undefined;
    if (r.provider !== undefined && typeof r.provider !== 'string') return undefined;
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

  const current = async (): Promise<Map<string, UsageRecord>> => {
    reading ??= catchUp().finally(() => (reading = undefined));
    await reading;
    return byTurn;
  };

  return {
    async record(r) {
      // A repeat is appended too, and not counted (the reader keeps the first line of a key): a writer
      // need not read the file, so a worker reads it only to look a retried step's attempts up. On
      // every model call's path: synchronous calls, microseconds on a local disk, where each
      // asynchronous one waits for a thread-pool trip and a turn of the event loop (decision 0035).
      const line = `${JSON.stringify(r)}\n`;
      try {
        appendFileSync(resolved, line, 'utf8');
      } catch (err) {
        // Its directory is made when the first append finds it missing, not before every append.
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
        mkdirSync(path.dirname(resolved), { recursive: true });
        appendFileSync(resolved, line, 'utf8');
      }
    },
    async get(keys) {
      const records = await current();
      return keys.flatMap((k) => records.get(k) ?? []);
    },
    async sum(q) {
      return accumulate((await current()).values(), q);
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
    // Before per-attempt records: every row of a turn was keyed by the turn itself.
    await q(`ALTER TABLE ${TABLE} ADD COLUMN IF NOT EXISTS turn text`);
    // Before providers were recorded: '' (the report shows no provider for them).
    await q(`ALTER TABLE ${TABLE} ADD COLUMN IF NOT EXISTS provider text NOT NULL DEFAULT ''`);
    await q(`CREATE INDEX IF NOT EXISTS ${TABLE}_tenant_user_at ON ${TABLE} (tenant, user_id, at)`);
  });
  return {
    async record(r) {
      await pool.query(
        `INSERT INTO ${TABLE} (turn_id, kind, turn, session_id, tenant, user_id, provider, model, prompt_tokens, completion_tokens, sampling_tokens, at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) ON CONFLICT (turn_id) DO NOTHING`,
        [r.turnId, r.kind ?? 'turn', r.turn ?? null, r.sessionId, r.tenant, r.userId, r.provider ?? '', r.model, r.promptTokens, r.completionTokens, r.samplingTokens, r.at],
      );
    },
    async get(keys) {
      if (keys.length === 0) return [];
      const { rows } = await pool.query<{ turn_id: string; kind: UsageKind; turn: string | null; session_id: string; tenant: string; user_id: string; provider: string; model: string; p: string; c: string; s: string; at: Date }>(
        `SELECT turn_id, kind, turn, session_id, tenant, user_id, provider, model, prompt_tokens::text AS p, completion_tokens::text AS c, sampling_tokens::text AS s, at
           FROM ${TABLE} WHERE turn_id = ANY($1::text[]) ORDER BY turn_id`,
        [keys],
      );
      return rows.map((r) => ({
        turnId: r.turn_id,
        kind: r.kind,
        ...(r.turn !== null ? { turn: r.turn } : {}),
        sessionId: r.session_id,
        tenant: r.tenant,
        userId: r.user_id,
        ...(r.provider !== '' ? { provider: r.provider } : {}),
        model: r.model,
        promptTokens: Number(r.p),
        completionTokens: Number(r.c),
        samplingTokens: Number(r.s),
        at: r.at.toISOString(),
      }));
    },
    async sum(q) {
      const byUser = q.groupBy !== 'tenant';
      const bySession = q.groupBy === 'session';
      const groups = `${byUser ? 'user_id, ' : ''}${bySession ? 'session_id, ' : ''}provider, model`;
      const { rows } = await pool.query<{ user_id: string | null; session_id: string | null; provider: string; model: string; turns: string; summaries: string; p: string; c: string; s: string }>(
        `SELECT ${byUser ? 'user_id' : 'NULL::text AS user_id'}, ${bySession ? 'session_id' : 'NULL::text AS session_id'}, provider, model,
                (count(DISTINCT CASE WHEN kind = 'llm' THEN coalesce(turn, turn_id) WHEN kind = 'summary' THEN NULL ELSE turn_id END))::text AS turns, (count(*) FILTER (WHERE kind = 'summary'))::text AS summaries,
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
        provider: r.provider,
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
