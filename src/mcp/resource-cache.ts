/**
 * The worker's cache of resources read (the resilient hub's, resilience.ts): per caller by default,
 * fresh for the host's TTL, or as long as the server's caching hint says (MCP 2026-07-28, capped by the
 * host), and shared by every caller only when the server says the result is `public` and its requests
 * do not go in each caller's own authorization context (docs/decisions/0039-caching-hints.md).
 */
import type { CacheHint } from './cache-hints';
import type { McpServerConfig } from './config';
import { isPerUser } from './oauth';

export interface ResourceCacheOptions {
  /** A cached resource younger than this is served without asking the server (a result without a positive `ttlMs`). */
  ttlMs: number;
  /** While a server is down, a cached value up to this old is served, marked as last known. */
  maxStaleMs: number;
  /** The longest a server's `ttlMs` keeps a read fresh (default: `ttlMs`); 0 turns the hints' lifetimes off. */
  maxTtlMs?: number;
}

/** A read as the server answered it, with its hint when the revision has them. */
export interface HintedRead {
  text: string;
  cache?: CacheHint;
}

interface Entry {
  text: string;
  at: number;
  freshMs: number;
}

/** What the cache holds for a caller: the newer of its own entry and the shared one. */
export interface CachedRead {
  text: string;
  at: number;
  age: number;
  fresh: boolean;
}

const SHARED = '*';

/**
 * Whether a server's requests go in each caller's own authorization context: user OAuth (a
 * connection per user) or the caller's forwarded token. What such a server answers is never shared
 * between callers, whatever its `cacheScope` says.
 */
export function perCallerAuthorization(cfg: McpServerConfig | undefined): boolean {
  return cfg?.kind === 'http' && (isPerUser(cfg) || cfg.forwardUserToken);
}

export class ResourceCache {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly opts: ResourceCacheOptions,
    private readonly now: () => number,
  ) {}

  /** `caller` names the caller's context (never a token); `null`: the entry every caller shares. */
  private key(server: string, uri: string, caller: string | null): string {
    return `${server}\u0000${uri}\u0000${caller === null ? SHARED : `caller:${caller}`}`;
  }

  find(server: string, uri: string, caller: string): CachedRead | undefined {
    const own = this.entries.get(this.key(server, uri, caller));
    const shared = this.entries.get(this.key(server, uri, null));
    const entry = own && shared ? (own.at >= shared.at ? own : shared) : (own ?? shared);
    if (!entry) return undefined;
    const age = this.now() - entry.at;
    return { text: entry.text, at: entry.at, age, fresh: age < entry.freshMs };
  }

  /** Keeps a read: for every caller when `shareable` (the server's `public`, on a server not per caller), else for `caller`. */
  put(server: string, uri: string, caller: string, read: HintedRead, shareable: boolean): void {
    const shared = shareable && read.cache?.scope === 'public';
    this.entries.set(this.key(server, uri, shared ? null : caller), { text: read.text, at: this.now(), freshMs: this.freshMs(read.cache) });
  }

  /** A positive `ttlMs` up to the host's cap; none (2025-11-25), or 0 (the server gave no lifetime): the host's TTL. */
  private freshMs(hint: CacheHint | undefined): number {
    if (!hint || hint.ttlMs <= 0) return this.opts.ttlMs;
    return Math.min(hint.ttlMs, this.opts.maxTtlMs ?? this.opts.ttlMs);
  }

  /** Drops every cached read of `server`. */
  dropServer(server: string): void {
    this.dropPrefix(`${server}\u0000`);
  }

  /** Drops every caller's cached read of one resource. */
  dropResource(server: string, uri: string): void {
    this.dropPrefix(`${server}\u0000${uri}\u0000`);
  }

  private dropPrefix(prefix: string): void {
    for (const key of this.entries.keys()) if (key.startsWith(prefix)) this.entries.delete(key);
  }
}
