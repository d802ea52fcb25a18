/** Daily token budgets per user and per tenant (host config `budgets`), counted from the usage ledger. */
import type { UserContext } from '../../shared/user';
import { totalTokens } from '../../usage/ledger';
import { HttpError } from '../errors';
import type { TurnServiceOptions } from './options';
import { unavailableOnError } from './unavailable';

export const DAY_MS = 24 * 60 * 60 * 1000;

export function startOfUtcDay(d: Date): Date {
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()));
}

/** Refuses a new turn (429 until 00:00 UTC) once the caller or their tenant used the day's tokens. */
export async function withinBudget(opts: TurnServiceOptions, user: UserContext): Promise<void> {
  if (!opts.usage) return;
  const { budgets } = opts.usage.config();
  const from = startOfUtcDay(new Date());
  const to = new Date(from.getTime() + DAY_MS);
  const checks = [
    ['user', budgets.tokensPerUserPerDay, user.id],
    ['tenant', budgets.tokensPerTenantPerDay, undefined],
  ] as const;
  for (const [scope, budget, userId] of checks) {
    if (budget === undefined) continue;
    const rows = await unavailableOnError(() =>
      (opts.usage as NonNullable<typeof opts.usage>).ledger.sum({ tenant: user.tenant, ...(userId ? { userId } : {}), from, to, groupBy: 'tenant' }),
    );
    const used = rows.reduce((n, r) => n + totalTokens(r), 0);
    if (used < budget) continue;
    const seconds = Math.max(1, Math.ceil((to.getTime() - Date.now()) / 1000));
    throw new HttpError(
      429,
      'token_budget_exhausted',
      `This ${scope} has used ${used} of its ${budget} tokens for today (UTC); new messages are accepted again after 00:00 UTC, in ${Math.ceil(seconds / 60)} min.`,
      seconds,
    );
  }
}
