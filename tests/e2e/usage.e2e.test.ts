/**
 * Tokens and cost, on real processes: the worker records each model call attempt's tokens before
 * its activity ends, and the turn once when it ends (and audits its tokens); GET /v1/admin/usage sums them by user with the host config's prices, the whole
 * tenant only for callers allowed to see it; a daily budget per user refuses that user's next
 * message with 429 `token_budget_exhausted` (and when to retry), while other users go on.
 */
import { existsSync, readFileSync } from 'node:fs';
import type { z } from 'zod';
import type { UsageReport } from '../../src/api/contract';
import { bearer, getJson, postMessage, readSse, waitFor } from '../helpers/http';
import { startSystem, type TestSystem } from '../helpers/system';

let sys: TestSystem;
beforeAll(async () => {
  sys = await startSystem({
    host: {
      // One turn's worth: the first message is admitted (nothing used yet), the next is not.
      budgets: { tokensPerUserPerDay: 1 },
      prices: { 'demo-model': { promptPerMillion: 3, completionPerMillion: 15, currency: 'USD' } },
    },
  });
}, 120_000);
afterAll(async () => {
  await sys?.stop();
});

type UsageRow = z.output<typeof UsageReport>['rows'][number];

test('a turn is recorded once with its tokens and cost; the budget then stops that user only', async () => {
  const admin = bearer(await sys.token('admin'));
  const post = await postMessage(sys.apiUrl, 'usage', 'remember that tokens cost money', admin);
  expect(post.status).toBe(202);
  const events = await readSse(`${sys.apiUrl}${post.body.eventsUrl as string}`, { headers: admin, timeoutMs: 60_000 });
  expect(events.at(-1)?.event).toBe('done');
  const turn = (await getJson(`${sys.apiUrl}/v1/turns/${post.body.turnId as string}`, admin)).body as { usage: { promptTokens: number; completionTokens: number; samplingTokens: number } };
  expect(turn.usage.promptTokens).toBeGreaterThan(0);
  expect(turn.usage.completionTokens).toBeGreaterThan(0);

  // The worker recorded its model calls' attempts (and the turn when it ended); the report sums them with the price.
  const report = await waitFor(async () => {
    const r = await getJson(`${sys.apiUrl}/v1/admin/usage?groupBy=user`, admin);
    return r.status === 200 && r.body.rows.length > 0 ? r.body : undefined;
  }, 60_000, 200);
  const row = report.rows.find((r: UsageRow) => r.userId === 'u-ada') as UsageRow;
  expect(row).toMatchObject({ model: 'demo-model', turns: 1, ...turn.usage });
  expect(row.totalTokens).toBe(turn.usage.promptTokens + turn.usage.completionTokens + turn.usage.samplingTokens);
  const expected = (turn.usage.promptTokens * 3 + (turn.usage.completionTokens + turn.usage.samplingTokens) * 15) / 1_000_000;
  expect(row.cost?.currency).toBe('USD');
  expect(row.cost?.amount).toBeCloseTo(expected, 6);
  expect(report.totals).toMatchObject({ turns: 1, totalTokens: row.totalTokens, cost: [{ currency: 'USD' }] });
  expect(report.tenant).toBe('demo');

  // Grouped by tenant, the same sums; a period before the turn has none.
  const tenant = (await getJson(`${sys.apiUrl}/v1/admin/usage?groupBy=tenant`, admin)).body;
  expect(tenant.rows).toEqual([expect.objectContaining({ model: 'demo-model', turns: 1, totalTokens: row.totalTokens })]);
  expect(tenant.rows[0].userId).toBeUndefined();
  const earlier = await getJson(`${sys.apiUrl}/v1/admin/usage?from=2026-01-01T00:00:00Z&to=2026-01-02T00:00:00Z`, admin);
  expect(earlier.body.rows).toEqual([]);

  // The turn's audit entry carries its tokens. The worker appends it after the usage record the
  // report already shows, so it may not be written yet: wait for it (complete lines only).
  const entry = await waitFor(async () => {
    const lines = existsSync(sys.auditFile) ? readFileSync(sys.auditFile, 'utf8').split('\n').slice(0, -1) : [];
    const audit = lines.map((l) => JSON.parse(l) as { kind: string; workflowId?: string; detail?: string });
    return audit.find((e) => e.kind === 'turn_usage' && e.workflowId === post.body.turnId);
  }, 60_000);
  expect(entry.detail).toBe(`model=demo-model prompt=${turn.usage.promptTokens} completion=${turn.usage.completionTokens} sampling=${turn.usage.samplingTokens}`);

  // The user's budget (1 token a day) is used up: the next message is refused, with when to retry.
  const refused = await postMessage(sys.apiUrl, 'usage', 'hello', admin);
  expect(refused.status).toBe(429);
  expect(refused.body.error.code).toBe('token_budget_exhausted');
  expect(refused.body.error.message).toMatch(/^This user has used \d+ of its 1 tokens for today \(UTC\); new messages are accepted again after 00:00 UTC/);
  const retryAfter = Number(refused.headers.get('retry-after'));
  expect(retryAfter).toBeGreaterThan(0);
  expect(retryAfter).toBeLessThanOrEqual(86_400);
  // Another user of the tenant is not affected by it.
  expect((await postMessage(sys.apiUrl, 'usage-other', 'hello', bearer(await sys.token('teacher')))).status).toBe(202);
}, 120_000);

test("usage is the caller's own unless they may read the tenant's; bad periods are refused", async () => {
  const student = bearer(await sys.token('student'));
  const own = await getJson(`${sys.apiUrl}/v1/admin/usage`, student);
  expect(own.status).toBe(200);
  expect(own.body.rows.every((r: UsageRow) => r.userId === 'u-bob')).toBe(true);
  const other = await getJson(`${sys.apiUrl}/v1/admin/usage?userId=u-ada`, student);
  expect(other.status).toBe(403);
  expect(other.body.error.message).toMatch(/usage\.read/);
  const admin = bearer(await sys.token('admin'));
  for (const [query, message] of [
    ['from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z', /from must be before to/],
    ['from=2020-01-01T00:00:00Z&to=2026-01-01T00:00:00Z', /at most 366 days/],
    ['from=yesterday', /^query: from/],
    ['groupBy=model', /^query: groupBy/],
  ] as const) {
    const res = await getJson(`${sys.apiUrl}/v1/admin/usage?${query}`, admin);
    expect(res.status).toBe(400);
    expect(res.body.error.message).toMatch(message);
  }
});
