/**
 * Per-user and per-tenant limits on message submission, in fixed one-minute windows. In memory by
 * default (one API process); with PostgreSQL, shared by every replica, so N replicas allow the
 * configured rate, not N times it. If PostgreSQL fails, each replica falls back to its own memory
 * limiter rather than refusing every message.
 */
import type { Pool } from 'pg';
import { RateLimiterMemory, RateLimiterPostgres, type RateLimiterAbstract } from 'rate-limiter-flexible';

export interface RateLimits {
  userPerMinute: number;
  tenantPerMinute: number;
}

export interface RateLimiters {
  user: RateLimiterAbstract;
  tenant: RateLimiterAbstract;
}

const TABLE = 'dmh_rate_limits';

export function memoryRateLimiters(limits: RateLimits): RateLimiters {
  return {
    user: new RateLimiterMemory({ keyPrefix: 'user', points: limits.userPerMinute, duration: 60 }),
    tenant: new RateLimiterMemory({ keyPrefix: 'tenant', points: limits.tenantPerMinute, duration: 60 }),
  };
}

/** Limiters in PostgreSQL (the table is created if missing); resolves once the table is there. */
export async function postgresRateLimiters(limits: RateLimits, pool: Pool): Promise<RateLimiters> {
  const fallback = memoryRateLimiters(limits);
  const make = (keyPrefix: 'user' | 'tenant', points: number, tableCreated: boolean) =>
    new Promise<RateLimiterAbstract>((resolve, reject) => {
      const limiter: RateLimiterAbstract = new RateLimiterPostgres(
        { storeClient: pool, storeType: 'pool', tableName: TABLE, tableCreated, keyPrefix, points, duration: 60, insuranceLimiter: fallback[keyPrefix], clearExpiredByTimeout: true },
        // Called from inside the constructor when the table exists: settle after `limiter` is assigned.
        (err?: Error) => queueMicrotask(() => (err ? reject(err) : resolve(limiter))),
      );
    });
  // One after the other: the first creates the table.
  const user = await make('user', limits.userPerMinute, false);
  const tenant = await make('tenant', limits.tenantPerMinute, true);
  return { user, tenant };
}
