/**
 * The audit chain in a JSON Lines file, one entry per line.
 *
 * Several processes may append to the same file (on one host: the lock is a lock directory beside
 * the file): each write holds a proper-lockfile lock (`<file>.lock`) while it finds the chain's head
 * and appends after it. Within one process, appends to the same file go through one appender
 * (whatever AuditLog instance asked), so lock retries are only spent on other processes, and
 * appends that arrive while a write is under way are written together by the next one: one lock,
 * one write and one fsync for the group, each entry still chained on the one before it.
 *
 * The head is read from the end of the file unless the file is exactly as this process left it
 * after its last write (same device, inode, size and change time, checked under the lock): then the
 * entry this process wrote last is the head, and reading and re-hashing it again would tell nothing
 * new. Another process's append changes the size, a rewrite the change time, a rotation the inode.
 *
 * The calls are synchronous: opening, locking, reading the head and writing a few hundred bytes take
 * tens of microseconds on a local disk, while each asynchronous call waits for a thread-pool trip
 * and a turn of a busy event loop. So is the `fdatasync` while syncs are quick (a local disk: about
 * 0.1 ms here); one slower than SLOW_SYNC_MS moves the next ASYNC_SYNCS_AFTER_SLOW syncs into the
 * thread pool, where a slow disk stalls no one and the appends that arrive meanwhile share the next
 * write (group commit).
 * (docs/decisions/0035-worker-cpu-live-pushes-and-audit-appends.md, 0048)
 */
import { closeSync, fdatasync, fdatasyncSync, fstatSync, mkdirSync, openSync, readSync, realpathSync, writeSync, type Stats } from 'node:fs';
import * as path from 'node:path';
import { AuditLogError, EMPTY_CHAIN, headOf, nextEntry, type AuditChainStore, type AuditDraft, type ChainHead } from './chain';
import { APPEND_LOCK_RETRIES, lockAuditFile, type HeldLock } from './lock';
import type { AuditEntry } from './schema';

const TAIL_CHUNK_BYTES = 4096;
const MAX_TAIL_CHUNK_BYTES = 1 << 20;
const NEWLINE = 0x0a;
/** Most entries one write carries; more waiting go in the next. */
const MAX_GROUP_ENTRIES = 100;
/** A sync to disk slower than this (a loaded or remote disk) is not made on the event loop again for a while. */
const SLOW_SYNC_MS = 2;
/** How many syncs go to the thread pool after a slow one, before one is timed on the loop again. */
const ASYNC_SYNCS_AFTER_SLOW = 100;

export class FileAuditStore implements AuditChainStore {
  readonly file: string;

  constructor(file: string) {
    this.file = path.resolve(file);
  }

  get where(): string {
    return this.file;
  }

  append(draft: AuditDraft): Promise<AuditEntry> {
    let appender = appenders.get(this.file);
    if (!appender) {
      appender = new FileAppender(this.file);
      appenders.set(this.file, appender);
    }
    return appender.append(draft);
  }
}

// ------------------------------------------------------------------ the process's appender per file

interface Waiting {
  draft: AuditDraft;
  resolve(entry: AuditEntry): void;
  reject(err: unknown): void;
}

/** What this process wrote last: the chain's head while the file is still exactly as it was then. */
interface WrittenTail {
  dev: number;
  ino: number;
  size: number;
  ctimeMs: number;
  head: ChainHead;
}

const appenders = new Map<string, FileAppender>();

class FileAppender {
  private readonly waiting: Waiting[] = [];
  private draining = false;
  /** The file's real path once it exists: proper-lockfile keys the lock on it (symlinks resolved). */
  private lockPath: string | undefined;
  private written: WrittenTail | undefined;
  /** Syncs left to make in the thread pool (after a slow one on the loop). */
  private asyncSyncs = 0;

  constructor(private readonly file: string) {}

  append(draft: AuditDraft): Promise<AuditEntry> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ draft, resolve, reject });
      if (this.draining) return;
      this.draining = true;
      // A microtask later, so appends asked for together share the first write too.
      queueMicrotask(() => void this.drain());
    });
  }

  private async drain(): Promise<void> {
    try {
      while (this.waiting.length > 0) {
        const group = this.waiting.splice(0, MAX_GROUP_ENTRIES);
        try {
          const entries = await this.write(group.map((w) => w.draft));
          group.forEach((w, i) => w.resolve(entries[i] as AuditEntry));
        } catch (err) {
          // Nothing is assumed about the file after a failure: the next write starts afresh.
          this.written = undefined;
          this.lockPath = undefined;
          for (const w of group) w.reject(err);
        }
      }
    } finally {
      this.draining = false;
    }
  }

  /** The file, open for appending, and its lock's path; its directory and the file are made again if they went away. */
  private openFile(): { fd: number; lockPath: string } {
    try {
      const lockPath = (this.lockPath ??= prepare(this.file));
      return { fd: openSync(this.file, 'a+'), lockPath };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    const lockPath = (this.lockPath = prepare(this.file));
    return { fd: openSync(this.file, 'a+'), lockPath };
  }

  private async lock(lockPath: string): Promise<HeldLock> {
    try {
      return await lockAuditFile(lockPath, APPEND_LOCK_RETRIES, { resolved: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ELOCKED') {
        throw new AuditLogError('locked', `audit log ${this.file} stayed locked by another process; gave up waiting`);
      }
      throw err;
    }
  }

  private async write(drafts: AuditDraft[]): Promise<AuditEntry[]> {
    // Opened before the lock is taken (an O_APPEND descriptor writes at the end whenever it writes), so
    // a missing directory is found at once rather than after the lock's retries.
    const { fd, lockPath } = this.openFile();
    try {
      const lock = await this.lock(lockPath);
      try {
        const before = fstatSync(fd);
        let head = this.unchangedSince(before) ?? readTail(fd, before.size, this.file);
        const entries = drafts.map((draft) => {
          const entry = nextEntry(draft, head);
          head = { seq: entry.seq, hash: entry.hash };
          return entry;
        });
        const bytes = Buffer.from(entries.map((e) => `${JSON.stringify(e)}\n`).join(''), 'utf8');
        // Checked as late as possible: past this point another process may hold the lock too, and two
        // writers would fork the chain.
        if (lock.compromised) {
          throw new AuditLogError('lock_compromised', `lost the lock on audit log ${this.file} (${lock.compromised.message}); entry not written`);
        }
        this.written = undefined;
        writeFully(fd, bytes);
        // The data and the size it needs to be read back (an append's metadata), before anyone is told.
        await this.sync(fd);
        const after = fstatSync(fd);
        if (after.size === before.size + bytes.length) {
          this.written = { dev: after.dev, ino: after.ino, size: after.size, ctimeMs: after.ctimeMs, head };
        }
        return entries;
      } finally {
        // A failed release (the lock was compromised or already removed as stale) must not turn a
        // written entry into an error: the caller would retry and log the event twice.
        await lock.release().catch(() => undefined);
      }
    } finally {
      closeSync(fd);
    }
  }

  /** The data and the size it needs to be read back, on disk: in place while syncs are quick. */
  private async sync(fd: number): Promise<void> {
    if (this.asyncSyncs > 0) {
      this.asyncSyncs--;
      await datasync(fd);
      return;
    }
    const started = performance.now();
    fdatasyncSync(fd);
    if (performance.now() - started > SLOW_SYNC_MS) this.asyncSyncs = ASYNC_SYNCS_AFTER_SLOW;
  }

  /** The head this process wrote, if the file is still exactly as it was after that write. */
  private unchangedSince(now: Stats): ChainHead | undefined {
    const w = this.written;
    if (!w || w.dev !== now.dev || w.ino !== now.ino || w.size !== now.size || w.ctimeMs !== now.ctimeMs) return undefined;
    return w.head;
  }
}

/** Creates the directory and the file (the lock is keyed on its real path, so it must exist); returns that path. */
function prepare(file: string): string {
  mkdirSync(path.dirname(file), { recursive: true });
  closeSync(openSync(file, 'a'));
  return realpathSync(file);
}

/** fdatasync in the thread pool. */
const datasync = (fd: number): Promise<void> => new Promise((resolve, reject) => fdatasync(fd, (err) => (err ? reject(err) : resolve())));

function writeFully(fd: number, bytes: Buffer): void {
  let done = 0;
  while (done < bytes.length) done += writeSync(fd, bytes, done, bytes.length - done);
}

// ------------------------------------------------------------------ tail

function readFully(fd: number, buf: Buffer, position: number): void {
  let done = 0;
  while (done < buf.length) {
    const bytesRead = readSync(fd, buf, done, buf.length - done, position + done);
    if (bytesRead === 0) throw new Error(`unexpected end of file at byte ${position + done}`);
    done += bytesRead;
  }
}

/**
 * The seq and hash of the last entry, reading only the end of the file: a chunk of a few KB,
 * doubled (up to 1 MiB per read) until the start of the last line is found.
 */
function readTail(fd: number, size: number, file: string): ChainHead {
  if (size === 0) return EMPTY_CHAIN;

  const lastByte = Buffer.alloc(1);
  readFully(fd, lastByte, size - 1);
  if (lastByte[0] !== NEWLINE) {
    throw new AuditLogError(
      'damaged_tail',
      `audit log ${file} has a damaged last entry (not newline-terminated: an interrupted write or a truncation); refusing to append. Run audit-verify on it.`,
    );
  }

  const parts: Buffer[] = [];
  let pos = size - 1;
  let chunk = TAIL_CHUNK_BYTES;
  while (pos > 0) {
    const len = Math.min(chunk, pos);
    const buf = Buffer.alloc(len);
    readFully(fd, buf, pos - len);
    const nl = buf.lastIndexOf(NEWLINE);
    if (nl >= 0) {
      parts.unshift(buf.subarray(nl + 1));
      break;
    }
    parts.unshift(buf);
    pos -= len;
    chunk = Math.min(chunk * 2, MAX_TAIL_CHUNK_BYTES);
  }
  return headOf(Buffer.concat(parts).toString('utf8'), file);
}
