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
