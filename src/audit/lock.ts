import * as lockfile from 'proper-lockfile';

// proper-lockfile's own default; a process that died holding the lock blocks others for at most this.
export const LOCK_STALE_MS = 10_000;

/**
 * Appenders wait up to ~100 × 200 ms = 20 s: longer than LOCK_STALE_MS, so a crashed holder's lock
 * goes stale and is taken over before a waiting appender gives up.
 */
export const APPEND_LOCK_RETRIES = { retries: 100, factor: 1.5, minTimeout: 5, maxTimeout: 200, randomize: true };

export interface HeldLock {
  release(): Promise<void>;
  /** Set when proper-lockfile could not refresh the lock in time: another process may now hold it. */
  readonly compromised: Error | undefined;
}

/**
 * Locks `<file>.lock`; the file must exist (the lock is keyed on its real path, symlinks resolved).
 * `resolved`: `file` is that real path already (an appender resolves it once, not on every append).
 *
 * A free lock is taken at once, with proper-lockfile's synchronous calls: a `mkdir`, and a `utimes`
 * and a `stat` of the lock directory, tens of microseconds on a local disk, where each asynchronous
 * call is a trip through libuv's thread pool and back through a busy event loop (a worker's ~0.2 to
 * 0.5 ms each; docs/decisions/0035). A lock another process holds is waited for with the retries.
 */
export async function lockAuditFile(file: string, retries: typeof APPEND_LOCK_RETRIES, opts: { resolved?: boolean } = {}): Promise<HeldLock> {
  let compromised: Error | undefined;
  const options = {
    stale: LOCK_STALE_MS,
    realpath: opts.resolved !== true,
    // The default handler throws from a timer, which would crash the whole process.
    onCompromised: (err: Error) => {
      compromised = err;
    },
  };
  const held = (release: () => Promise<void>): HeldLock => ({
    release,
    get compromised() {
      return compromised;
    },
  });
  try {
    const release = lockfile.lockSync(file, options);
    return held(async () => release());
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ELOCKED') throw err;
  }
  return held(await lockfile.lock(file, { ...options, retries }));
}
