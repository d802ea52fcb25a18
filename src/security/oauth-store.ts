/**
 * Where OAuth state lives between requests, turns, processes and restarts: registered clients,
 * tokens per user, and authorizations waiting for the user's browser. The worker and the API share
 * it (the API's callback route drops the authorization code here; the worker exchanges it).
 *
 * Everything in it is a credential: the file store seals each record with the host's seal key
 * (AES-256-GCM, src/security/seal.ts), names files by a hash of the key, and never logs values.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import lockfile from 'proper-lockfile';
import { AUTHORIZATION_WAIT_MS } from '../shared/turn';
import { sealToken, unsealToken } from './seal';

export interface OAuthStore {
  get<T>(key: string): Promise<T | undefined>;
  /** `undefined` deletes. */
  set(key: string, value: unknown): Promise<void>;
  /**
   * Runs `fn` while holding the key's lock, across processes for a shared store: one refresh or code
   * exchange at a time per user and server, whichever worker asks.
   */
  withLock<T>(key: string, fn: () => Promise<T>): Promise<T>;
}

/** Keys of the records, in one place. */
export const oauthKeys = {
  client: (server: string) => `client/${server}`,
  discovery: (server: string) => `discovery/${server}`,
  tokens: (server: string, principal: string) => `tokens/${server}/${principal}`,
  /** The state of the authorization this user last started with this server. */
  pendingFor: (server: string, principal: string) => `pending-for/${server}/${principal}`,
  pending: (state: string) => `pending/${state}`,
  lock: (server: string, principal: string) => `lock/${server}/${principal}`,
};

/** How long a started authorization waits for the user (and is offered again rather than replaced). */
export const PENDING_AUTHORIZATION_MS = AUTHORIZATION_WAIT_MS;

/** An authorization the user has been sent to; `code` arrives through the callback route. */
export interface PendingAuthorization {
  server: string;
  principal: string;
  authorizationUrl: string;
  codeVerifier: string;
  createdAt: number;
  code?: string;
  /** The `iss` the authorization server sent back with the code (RFC 9207), checked before the exchange. */
  iss?: string;
  /** The authorization server said no (`error` on the callback): shown to the user, never retried. */
  error?: string;
  /** Turns waiting for this authorization: the callback route tells each to try again. */
  turnIds?: string[];
}

/** What a record is stored under: keys name servers and users, which the store need not show. */
export function keyHash(key: string): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 40);
}

/** For tests and one-shot tools: nothing survives the process. */
export class MemoryOAuthStore implements OAuthStore {
  private readonly records = new Map<string, string>();
  private readonly locks = new Map<string, Promise<unknown>>();

  get<T>(key: string): Promise<T | undefined> {
    const raw = this.records.get(key);
    return Promise.resolve(raw === undefined ? undefined : (JSON.parse(raw) as T));
  }

  set(key: string, value: unknown): Promise<void> {
    if (value === undefined) this.records.delete(key);
    else this.records.set(key, JSON.stringify(value));
    return Promise.resolve();
  }

  withLock<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.locks.get(key) ?? Promise.resolve();
    const next = previous.then(fn, fn);
    const settled = next.catch(() => undefined);
    this.locks.set(key, settled);
    void settled.then(() => {
      if (this.locks.get(key) === settled) this.locks.delete(key);
    });
    return next;
  }
}

/** One sealed file per record under `dir`, shared by the processes of one machine. */
export class SealedFileOAuthStore implements OAuthStore {
  private readonly inProcess = new MemoryOAuthStore();

  constructor(
    private readonly dir: string,
    private readonly sealKey: string,
  ) {}

  async get<T>(key: string): Promise<T | undefined> {
    let sealed: string;
    try {
      sealed = await readFile(this.fileOf(key), 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
    const json = unsealToken(sealed.trim(), this.sealKey);
    // Sealed under another key (rotated) or damaged: as good as absent; the user authorizes again.
    return json === undefined ? undefined : (JSON.parse(json) as T);
  }

  async set(key: string, value: unknown): Promise<void> {
    const file = this.fileOf(key);
    if (value === undefined) {
      await rm(file, { force: true });
      return;
    }
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    const temp = `${file}.${randomBytes(6).toString('hex')}.tmp`;
    await writeFile(temp, sealToken(JSON.stringify(value), this.sealKey), { mode: 0o600 });
    await rename(temp, file);
  }

  async withLock<T>(key: string, fn: () => Promise<T>): Promise<T> {
    // Within the process first (cheap, fair), then across processes.
    return await this.inProcess.withLock(key, async () => {
      await mkdir(this.dir, { recursive: true, mode: 0o700 });
      const release = await lockfile.lock(this.fileOf(key), {
        realpath: false,
        stale: 30_000,
        retries: { retries: 100, minTimeout: 20, maxTimeout: 250 },
      });
      try {
        return await fn();
      } finally {
        await release().catch(() => undefined);
      }
    });
  }

  private fileOf(key: string): string {
    return path.join(this.dir, `${keyHash(key)}.sealed`);
  }
}
