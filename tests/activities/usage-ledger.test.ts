/**
 * The usage ledger's two stores agree: a turn counts once by id (a worker that records it again
 * changes nothing), sums group by user, session or tenant, provider and model over [from, to), a session's
 * summaries count as summaries beside its turns, other tenants never mix in; the file store picks up
 * lines appended by another process and ignores a half-written last one.
 */
import { appendFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileUsageLedger, postgresUsageLedger, type UsageLedger, type UsageRecord } from '../../src/usage/ledger';
import { usePostgres } from '../helpers/postgres';

const pg = usePostgres();
const dir = mkdtempSync(path.join(tmpdir(), 'dmh-usage-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const rec = (turnId: string, userId: string, at: string, tokens: [number, number, number], over: Partial<UsageRecord> = {}): UsageRecord => ({
  turnId, sessionId: 's', tenant: 'acme', userId, model: 'm1', promptTokens: tokens[0], completionTokens: tokens[1], samplingTokens: tokens[2], at, ...over,
});

const DAY = { from: new Date('2026-11-25T00:00:00Z'), to: new Date('2026-11-26T00:00:00Z') };

async function exercise(ledger: UsageLedger): Promise<void> {
  await ledger.record(rec('t1', 'ann', '2026-11-25T01:00:00Z', [10, 5, 0]));
  await ledger.record(rec('t1', 'ann', '2026-11-25T01:00:01Z', [10, 5, 0])); // the same turn again
  await ledger.record(rec('t2', 'ann', '2026-11-25T02:00:00Z', [1, 2, 3], { model: 'm2' }));
  await ledger.record(rec('t3', 'bob', '2026-11-25T23:59:59Z', [7, 7, 0]));
  await ledger.record(rec('t4', 'bob', '2026-11-26T00:00:00Z', [100, 100, 0])); // the next day
  await ledger.record(rec('t5', 'eve', '2026-11-25T03:00:00Z', [50, 50, 0], { tenant: 'other' }));
  // Ann's session summarized its older messages (twice the same attempt: once), and bob has a session
  // of the same name: sessions are per owner.
  await ledger.record(rec('sum-1', 'ann', '2026-11-25T04:00:00Z', [20, 4, 0], { kind: 'summary' }));
  await ledger.record(rec('sum-1', 'ann', '2026-11-25T04:00:01Z', [20, 4, 0], { kind: 'summary' }));
  await ledger.record(rec('t6', 'ann', '2026-11-25T05:00:00Z', [3, 3, 0], { sessionId: 'x' }));

  expect(await ledger.sum({ tenant: 'acme', ...DAY, groupBy: 'user' })).toEqual([
    { tenant: 'acme', userId: 'ann', provider: '', model: 'm1', turns: 2, summaries: 1, promptTokens: 33, completionTokens: 12, samplingTokens: 0 },
    { tenant: 'acme', userId: 'ann', provider: '', model: 'm2', turns: 1, summaries: 0, promptTokens: 1, completionTokens: 2, samplingTokens: 3 },
    { tenant: 'acme', userId: 'bob', provider: '', model: 'm1', turns: 1, summaries: 0, promptTokens: 7, completionTokens: 7, samplingTokens: 0 },
  ]);
  expect(await ledger.sum({ tenant: 'acme', ...DAY, groupBy: 'session' })).toEqual([
    { tenant: 'acme', userId: 'ann', sessionId: 's', provider: '', model: 'm1', turns: 1, summaries: 1, promptTokens: 30, completionTokens: 9, samplingTokens: 0 },
    { tenant: 'acme', userId: 'ann', sessionId: 's', provider: '', model: 'm2', turns: 1, summaries: 0, promptTokens: 1, completionTokens: 2, samplingTokens: 3 },
    { tenant: 'acme', userId: 'ann', sessionId: 'x', provider: '', model: 'm1', turns: 1, summaries: 0, promptTokens: 3, completionTokens: 3, samplingTokens: 0 },
    { tenant: 'acme', userId: 'bob', sessionId: 's', provider: '', model: 'm1', turns: 1, summaries: 0, promptTokens: 7, completionTokens: 7, samplingTokens: 0 },
  ]);
  expect(await ledger.sum({ tenant: 'acme', ...DAY, groupBy: 'tenant' })).toEqual([
    { tenant: 'acme', provider: '', model: 'm1', turns: 3, summaries: 1, promptTokens: 40, completionTokens: 19, samplingTokens: 0 },
    { tenant: 'acme', provider: '', model: 'm2', turns: 1, summaries: 0, promptTokens: 1, completionTokens: 2, samplingTokens: 3 },
  ]);
  expect(await ledger.sum({ tenant: 'acme', userId: 'bob', ...DAY, groupBy: 'session' })).toEqual([
    { tenant: 'acme', userId: 'bob', sessionId: 's', provider: '', model: 'm1', turns: 1, summaries: 0, promptTokens: 7, completionTokens: 7, samplingTokens: 0 },
  ]);
  expect(await ledger.sum({ tenant: 'nobody', ...DAY, groupBy: 'user' })).toEqual([]);

  // A turn recorded per model call attempt (two attempts of step 1, one of step 2, one recorded twice)
  // and at its end (its sampling): one turn, every attempt's tokens once.
  const attempt = (key: string, tokens: [number, number, number], kind: UsageRecord['kind'] = 'llm') =>
    rec(key, 'dan', '2026-11-25T06:00:00Z', tokens, { kind, ...(kind === 'llm' ? { turn: 't7' } : {}) });
  await ledger.record(attempt('llm/t7/r/1/1', [5, 1, 0]));
  await ledger.record(attempt('llm/t7/r/1/2', [5, 4, 0]));
  await ledger.record(attempt('llm/t7/r/1/2', [5, 4, 0]));
  await ledger.record(attempt('llm/t7/r/2/1', [9, 2, 0]));
  await ledger.record(attempt('t7', [0, 0, 6], 'turn'));
  expect(await ledger.sum({ tenant: 'acme', userId: 'dan', ...DAY, groupBy: 'session' })).toEqual([
    { tenant: 'acme', userId: 'dan', sessionId: 's', provider: '', model: 'm1', turns: 1, summaries: 0, promptTokens: 19, completionTokens: 7, samplingTokens: 6 },
  ]);
  // A retried step reads its earlier attempts by key; keys never recorded are not there.
  expect((await ledger.get(['llm/t7/r/1/1', 'llm/t7/r/1/9'])).map((r) => [r.turnId, r.kind, r.turn, r.promptTokens, r.completionTokens, Date.parse(r.at)])).toEqual([
    ['llm/t7/r/1/1', 'llm', 't7', 5, 1, Date.parse('2026-11-25T06:00:00Z')],
  ]);
  expect(await ledger.get([])).toEqual([]);

  // The same model id through two providers is two rows; a record's provider comes back with it.
  await ledger.record(rec('p1', 'fay', '2026-11-25T07:00:00Z', [4, 1, 0], { provider: 'anthropic', model: 'claude-x' }));
  await ledger.record(rec('p2', 'fay', '2026-11-25T07:00:01Z', [2, 2, 0], { provider: 'openai', model: 'claude-x' }));
  await ledger.record(rec('p3', 'fay', '2026-11-25T07:00:02Z', [1, 1, 0], { provider: 'anthropic', model: 'claude-x' }));
  expect(await ledger.sum({ tenant: 'acme', userId: 'fay', ...DAY, groupBy: 'user' })).toEqual([
    { tenant: 'acme', userId: 'fay', provider: 'anthropic', model: 'claude-x', turns: 2, summaries: 0, promptTokens: 5, completionTokens: 2, samplingTokens: 0 },
    { tenant: 'acme', userId: 'fay', provider: 'openai', model: 'claude-x', turns: 1, summaries: 0, promptTokens: 2, completionTokens: 2, samplingTokens: 0 },
  ]);
  expect((await ledger.get(['p1', 't1'])).map((r) => [r.turnId, r.provider, r.model])).toEqual([
    ['p1', 'anthropic', 'claude-x'],
    ['t1', undefined, 'm1'],
  ]);
}

test('the file store', async () => {
  const file = path.join(dir, 'usage.jsonl');
  await exercise(fileUsageLedger(file));
  // Another process appends; a half-written line waits until it is complete.
  const reader = fileUsageLedger(file);
  expect((await reader.sum({ tenant: 'acme', userId: 'carl', ...DAY, groupBy: 'user' })).length).toBe(0);
  appendFileSync(file, `${JSON.stringify(rec('t9', 'carl', '2026-11-25T05:00:00Z', [1, 1, 1]))}\n{"turnId":"t10","ten`);
  expect(await reader.sum({ tenant: 'acme', userId: 'carl', ...DAY, groupBy: 'user' })).toEqual([
    { tenant: 'acme', userId: 'carl', provider: '', model: 'm1', turns: 1, summaries: 0, promptTokens: 1, completionTokens: 1, samplingTokens: 1 },
  ]);
});

test('the PostgreSQL store, written from two machines', async () => {
  const [a, b] = await Promise.all([postgresUsageLedger(pg.pool()), postgresUsageLedger(pg.pool())]);
  await exercise({ record: (r) => (r.turnId === 't1' ? a : b).record(r), get: (keys) => b.get(keys), sum: (q) => a.sum(q) });
});
