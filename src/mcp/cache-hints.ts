/**
 * The caching hints of MCP 2026-07-28 (`ttlMs`, `cacheScope` on the results of `tools/list`,
 * `resources/read` and the other cacheable requests), read off a result, and the rules the host's
 * caches follow with them (docs/decisions/0039-caching-hints.md): the resource cache
 * (resource-cache.ts) and each connection's tool listing (server-listing.ts). Pure: it imports nothing
 * of the pool's.
 */
export type CacheScope = 'public' | 'private';

/** A result's hint: fresh for `ttlMs` (0: the server gave no lifetime), and who may be served it. */
export interface CacheHint {
  ttlMs: number;
  scope: CacheScope;
}

/** The first revision whose results carry caching hints. */
const HINTED_REVISION = '2026-07-28';

/** Whether a connection speaking `protocolVersion` gets hints (revisions are dates: they compare as strings). */
export const speaksHints = (protocolVersion: string | undefined): boolean => protocolVersion !== undefined && protocolVersion >= HINTED_REVISION;

/**
 * The hint a result carries, on a connection of a revision that has them; undefined on 2025-11-25 (a
 * field of that name there means nothing) and when the result has neither field. A `ttlMs` that is
 * not a positive number counts as 0; a `cacheScope` other than `public` as `private` (the spec's
 * default, and the one that shares nothing).
 */
export function cacheHintOf(result: unknown, protocolVersion: string | undefined): CacheHint | undefined {
  if (!speaksHints(protocolVersion) || typeof result !== 'object' || result === null) return undefined;
  const { ttlMs, cacheScope } = result as { ttlMs?: unknown; cacheScope?: unknown };
  if (ttlMs === undefined && cacheScope === undefined) return undefined;
  const ttl = typeof ttlMs === 'number' && Number.isFinite(ttlMs) && ttlMs > 0 ? Math.floor(ttlMs) : 0;
  return { ttlMs: ttl, scope: cacheScope === 'public' ? 'public' : 'private' };
}

/** The hints of a listing's pages as one: the shortest lifetime, private if any page is; none if a page had none. */
export function combineHints(a: CacheHint | undefined, b: CacheHint | undefined): CacheHint | undefined {
  if (!a || !b) return undefined;
  return { ttlMs: Math.min(a.ttlMs, b.ttlMs), scope: a.scope === 'public' && b.scope === 'public' ? 'public' : 'private' };
}
