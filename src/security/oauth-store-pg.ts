/**
 * The OAuth store on PostgreSQL, for API replicas and workers on more than one machine (POSTGRES_URL):
 * one row per record, the value sealed with the host's seal key like the file store's, the key
 * hashed; the per-user lock is a PostgreSQL advisory lock held on one pooled connection.
 */
import type { Pool } from 'pg';
import { keyHash, MemoryOAuthStore, SealedFileOAuthStore, type OAuthStore } from './oauth-store';
import { sealToken, unsealToken } from './seal';
import { ensureSchema, withConnection } from '../pg/transaction';

const TABLE = 'dmh_oauth';

export class PostgresOAuthStore implements OAuthStore {
  private ready?: Promise<void>;
  private readonly inProcess = new MemoryOAuthStore();

  constructor(
    private readonly pool: Pool,
    private readonly sealKey: string,
  ) {}

  async get<T>(key: string): Promise<T | undefined> {
    await this.init();
    const { rows } = await this.pool.query<{ value: string }>(`SELECT value FROM ${TABLE} WHERE key_hash = $1`, [keyHash(key)]);
    const sealed = rows[0]?.value;
    const json = sealed === undefined ? undefined : unsealToken(sealed, this.sealKey);
    return json === undefined ? undefined : (JSON.parse(json) as T);
  }

  async set(key: string, value: unknown): Promise<void> {
    await this.init();
    if (value === undefined) {
      await this.pool.query(`DELETE FROM ${TABLE} WHERE key_hash = $1`, [keyHash(key)]);
      return;
    }
    await this.pool.query(
      `INSERT INTO ${TABLE} (key_hash, value, updated_at) VALUES ($1, $2, now())
       ON CONFLICT (key_hash) DO UPDATE SET value = excluded.value, updated_at = now()`,
      [keyHash(key), sealToken(JSON.stringify(value), this.sealKey)],
    );
  }

  async withLock<T>(key: string, fn: () => Promise<T>): Promise<T> {
    // In the process first (no connection held while waiting), then across processes.
    return await this.inProcess.withLock(key, async () => {
      const lockId = BigInt.asIntN(64, BigInt(`0x${keyHash(`lock:${key}`).slice(0, 16)}`)).toString();
      return await withConnection(this.pool, async (client) => {
        await client.query('SELECT pg_advisory_lock($1::bigint)', [lockId]);
        try {
          return await fn();
        } finally {
          await client.query('SELECT pg_advisory_unlock($1::bigint)', [lockId]);
        }
      });
    });
  }

  private init(): Promise<void> {
    this.ready ??= this.create().catch((error: unknown) => {
      this.ready = undefined;
      throw error;
    });
    return this.ready;
  }

  private async create(): Promise<void> {
    await ensureSchema(this.pool, async (q) => {
      await q(`CREATE TABLE IF NOT EXISTS ${TABLE} (key_hash text PRIMARY KEY, value text NOT NULL, updated_at timestamptz NOT NULL)`);
    });
  }
}

/** The store a deployment uses: PostgreSQL when it has one (several machines), else sealed files. */
export function oauthStoreFor(opts: { sealKey: string; dir: string; pool?: Pool }): OAuthStore {
  return opts.pool ? new PostgresOAuthStore(opts.pool, opts.sealKey) : new SealedFileOAuthStore(opts.dir, opts.sealKey);
}
