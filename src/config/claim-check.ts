import path from 'node:path';
import type { Pool } from 'pg';
import { directoryBlobStore, type BlobStore } from '../security/blob-store';
import { postgresBlobStore } from '../security/blob-store-pg';
import type { ClaimCheckOptions } from '../security/claim-check';
import type { EnvConfig } from './index';

/**
 * The claim check's store and threshold from the environment (docs/decisions/0022-claim-check.md):
 * the PostgreSQL table when POSTGRES_URL is set (processes on several machines), else the directory
 * CLAIM_CHECK_DIR (processes on one host). Every process of a deployment must use the same one.
 */
export async function claimCheckFrom(
  env: Pick<EnvConfig, 'CLAIM_CHECK_THRESHOLD_BYTES' | 'CLAIM_CHECK_DIR'>,
  pool: Pick<Pool, 'connect' | 'query'> | undefined,
): Promise<ClaimCheckOptions> {
  const store: BlobStore = pool ? await postgresBlobStore(pool) : directoryBlobStore(path.resolve(env.CLAIM_CHECK_DIR));
  return { store, thresholdBytes: env.CLAIM_CHECK_THRESHOLD_BYTES };
}
