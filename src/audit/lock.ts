import * as fs from 'node:fs';
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

type Callback<T> = (err: NodeJS.ErrnoException | null, value?: T) => void;

/** A synchronous call answered through a callback, as proper-lockfile's `fs` option calls it. */
const now =
  <A extends unknown[], T>(call: (...args: A) => T) =>
  (...args: [...A, Callback<T>]): void => {
    const callback = args.pop() as Callback<T>;
    let value: T;
    try {
      value = call(...(args as unknown as A));
    } catch (err) {
      callback(err as NodeJS.ErrnoException);
      return;
    }
    callback(null, value);
  };

/**
 * The calls proper-lockfile makes on the lock directory, synchronous: a `mkdir` to take it, a
 * `stat` (and once per process a `utimes`, to learn the file system's mtime precision, kept on this
 * object), an `rmdir` to release it, and a `stat` and `utimes` every few seconds while it is held.
 * Tens of microseconds on a local disk, where each asynchronous call is a trip through libuv's
 * thread pool and back through a busy event loop (docs/decisions/0035, 0048). Waiting for a lock
 * another process holds stays asynchronous: the retries are timers.
 */
const LOCK_FS = {
  mkdir: now(fs.mkdirSync),
  realpath: now(fs.realpathSync),
  stat: now(fs.statSync),
  rmdir: now(fs.rmdirSync),
  utimes: now(fs.utimesSync),
};

/**
 * Locks `<file>.lock`; the file must exist (the lock is keyed on its real path, symlinks resolved).
 * `resolved`: `file` is that real path already (an appender resolves it once, not on every append).
 */
export async function lockAuditFile(file: string, retries: typeof APPEND_LOCK_RETRIES, opts: { resolved?: boolean } = {}): Promise<HeldLock> {
  let compromised: Error | undefined;
  const release = await lockfile.lock(file, {
    stale: LOCK_STALE_MS,
    retries,
    realpath: opts.resolved !== true,
    fs: LOCK_FS,
    // The default handler throws from a timer, which would crash the whole process.
    onCompromised: (err) => {
      compromised = err;
    },
  });
  return {
    release,
    get compromised() {
      return compromised;
    },
  };
}
