/**
 * Hot reload of the files a deployment edits while the stack runs (the MCP config in the worker, the
 * policy and host config in the API). A file is loaded again when it changes on disk or on SIGHUP; a
 * version that does not load keeps the last good one in force, and the log says why.
 *
 * Change detection polls the file's status (fs.watchFile) rather than using inotify: editors that save
 * by writing a new file and renaming it, and mounted volumes whose symlink is swapped, are both seen.
 */
import { unwatchFile, watchFile } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';

export interface ReloadLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export type ReloadResult<T> =
  | { kind: 'changed'; value: T; previous: T }
  | { kind: 'unchanged' }
  | { kind: 'rejected'; reason: string };

export interface ReloadableFile<T> {
  /** The value in force: the last version of the file that loaded. */
  current(): T;
  /** Loads the file again now (what a file change or SIGHUP does). */
  reload(): Promise<ReloadResult<T>>;
  close(): void;
}

export interface ReloadableOptions<T> {
  file: string;
  /** What the file is, for log lines ("MCP config", "policy"). */
  what: string;
  /** Reads and validates the file; throws with a message that says what is wrong. */
  load: (file: string) => T;
  /** Applies a new value before it is in force (e.g. reconnect servers); a throw keeps the old value. */
  apply?: (next: T, previous: T) => void | Promise<void>;
  logger: ReloadLogger;
  /** How often to check the file's status; 0: only on reload() (SIGHUP). */
  pollMs: number;
}

/** Loads `file` now (throwing as `load` does) and keeps it current. */
export function reloadableFile<T>(opts: ReloadableOptions<T>): ReloadableFile<T> {
  let value = opts.load(opts.file);
  // Reloads run one at a time: a change that lands while one is applied is picked up by the next.
  let chain: Promise<unknown> = Promise.resolve();

  const attempt = async (): Promise<ReloadResult<T>> => {
    let next: T;
    try {
      next = opts.load(opts.file);
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      opts.logger.warn({ file: opts.file, reason }, `${opts.what} not reloaded: the last good version stays in force`);
      return { kind: 'rejected', reason };
    }
    if (isDeepStrictEqual(next, value)) return { kind: 'unchanged' };
    const previous = value;
    try {
      await opts.apply?.(next, previous);
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      opts.logger.warn({ file: opts.file, reason }, `${opts.what} not applied: the last good version stays in force`);
      return { kind: 'rejected', reason };
    }
    value = next;
    opts.logger.info({ file: opts.file }, `${opts.what} reloaded`);
    return { kind: 'changed', value: next, previous };
  };

  const reload = (): Promise<ReloadResult<T>> => {
    const run = chain.then(attempt, attempt);
    chain = run;
    return run;
  };

  const onStat = (): void => void reload();
  let settle: NodeJS.Timeout | undefined;
  if (opts.pollMs > 0) {
    watchFile(opts.file, { interval: opts.pollMs, persistent: false }, onStat);
    // The watcher's first status read is its baseline: an edit that lands before it is not a change to
    // it. One look once that baseline surely exists catches such an edit (a no-op otherwise).
    settle = setTimeout(onStat, opts.pollMs * 3);
    settle.unref();
  }

  return {
    current: () => value,
    reload,
    close: () => {
      clearTimeout(settle);
      if (opts.pollMs > 0) unwatchFile(opts.file, onStat);
    },
  };
}

/** SIGHUP reloads every file given (`kill -HUP <pid>`); returns the function that removes the handler. */
export function reloadOnSighup(files: ReadonlyArray<ReloadableFile<unknown>>): () => void {
  const handler = (): void => {
    for (const f of files) void f.reload();
  };
  process.on('SIGHUP', handler);
  return () => process.off('SIGHUP', handler);
}
