/** The usage report: a tenant's token usage over a period, by user, session or for the tenant, with cost. */
import type { z } from 'zod';
import type { UserContext } from '../../shared/user';
import { totalTokens, type UsageGroup, type UsageRow } from '../../usage/ledger';
import type { HostConfig } from '../../config/host-schema';
import { costOf, priceOf } from '../../usage/prices';
import type { UsageQuery, UsageReport } from '../contract';
import { HttpError } from '../errors';
import { DAY_MS, startOfUtcDay } from './budgets';
import type { TurnServiceOptions } from './options';
import { unavailableOnError } from './unavailable';

/** Lets a caller read the usage of their whole tenant. */
export const USAGE_SCOPE = 'usage.read';

export function createUsageReport(opts: TurnServiceOptions) {
  return {
    /**
     * Token usage of the caller's tenant over a period, by user, session or for the tenant, and by provider and
     * model, with cost where the host config prices the model. Callers with the `usage.read` scope (or the policy's super scope)
     * see the whole tenant; others only themselves.
     */
    async usage(user: UserContext, q: z.output<typeof UsageQuery>): Promise<z.output<typeof UsageReport>> {
      if (!opts.usage) throw new HttpError(404, 'not_found', 'Usage is not recorded by this deployment.');
      const policy = opts.policy();
      const tenantWide = user.scopes.includes(USAGE_SCOPE) || (policy.superScope !== undefined && user.scopes.includes(policy.superScope));
      if (q.userId !== undefined && q.userId !== user.id && !tenantWide) {
        throw new HttpError(403, 'forbidden', `Reading another user's usage needs the ${USAGE_SCOPE} scope.`);
      }
      const from = q.from ? new Date(q.from) : startOfUtcDay(new Date());
      const to = q.to ? new Date(q.to) : new Date();
      if (!(from < to)) throw new HttpError(400, 'invalid_request', 'query: from must be before to');
      if (to.getTime() - from.getTime() > 366 * DAY_MS) throw new HttpError(400, 'invalid_request', 'query: the period may span at most 366 days');
      const userId = q.userId ?? (tenantWide ? undefined : user.id);
      const rows = await unavailableOnError(() =>
        (opts.usage as NonNullable<typeof opts.usage>).ledger.sum({ tenant: user.tenant, ...(userId ? { userId } : {}), from, to, groupBy: q.groupBy }),
      );
      return usageReport(user.tenant, from, to, q.groupBy, rows, opts.usage.config().prices);
    },
  };
}

function usageReport(tenant: string, from: Date, to: Date, groupBy: UsageGroup, rows: UsageRow[], prices: HostConfig['prices']): z.output<typeof UsageReport> {
  const costs = new Map<string, number>();
  const out = rows.map((r) => {
    const price = priceOf(prices, r.provider || undefined, r.model);
    const cost = price ? { amount: round6(costOf(price, r.promptTokens, r.completionTokens + r.samplingTokens)), currency: price.currency } : undefined;
    if (cost) costs.set(cost.currency, (costs.get(cost.currency) ?? 0) + cost.amount);
    const owner = { ...(r.userId !== undefined ? { userId: r.userId } : {}), ...(r.sessionId !== undefined ? { sessionId: r.sessionId } : {}) };
    const figures = { turns: r.turns, summaries: r.summaries, promptTokens: r.promptTokens, completionTokens: r.completionTokens, samplingTokens: r.samplingTokens };
    return { ...owner, ...(r.provider !== '' ? { provider: r.provider } : {}), model: r.model, ...figures, totalTokens: totalTokens(r), ...(cost ? { cost } : {}) };
  });
  const sum = (k: 'turns' | 'summaries' | 'promptTokens' | 'completionTokens' | 'samplingTokens' | 'totalTokens') => out.reduce((n, r) => n + r[k], 0);
  return {
    tenant,
    from: from.toISOString(),
    to: to.toISOString(),
    groupBy,
    rows: out,
    totals: {
      turns: sum('turns'),
      summaries: sum('summaries'),
      promptTokens: sum('promptTokens'),
      completionTokens: sum('completionTokens'),
      samplingTokens: sum('samplingTokens'),
      totalTokens: sum('totalTokens'),
      cost: [...costs].map(([currency, amount]) => ({ amount: round6(amount), currency })),
    },
  };
}

const round6 = (n: number): number => Math.round(n * 1e6) / 1e6;
