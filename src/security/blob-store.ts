import { randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, stat, unlink, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * Where the claim check (src/security/claim-check.ts) keeps payloads stored by reference: content
 * addressed (the key is the sha-256 digest of the bytes), so writing the same bytes twice is one
 * blob. Each blob remembers when it was last written or read; the sweep removes those unused for
 * longer than the retention. An S3-style store implements the same three calls (put an object under
 * the digest, get it, delete objects whose last use is older than the cutoff: a lifecycle rule on the
 * bucket can do the last).
 */
export interface BlobStore {
  /** Where blobs live, for messages (a directory, a table); never a secret. */
  readonly where: string;
  /** Stores `bytes` under `digest`; if it is there already, marks it as used now. */
  put(digest: string, bytes: Uint8Array): Promise<void>;
  /** The bytes stored under `digest` (marking them used), or undefined when there are none. */
  get(digest: string): Promise<Uint8Array | undefined>;
  /** Removes blobs last used before `cutoff`; returns how many. */
  deleteUnusedSince(cutoff: Date): Promise<number>;
}

/** A blob read within this long is not marked as used again (reads stay reads most of the time). */
export const TOUCH_AFTER_MS = 60 * 60_000;

const HEX_DIGEST = /^sha256:([0-9a-f]{64})$/;

function hexOf(digest: string): string {
  const m = HEX_DIGEST.exec(digest);
  if (!m) throw new Error(`blob store: not a sha256 digest: ${digest.slice(0, 80)}`);
  return m[1]!;
}

const isMissing = (err: unknown) => (err as NodeJS.ErrnoException).code === 'ENOENT';

/**
 * Blobs as files in a local directory (`.data/claim-check` by default): `<dir>/<first 2 hex>/<hex>`,
 * written to a temporary file and renamed, so a reader never sees half a blob; the file's mtime is
 * its last use. For processes on one host (the worker and the API of `npm start`).
 */
export function directoryBlobStore(dir: string): BlobStore {
  const root = path.resolve(dir);
  const fileOf = (digest: string) => {
    const hex = hexOf(digest);
    return path.join(root, hex.slice(0, 2), hex);
  };
  const touch = async (file: string) => {
    const now = new Date();
    await utimes(file, now, now).catch((err: unknown) => {
      if (!isMissing(err)) throw err;
    });
  };
  return {
    where: `the directory ${root}`,
    async put(digest, bytes) {
      // Written afresh even when present: the new mtime marks it used, and a sweep that moved the old
      // copy aside at this moment finds a fresh one (below).
      const file = fileOf(digest);
      await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
      const tmp = path.join(path.dirname(file), `.tmp-${randomBytes(6).toString('hex')}`);
      try {
        await writeFile(tmp, bytes, { mode: 0o600 });
        await rename(tmp, file);
      } catch (err) {
        await rm(tmp, { force: true });
        throw err;
      }
    },
    async get(digest) {
      const file = fileOf(digest);
      let bytes: Buffer;
      try {
        bytes = await readFile(file);
      } catch (err) {
        if (isMissing(err)) return undefined;
        throw err;
      }
      const info = await stat(file).catch(() => undefined);
      if (info && Date.now() - info.mtimeMs > TOUCH_AFTER_MS) await touch(file);
      return bytes;
    },
    async deleteUnusedSince(cutoff) {
      let removed = 0;
      const shards = await readdir(root).catch((err: unknown) => (isMissing(err) ? [] : Promise.reject(err)));
      for (const shard of shards) {
        if (!/^[0-9a-f]{2}$/.test(shard)) continue;
        const shardDir = path.join(root, shard);
        for (const name of await readdir(shardDir).catch(() => [] as string[])) {
          const file = path.join(shardDir, name);
          const info = await stat(file).catch(() => undefined);
          if (!info || info.mtime >= cutoff) continue;
          // Moved aside first, then checked again: a put that wrote it anew in between keeps it.
          const aside = path.join(shardDir, `.del-${randomBytes(6).toString('hex')}`);
          try {
            await rename(file, aside);
          } catch (err) {
            if (isMissing(err)) continue;
            throw err;
          }
          if ((await stat(aside)).mtime >= cutoff) {
            await rename(aside, file);
            continue;
          }
          await unlink(aside);
          // Blobs are counted; temporary files a crash left behind are only removed.
          if (!name.startsWith('.')) removed++;
        }
      }
      return removed;
    },
  };
}
