import { createHash } from 'node:crypto';

/**
 * Canonical JSON: object keys sorted recursively, no whitespace, numbers as ECMAScript prints them.
 * Hashes are computed over this form, so an entry hashes the same no matter which process wrote it,
 * in which key order, or whether a human re-indented the file.
 *
 * Only JSON values are accepted. Anything JSON.stringify would silently coerce or drop in an array
 * (NaN, Infinity, undefined, functions, Dates, Maps, class instances) is rejected instead: a digest
 * that quietly stands for a different value than the caller passed is worse than an error.
 * `undefined` object properties are omitted, as in JSON, because optional fields are routinely unset.
 */
export function canonicalJson(value: unknown): string {
  return encode(value, '$', new Set());
}

export class CanonicalJsonError extends TypeError {
  constructor(
    readonly path: string,
    what: string,
  ) {
    super(`canonicalJson: ${what} at ${path}`);
    this.name = 'CanonicalJsonError';
  }
}

function encode(value: unknown, path: string, ancestors: Set<object>): string {
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      if (!Number.isFinite(value)) throw new CanonicalJsonError(path, 'non-finite number');
      return JSON.stringify(value);
    case 'object':
      break;
    default:
      throw new CanonicalJsonError(path, `unsupported ${typeof value}`);
  }
  if (value === null) return 'null';
  if (ancestors.has(value)) throw new CanonicalJsonError(path, 'circular reference');
  ancestors.add(value);
  try {
    if (Array.isArray(value)) {
      return `[${value.map((item, i) => encode(item, `${path}[${i}]`, ancestors)).join(',')}]`;
    }
    if (!isPlainObject(value)) {
      throw new CanonicalJsonError(path, `unsupported object (${value.constructor?.name ?? 'unknown'})`);
    }
    const record = value as Record<string, unknown>;
    const parts: string[] = [];
    for (const key of Object.keys(record).sort()) {
      const item = record[key];
      if (item === undefined) continue;
      parts.push(`${JSON.stringify(key)}:${encode(item, `${path}.${key}`, ancestors)}`);
    }
    return `{${parts.join(',')}}`;
  } finally {
    ancestors.delete(value);
  }
}

export function isPlainObject(value: object): boolean {
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}
