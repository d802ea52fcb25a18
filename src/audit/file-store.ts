/**
 * The audit chain in a JSON Lines file, one entry per line.
 *
 * Several processes may append to the same file (on one host: the lock is a lock directory beside
 * the file): each append holds a proper-lockfile lock (`<file>.lock`) while it reads the last entry
 * and writes the next one, and within one process appends to the same file are queued, so lock
 * retries are only spent on other processes.
 */
import { mkdir, open, type FileHandle } from 'node:fs/promises';
import * as path from 'node:path';
import { AuditLogError, EMPTY_CHAIN, headOf, nextEntry, type AuditChainStore, type AuditDraft, type ChainHead } from './chain';
import { APPEND_LOCK_RETRIES, lockAuditFile, type HeldLock } from './lock';
import type { AuditEntry } from './schema';

const TAIL_CHUNK_BYTES = 4096;
const MAX_TAIL_CHUNK_BYTES = 1 << 20;
const NEWLINE = 0x0a;

export class FileAuditStore implements AuditChainStore {
  readonly file: string;

  constructor(file: string) {
    this.file = path.resolve(file);
  }

  get where(): string {
    return this.file;
  }

  async append(draft: AuditDraft): Promise<AuditEntry> {
    return serialize(this.file, () => this.appendLocked(draft));
  }

  private async appendLocked(draft: AuditDraft): Promise<AuditEntry> {
    await mkdir(path.dirname(this.file), { recursive: true });
    // proper-lockfile resolves the file's real path, so the file must exist before it is locked.
    await (await open(this.file, 'a')).close();

    let lock: HeldLock;
    try {
      lock = await lockAuditFile(this.file, APPEND_LOCK_RETRIES);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ELOCKED') {
        throw new AuditLogError('locked', `audit log ${this.file} stayed locked by another process; gave up waiting`);
      }
      throw err;
    }

    try {
      const fh = await open(this.file, 'a+');
      try {
        const entry = nextEntry(draft, await readTail(fh, this.file));
        // Checked as late as possible: past this point another process may hold the lock too, and two
        // writers would fork the chain.
        if (lock.compromised) {
          throw new AuditLogError(
            'lock_compromised',
            `lost the lock on audit log ${this.file} (${lock.compromised.message}); entry not written`,
          );
        }
        await fh.appendFile(`${JSON.stringify(entry)}\n`, 'utf8');
        await fh.sync();
        return entry;
      } finally {
        await fh.close();
      }
    } finally {
      // A failed release (the lock was compromised or already removed as stale) must not turn a
      // written entry into an error: the caller would retry and log the event twice.
      await lock.release().catch(() => undefined);
    }
  }
}

// ------------------------------------------------------------------ tail

async function readFully(fh: FileHandle, buf: Buffer, position: number): Promise<void> {
  let done = 0;
  while (done < buf.length) {
    const { bytesRead } = await fh.read(buf, done, buf.length - done, position + done);
    if (bytesRead === 0) throw new Error(`unexpected end of file at byte ${position + done}`);
    done += bytesRead;
  }
}

/**
 * The seq and hash of the last entry, reading only the end of the file: a chunk of a few KB,
 * doubled (up to 1 MiB per read) until the start of the last line is found.
 */
async function readTail(fh: FileHandle, file: string): Promise<ChainHead> {
  const { size } = await fh.stat();
  if (size === 0) return EMPTY_CHAIN;

  const lastByte = Buffer.alloc(1);
  await readFully(fh, lastByte, size - 1);
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
    await readFully(fh, buf, pos - len);
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

// ------------------------------------------------------------------ in-process queue

const queues = new Map<string, Promise<void>>();

function serialize<T>(key: string, task: () => Promise<T>): Promise<T> {
  const previous = queues.get(key) ?? Promise.resolve();
  const run = previous.then(task);
  const settled = run.then(
    () => undefined,
    () => undefined,
  );
  queues.set(key, settled);
  void settled.then(() => {
    if (queues.get(key) === settled) queues.delete(key);
  });
  return run;
}
