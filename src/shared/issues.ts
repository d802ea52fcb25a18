/**
 * The one rendering of validation issues, for every config loader, route and frame handler. Typed
 * structurally (the shape of zod's issues) so this pure module needs no zod: validation itself
 * happens at the edges that own the schemas.
 */
export interface ValidationIssue {
  readonly code?: string;
  readonly path: readonly PropertyKey[];
  readonly message: string;
  /** `unrecognized_keys`: the unknown keys of the object at `path`. */
  readonly keys?: readonly string[];
  /** `invalid_key`: the key schema's own issues. */
  readonly issues?: readonly { readonly message: string }[];
}

export interface DescribeOptions {
  /** The phrase for one issue (default: its own message). Loaders whose input may hold secrets pass one that never echoes values. */
  message?: (issue: ValidationIssue) => string;
  /** `chunks.0.step` rather than `chunks[0].step`, for endpoints whose clients match on that form. */
  dottedIndexes?: boolean;
}

/** `a.b[0]["odd key"]`; the whole value is `root`. */
export function formatPath(path: readonly PropertyKey[], root = '(root)', dottedIndexes = false): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += dottedIndexes ? (out ? `.${key}` : `${key}`) : `[${key}]`;
    else if (typeof key === 'string' && /^[A-Za-z0-9_-]+$/.test(key)) out += out ? `.${key}` : key;
    else out += `[${JSON.stringify(String(key))}]`;
  }
  return out || root;
}

/**
 * One line per issue, `<path>: <message>`. Unknown keys are named themselves (zod reports them on the
 * parent), bad record keys say so. With `root: ''` a problem with the whole value is its message alone.
 */
export function describeIssues(issues: readonly ValidationIssue[], root = '(root)', opts: DescribeOptions = {}): string[] {
  const messageOf = opts.message ?? ((issue: ValidationIssue) => issue.message);
  const line = (path: readonly PropertyKey[], message: string): string => {
    const where = formatPath(path, root, opts.dottedIndexes);
    return where ? `${where}: ${message}` : message;
  };
  return issues.flatMap((issue) => {
    if (issue.code === 'unrecognized_keys' && issue.keys) return issue.keys.map((k) => line([...issue.path, k], 'unknown field'));
    if (issue.code === 'invalid_key') return [line(issue.path, `invalid key: ${issue.issues?.[0]?.message ?? issue.message}`)];
    return [line(issue.path, messageOf(issue))];
  });
}

/** Where JSON.parse's message says the text went wrong; undefined when it says nowhere. */
function offsetIn(text: string, message: string): number | undefined {
  const match = /position (\d+)/.exec(message);
  if (match) return Number(match[1]);
  return /end of JSON input/i.test(message) ? text.length : undefined;
}

/** Whether `prefix` is JSON as far as it goes: it parses, or fails only at its end. */
function jsonSoFar(prefix: string): boolean {
  try {
    JSON.parse(prefix);
    return true;
  } catch (error) {
    const offset = offsetIn(prefix, error instanceof Error ? error.message : '');
    return offset !== undefined && offset >= prefix.trimEnd().length;
  }
}

/**
 * Where a file's text stopped being JSON, from JSON.parse's error: ` at line L, column C`, and for a
 * file cut short (wrong at its end) a note saying so. Only the position: the message quotes the
 * offending text, which may be a secret. A message without a position ("Unexpected token …") is
 * placed by the longest prefix still JSON so far (parsing prefixes: config files are small).
 */
export function jsonErrorPosition(text: string, error: unknown): string {
  let offset = offsetIn(text, error instanceof Error ? error.message : '');
  if (offset === undefined) {
    // The prefix of length `good` is JSON so far, the one of length `bad` is not.
    let good = 0;
    let bad = text.length;
    while (bad - good > 1) {
      const mid = (good + bad) >> 1;
      if (jsonSoFar(text.slice(0, mid))) good = mid;
      else bad = mid;
    }
    offset = good;
  }
  const before = text.slice(0, offset);
  const line = before.split('\n').length;
  const column = offset - before.lastIndexOf('\n');
  // Wrong at its very end (past any trailing whitespace): the JSON was still going.
  const truncated = offset >= text.trimEnd().length;
  return ` at line ${line}, column ${column}${truncated ? ' (the file ends before the JSON does: is it cut short?)' : ''}`;
}
