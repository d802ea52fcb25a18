/**
 * Usage at the API tier, over the real file ledger and a gateway that only accepts messages: the
 * tenant's daily budget refuses every user of the tenant once the tenant's turns and sessions'
 * summaries of the day reach it (the e2e tier covers the per-user one on real processes), and
 * GET /v1/admin/usage?groupBy=session sums per session and owner within the caller's visibility.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { InjectOptions } from 'fastify';
import { buildApp, type Authenticator } from '../../src/api/app';
import type { TurnGateway } from '../../src/api/gateway';
import { memoryRateLimiters } from '../../src/api/rate-limits';
import { USAGE_SCOPE } from '../../src/api/turns';
import type { HostConfig } from '../../src/config/host-schema';
import { fileUsageLedger, type UsageRecord } from '../../src/usage/ledger';
import { fakeAuth, openPolicy } from '../helpers/fake-auth';

const dir = mkdtempSync(path.join(tmpdir(), 'dmh-usage-api-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** As fakeAuth; "auditor" also holds the scope to read the tenant's usage. */
const auth: Authenticator = {
  async authenticate(header) {
    const user = await fakeAuth.authenticate(header);
    return user.id === 'auditor' ? { ...user, scopes: [USAGE_SCOPE] } : user;
  },
};
const as = (who: string) => ({ authorization: `Bearer ${who}` });

let files = 0;
async function setup(budgets: { tokensPerUserPerDay?: number; tokensPerTenantPerDay?: number } = {}, prices: HostConfig['prices'] = {}) {
  const ledger = fileUsageLedger(path.join(dir, `usage-${(files += 1)}.jsonl`));
  const submitted: string[] = [];
  // Only what submitting a message needs; every other use of the gateway would throw.
  const gateway = {
    async submitMessage({ turnId }: { turnId: string }) {
      submitted.push(turnId);
      return { kind: 'accepted' as const, created: true, position: 0 };
    },
  } as unknown as TurnGateway;
  const app = await buildApp({
    gateway,
    auth,
    policy: () => openPolicy,
    limiters: memoryRateLimiters({ userPerMinute: 1_000, tenantPerMinute: 1_000 }),
    maxMessageChars: 100,
    ssePollMs: 5,
    usage: { ledger, config: () => ({ budgets, prices }) },
  });
  let n = 0;
  const record = (userId: string, tokens: number, over: Partial<UsageRecord> = {}) =>
    ledger.record({
      turnId: `rec-${(n += 1)}`, sessionId: 's1', tenant: 'demo', userId, model: 'm', promptTokens: tokens, completionTokens: 0, samplingTokens: 0,
      at: new Date().toISOString(), ...over,
    });
  const inject = (opts: InjectOptions) => app.inject(opts);
  const message = (who: string) =>
    inject({ method: 'POST', url: '/v1/sessions/s/messages', payload: JSON.stringify({ text: 'hi' }), headers: { 'content-type': 'application/json', ...as(who) } });
  return { app, inject, message, record, submitted };
}

test("the tenant's daily budget refuses every user of the tenant once its turns and summaries reach it", async () => {
  const { app, message, record, submitted } = await setup({ tokensPerUserPerDay: 1_000, tokensPerTenantPerDay: 100 });
  try {
    await record('alice', 60);
    await record('mallory', 30);
    // Yesterday's tokens and another tenant's do not count.
    await record('alice', 500, { at: new Date(Date.now() - 36 * 3_600_000).toISOString() });
    await record('eve', 50, { tenant: 'other' });
    expect((await message('carol@demo')).statusCode).toBe(202);

    // A session's summary of older messages counts like a turn: 100 of 100.
    await record('mallory', 10, { kind: 'summary' });
    const refused = await message('carol@demo');
    expect(refused.statusCode).toBe(429);
    expect(refused.json().error.code).toBe('token_budget_exhausted');
    expect(refused.json().error.message).toMatch(/^This tenant has used 100 of its 100 tokens for today \(UTC\); new messages are accepted again after 00:00 UTC/);
    const retryAfter = Number(refused.headers['retry-after']);
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(86_400);
    // Every user of the tenant, even one well within their own budget; other tenants go on.
    expect((await message('alice@demo')).statusCode).toBe(429);
    expect((await message('eve@other')).statusCode).toBe(202);
    expect(submitted).toHaveLength(2);
  } finally {
    await app.close();
  }
});

test('usage by session: per owner and session, summaries beside turns, only the own sessions without the scope', async () => {
  const { app, inject, record } = await setup();
  try {
    await record('alice', 10, { sessionId: 's1' });
    await record('alice', 7, { sessionId: 's1', kind: 'summary' });
    await record('alice', 5, { sessionId: 's2' });
    // Mallory's session has the same id as alice's: it is hers, and apart.
    await record('mallory', 3, { sessionId: 's1' });
    await record('eve', 99, { sessionId: 's1', tenant: 'other' });
    const usage = (who: string, query = '') => inject({ method: 'GET', url: `/v1/admin/usage?groupBy=session${query}`, headers: as(who) });

    const own = await usage('alice@demo');
    expect(own.statusCode).toBe(200);
    expect(own.json().groupBy).toBe('session');
    expect(own.json().rows).toEqual([
      { userId: 'alice', sessionId: 's1', model: 'm', turns: 1, summaries: 1, promptTokens: 17, completionTokens: 0, samplingTokens: 0, totalTokens: 17 },
      { userId: 'alice', sessionId: 's2', model: 'm', turns: 1, summaries: 0, promptTokens: 5, completionTokens: 0, samplingTokens: 0, totalTokens: 5 },
    ]);
    expect(own.json().totals).toEqual({ turns: 2, summaries: 1, promptTokens: 22, completionTokens: 0, samplingTokens: 0, totalTokens: 22, cost: [] });

    const tenant = await usage('auditor@demo');
    expect(tenant.json().rows.map((r: { userId: string; sessionId: string; totalTokens: number }) => [r.userId, r.sessionId, r.totalTokens])).toEqual([
      ['alice', 's1', 17],
      ['alice', 's2', 5],
      ['mallory', 's1', 3],
    ]);
    expect((await usage('auditor@demo', '&userId=mallory')).json().rows).toEqual([expect.objectContaining({ userId: 'mallory', sessionId: 's1', totalTokens: 3 })]);
    expect((await usage('alice@demo', '&userId=mallory')).statusCode).toBe(403);
  } finally {
    await app.close();
  }
});

test('usage by provider and model: the same model id through two providers is two rows, each priced by its provider first', async () => {
  const prices = {
    'claude-x': { promptPerMillion: 1, completionPerMillion: 2, currency: 'USD' },
    'anthropic:claude-x': { promptPerMillion: 3, completionPerMillion: 15, currency: 'USD' },
  };
  const { app, inject, record } = await setup({}, prices);
  try {
    await record('alice', 1_000_000, { provider: 'anthropic', model: 'claude-x', completionTokens: 100_000 });
    await record('alice', 500_000, { provider: 'anthropic', model: 'claude-x', kind: 'summary' });
    // The same id through an OpenAI-compatible proxy: the model id's price.
    await record('alice', 1_000_000, { provider: 'openai', model: 'claude-x' });
    // Recorded before providers were: no provider, the model id's price.
    await record('alice', 2_000_000, { model: 'claude-x' });
    await record('alice', 10, { provider: 'gemini', model: 'gemini-y' });
    const res = await inject({ method: 'GET', url: '/v1/admin/usage?groupBy=tenant', headers: as('alice@demo') });
    expect(res.statusCode).toBe(200);
    const rows = res.json().rows as Array<Record<string, unknown>>;
    expect(rows.map((r) => [r.provider, r.model, r.totalTokens, r.cost])).toEqual([
      [undefined, 'claude-x', 2_000_000, { amount: 2, currency: 'USD' }],
      ['anthropic', 'claude-x', 1_600_000, { amount: 6, currency: 'USD' }],
      ['gemini', 'gemini-y', 10, undefined],
      ['openai', 'claude-x', 1_000_000, { amount: 1, currency: 'USD' }],
    ]);
    expect(rows[0]).not.toHaveProperty('provider');
    expect(rows[1]).toMatchObject({ turns: 1, summaries: 1 });
    expect(res.json().totals.cost).toEqual([{ amount: 9, currency: 'USD' }]);
  } finally {
    await app.close();
  }
});
