import type { Client } from '@temporalio/client';
import type { BlobStore } from './blob-store';

/**
 * Garbage collection of the claim check's blobs with the workflows' retention: a blob unused (not
 * written or read) for longer than the retention is removed. Histories that reference it are gone by
 * then (the namespace deletes a closed workflow's history after its retention), except a workflow
 * that stays open and untouched for longer than that: see docs/decisions/0022-claim-check.md.
 * Every worker sweeps; sweeps on several workers at once are harmless (each delete re-checks).
 */

export interface SweepLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export interface ClaimCheckSweeper {
  /** Runs a sweep now (as the timer does); resolves to the number of blobs removed. */
  sweepNow(): Promise<number>;
  stop(): void;
}

/** The namespace's retention (how long Temporal keeps a closed workflow's history), in milliseconds. */
export async function namespaceRetentionMs(client: Pick<Client, 'workflowService'>, namespace: string): Promise<number> {
  const described = await client.workflowService.describeNamespace({ namespace });
  const ttl = described.config?.workflowExecutionRetentionTtl;
  const ms = Number(ttl?.seconds ?? 0) * 1000 + Math.floor((ttl?.nanos ?? 0) / 1e6);
  if (!(ms > 0)) throw new Error(`namespace ${namespace} reports no workflow retention`);
  return ms;
}

export function startClaimCheckSweeper(opts: {
  store: BlobStore;
  /** The retention in force (read at each sweep: an operator may change the namespace's). */
  retentionMs: () => Promise<number>;
  everyMs: number;
  logger: SweepLogger;
  now?: () => number;
}): ClaimCheckSweeper {
  const now = opts.now ?? Date.now;
  let running: Promise<number> | undefined;
  const sweep = async (): Promise<number> => {
    const retention = await opts.retentionMs();
    const cutoff = new Date(now() - retention);
    const removed = await opts.store.deleteUnusedSince(cutoff);
    if (removed > 0) opts.logger.info({ removed, store: opts.store.where, retentionHours: Math.round(retention / 3_600_000) }, 'claim check: removed blobs past the retention');
    return removed;
  };
  const sweepNow = (): Promise<number> => (running ??= sweep().finally(() => (running = undefined)));
  const tick = () =>
    void sweepNow().catch((err: unknown) => opts.logger.warn({ err: err instanceof Error ? err.message : String(err), store: opts.store.where }, 'claim check: sweeping blobs failed; trying again later'));
  const first = setTimeout(tick, Math.min(opts.everyMs, 10_000));
  const timer = setInterval(tick, opts.everyMs);
  first.unref();
  timer.unref();
  return {
    sweepNow,
    stop() {
      clearTimeout(first);
      clearInterval(timer);
    },
  };
}
