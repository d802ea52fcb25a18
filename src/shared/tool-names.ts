/**
 * LLM-visible tool names. Pure (no Node built-ins, no I/O): workflow code imports it, and the names
 * it produces end up in workflow history, so the same input must give the same name on every
 * worker, every restart, every platform.
 *
 * Names are only ever resolved through the index built here. Splitting `server__tool` back apart
 * would be wrong: sanitizing and truncating lose information, and tool names may contain `__`.
 */

export interface ToolRef {
  server: string;
  tool: string;
}

/** OpenAI-style function names: what every LLM API we target accepts. */
const MAX_NAME_LENGTH = 64;
/** `_` + 8 hex chars. */
const HASH_SUFFIX_LENGTH = 9;

function sanitize(s: string): string {
  // `u` so an astral character (emoji) becomes one `_`, not two.
  return s.replace(/[^a-zA-Z0-9_-]/gu, '_');
}

/**
 * FNV-1a, 32 bit, over the UTF-8 bytes of `input`. Chosen because it is tiny, pure JS, and its
 * output is fully specified, so it can never change under us the way a library hash might.
 */
function fnv1a32(input: string): number {
  let hash = 0x811c9dc5;
  const feed = (byte: number): void => {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  };
  for (const ch of input) {
    const cp = ch.codePointAt(0) ?? 0;
    if (cp < 0x80) {
      feed(cp);
    } else if (cp < 0x800) {
      feed(0xc0 | (cp >> 6));
      feed(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      // Lone surrogates land here too and are encoded like any BMP code point (WTF-8), which keeps
      // the hash total and deterministic for malformed strings.
      feed(0xe0 | (cp >> 12));
      feed(0x80 | ((cp >> 6) & 0x3f));
      feed(0x80 | (cp & 0x3f));
    } else {
      feed(0xf0 | (cp >> 18));
      feed(0x80 | ((cp >> 12) & 0x3f));
      feed(0x80 | ((cp >> 6) & 0x3f));
      feed(0x80 | (cp & 0x3f));
    }
  }
  return hash >>> 0;
}

function hex8(n: number): string {
  return n.toString(16).padStart(8, '0');
}

/**
 * The hash covers the ORIGINAL names (NUL-separated, since NUL cannot occur in either part of a
 * sane config), so two originals that sanitize alike still get different suffixes. `salt` is only
 * used to break a (astronomically unlikely) 32-bit hash collision.
 */
function hashedName(ref: ToolRef, salt: number): string {
  const key = salt === 0 ? `${ref.server}\u0000${ref.tool}` : `${ref.server}\u0000${ref.tool}\u0000${salt}`;
  const base = sanitize(`${ref.server}__${ref.tool}`).slice(0, MAX_NAME_LENGTH - HASH_SUFFIX_LENGTH);
  return `${base}_${hex8(fnv1a32(key))}`;
}

/**
 * `server__tool`, with every character outside `[a-zA-Z0-9_-]` replaced by `_`. Names longer than
 * 64 characters are truncated and get a hash suffix of the original names, so they stay unique
 * and stable. Does not resolve collisions between different tools: use `buildToolIndex` for that.
 */
export function llmToolName(server: string, tool: string): string {
  const plain = sanitize(`${server}__${tool}`);
  return plain.length <= MAX_NAME_LENGTH ? plain : hashedName({ server, tool }, 0);
}

function compareRefs(a: ToolRef, b: ToolRef): number {
  // Code-unit order, not localeCompare: the result must not depend on the worker's locale.
  if (a.server !== b.server) return a.server < b.server ? -1 : 1;
  if (a.tool !== b.tool) return a.tool < b.tool ? -1 : 1;
  return 0;
}

/**
 * Maps LLM name → original `{ server, tool }` for a whole catalog. When two different originals
 * would get the same name, ALL of them get a hash suffix (not just the "second" one), so which name
 * a tool gets never depends on the order the servers answered in. Duplicate entries are merged.
 */
export function buildToolIndex(entries: readonly ToolRef[]): Map<string, ToolRef> {
  const unique = new Map<string, ToolRef>();
  for (const { server, tool } of entries) {
    const key = `${server}\u0000${tool}`;
    if (!unique.has(key)) unique.set(key, { server, tool });
  }
  const sorted = [...unique.values()].sort(compareRefs);

  const byName = new Map<string, ToolRef[]>();
  for (const ref of sorted) {
    const name = llmToolName(ref.server, ref.tool);
    const group = byName.get(name);
    if (group) group.push(ref);
    else byName.set(name, [ref]);
  }

  const index = new Map<string, ToolRef>();
  const colliding: ToolRef[] = [];
  for (const [name, group] of byName) {
    const [only] = group;
    if (group.length === 1 && only) index.set(name, only);
    else colliding.push(...group);
  }
  // Sorted, so that even the salted fallback is order-independent.
  colliding.sort(compareRefs);
  for (const ref of colliding) {
    let salt = 0;
    let name = hashedName(ref, salt);
    while (index.has(name)) {
      salt += 1;
      name = hashedName(ref, salt);
    }
    index.set(name, ref);
  }
  return index;
}

/** Inverse of an index: `{ server, tool }` → LLM name, for building catalogs. */
export function toolNameOf(index: ReadonlyMap<string, ToolRef>, server: string, tool: string): string | undefined {
  for (const [name, ref] of index) {
    if (ref.server === server && ref.tool === tool) return name;
  }
  return undefined;
}
