import { createHmac } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { canonicalJson, isPlainObject, sha256Hex } from './canonical';
import { describeIssues } from '../shared/issues';

/**
 * Redaction of tool arguments (and free text) before they reach the audit log.
 *
 * A redacted value becomes `[redacted:<12 hex>]`, a prefix of its SHA-256: investigators can still
 * see that two calls used the same card or e-mail address without being able to read it. A string is
 * hashed as itself and any other value as its canonical JSON, so `{"email": "a@b.io"}` and the text
 * "write to a@b.io" produce the same token.
 *
 * Plain SHA-256 of a low-entropy value (a phone number, a card number with a known BIN) can be
 * brute-forced offline. Pass a `key` (kept outside the log, e.g. from the environment) to switch to
 * HMAC-SHA-256 when the log may be read by people who must not recover those values.
 */

const PatternSchema = z.strictObject({
  name: z.string().min(1, 'must be a non-empty string'),
  regex: z.string().min(1, 'must be a non-empty regular expression source'),
  /** Extra RegExp flags; `g` is always added. */
  flags: z
    .string()
    .regex(/^[imsu]*$/, 'may only contain the flags i, m, s, u')
    .optional(),
}).superRefine((p, ctx) => {
  let re: RegExp;
  try {
    // Bad flags are reported on `flags` by the check above; do not blame the regex for them.
    re = new RegExp(p.regex, /^[imsu]*$/.test(p.flags ?? '') ? p.flags : '');
  } catch (err) {
    ctx.addIssue({
      code: 'custom',
      path: ['regex'],
      message: `is not a valid regular expression: ${err instanceof Error ? err.message : String(err)}`,
    });
    return;
  }
  // A pattern that matches the empty string would "redact" the gaps between characters.
  if (re.test('')) ctx.addIssue({ code: 'custom', path: ['regex'], message: 'must not match the empty string' });
});

export const RedactionRulesSchema = z.strictObject({
  /** Key names whose values are redacted wherever they occur, compared case-insensitively. */
  fields: z.array(z.string().min(1, 'must be a non-empty string')),
  /** Regular expressions whose matches inside any string value (or key) are redacted. */
  patterns: z.array(PatternSchema).optional(),
});

export type RedactionRules = z.infer<typeof RedactionRulesSchema>;
export type RedactionPattern = NonNullable<RedactionRules['patterns']>[number];

export interface RedactOptions {
  /** HMAC key; without it tokens are plain SHA-256 prefixes (see the module comment). */
  key?: string | Uint8Array;
}

// Every quantifier is bounded (RFC 5321 lengths: 64 for the local part, 63 per label): with `+`,
// a long run of letters without an "@" (a hex blob, a token) costs quadratic time to scan.
export const EMAIL_PATTERN: RedactionPattern = {
  name: 'email',
  regex: '[A-Za-z0-9._%+-]{1,64}@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\\.){1,8}[A-Za-z]{2,63}',
};

// Frozen because it is shared by every caller that omits rules, and compiled once per object.
export const DEFAULT_REDACTION: RedactionRules = deepFreeze({
  fields: [
    'email', 'password', 'token', 'secret', 'authorization', 'cardNumber', 'card_number', 'cvv', 'iban',
    'phone', 'ssn',
  ],
  patterns: [{ ...EMAIL_PATTERN }],
});

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const item of Object.values(value)) deepFreeze(item);
    Object.freeze(value);
  }
  return value;
}

export class RedactionRulesError extends Error {
  constructor(
    message: string,
    readonly issues: string[] = [],
  ) {
    super(message);
    this.name = 'RedactionRulesError';
  }
}

export class RedactionError extends TypeError {
  constructor(message: string) {
    super(message);
    this.name = 'RedactionError';
  }
}

/** Validates rules from any source; every problem names its field, e.g. `patterns[1].regex`. */
export function parseRedactionRules(input: unknown): RedactionRules {
  const result = RedactionRulesSchema.safeParse(input);
  if (result.success) return result.data;
  const issues = describeIssues(result.error.issues);
  throw new RedactionRulesError(`invalid redaction rules:\n  ${issues.join('\n  ')}`, issues);
}

/** Reads a JSON rules file (see examples/audit-redaction.json); errors name the file and the field. */
export async function loadRedactionRules(file: string): Promise<RedactionRules> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new RedactionRulesError(`cannot read redaction rules file ${file}: ${err instanceof Error ? err.message : String(err)}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new RedactionRulesError(`redaction rules file ${file} is not valid JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
  try {
    return parseRedactionRules(json);
  } catch (err) {
    if (err instanceof RedactionRulesError) {
      throw new RedactionRulesError(`redaction rules file ${file} is invalid:\n  ${err.issues.join('\n  ')}`, err.issues);
    }
    throw err;
  }
}

interface CompiledRules {
  fields: ReadonlySet<string>;
  patterns: RegExp[];
}

// Rules are typically one long-lived object used for every call; compile its regexes once. So a
// rules object must not be mutated after its first use.
const compiledCache = new WeakMap<RedactionRules, CompiledRules>();

function compile(rules: RedactionRules): CompiledRules {
  const cached = compiledCache.get(rules);
  if (cached) return cached;
  const valid = parseRedactionRules(rules);
  const compiled: CompiledRules = {
    fields: new Set(valid.fields.map((f) => f.toLowerCase())),
    patterns: (valid.patterns ?? []).map((p) => new RegExp(p.regex, `${p.flags ?? ''}g`)),
  };
  compiledCache.set(rules, compiled);
  return compiled;
}

/** The token that replaces a redacted value. */
export function redactionToken(value: unknown, opts: RedactOptions = {}): string {
  const text = typeof value === 'string' ? value : canonicalJson(value);
  const hex = opts.key === undefined ? sha256Hex(text) : createHmac('sha256', opts.key).update(text, 'utf8').digest('hex');
  return `[redacted:${hex.slice(0, 12)}]`;
}

function redactStringWith(text: string, compiled: CompiledRules, opts: RedactOptions): string {
  if (compiled.patterns.length === 0 || text.length === 0) return text;
  // Collect the matches of every pattern on the original text and merge overlaps, so one pattern
  // never re-matches inside another's token and overlapping secrets are covered as a whole.
  const ranges: Array<[number, number]> = [];
  for (const re of compiled.patterns) {
    for (const m of text.matchAll(re)) {
      if (m[0].length > 0) ranges.push([m.index, m.index + m[0].length]);
    }
  }
  if (ranges.length === 0) return text;
  ranges.sort((a, b) => a[0] - b[0] || b[1] - a[1]);
  let out = '';
  let cursor = 0;
  let current: [number, number] | undefined;
  const flush = (): void => {
    if (!current) return;
    out += text.slice(cursor, current[0]) + redactionToken(text.slice(current[0], current[1]), opts);
    cursor = current[1];
  };
  for (const range of ranges) {
    if (current && range[0] < current[1]) {
      current[1] = Math.max(current[1], range[1]);
    } else {
      flush();
      current = [range[0], range[1]];
    }
  }
  flush();
  return out + text.slice(cursor);
}

/** Applies only the patterns of `rules` to a piece of free text (e.g. an error message). */
export function redactText(text: string, rules: RedactionRules = DEFAULT_REDACTION, opts: RedactOptions = {}): string {
  return redactStringWith(text, compile(rules), opts);
}

/**
 * Returns a redacted deep copy of a JSON value; the input is never modified. Values under a listed
 * key are replaced whole (objects and arrays included); pattern matches are replaced inside every
 * other string, and inside keys, since callers do key maps by e-mail address.
 *
 * Non-JSON values (functions, Dates, class instances, cycles) are rejected. Error messages give the
 * path with keys already redacted, so they are safe to log.
 */
export function redact<T>(value: T, rules: RedactionRules = DEFAULT_REDACTION, opts: RedactOptions = {}): T {
  const compiled = compile(rules);
  return walk(value, compiled, opts, '$', new Set()) as T;
}

function walk(value: unknown, compiled: CompiledRules, opts: RedactOptions, path: string, ancestors: Set<object>): unknown {
  switch (typeof value) {
    case 'string':
      return redactStringWith(value, compiled, opts);
    case 'number':
    case 'boolean':
    case 'undefined':
      return value;
    case 'object':
      break;
    default:
      throw new RedactionError(`cannot redact a ${typeof value} at ${path}`);
  }
  if (value === null) return null;
  if (ancestors.has(value)) throw new RedactionError(`cannot redact a circular reference at ${path}`);
  ancestors.add(value);
  try {
    if (Array.isArray(value)) {
      return value.map((item, i) => walk(item, compiled, opts, `${path}[${i}]`, ancestors));
    }
    if (!isPlainObject(value)) throw new RedactionError(`cannot redact a non-plain object at ${path}`);
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value as Record<string, unknown>)) {
      if (item === undefined) continue;
      const safeKey = redactStringWith(key, compiled, opts);
      const copy = compiled.fields.has(key.toLowerCase())
        ? redactionToken(item, opts)
        : walk(item, compiled, opts, `${path}.${safeKey}`, ancestors);
      // defineProperty, not assignment: JSON.parse yields an own "__proto__" key, and assigning it
      // would replace the copy's prototype instead of copying the value.
      Object.defineProperty(out, safeKey, { value: copy, enumerable: true, writable: true, configurable: true });
    }
    return out;
  } finally {
    ancestors.delete(value);
  }
}
