/**
 * Variable references in config values (`${env:NAME}` and VS Code's forms), resolved from the
 * environment, and the list their problems go to.
 */
import * as os from 'node:os';
import { formatPath } from '../shared/issues';

export type PathPart = PropertyKey;

/**
 * Variables a value may hold: `${env:NAME}`; VS Code's `${input:id}` (read from the environment
 * variable named by the id in upper case, other characters as `_`: `${input:api-key}` → `API_KEY`),
 * `${workspaceFolder}` (the config file's directory) and `${userHome}`. Anything else is left as written.
 */
const VARIABLE_REF = /\$\{(?:(env|input):([^}]*)|(workspaceFolder|userHome))\}/g;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The environment variable that answers VS Code's `${input:<id>}`. */
export const inputVariable = (id: string): string => id.toUpperCase().replace(/[^A-Z0-9_]/g, '_');

/** The problems (or warnings) found in one config file, each `<source>: <field path>: <what>`. */
export class ProblemList {
  readonly items: string[] = [];
  constructor(private readonly source: string) {}
  add(parts: readonly PathPart[], what: string): void {
    this.items.push(`${this.source}: ${formatPath(parts)}: ${what}`);
  }
  addLines(lines: readonly string[]): void {
    for (const line of lines) this.items.push(`${this.source}: ${line}`);
  }
}

export interface RefContext {
  env: NodeJS.ProcessEnv;
  baseDir: string;
  problems: ProblemList;
}

/** `value` with its variable references resolved; an unresolvable one is a problem and resolves to nothing. */
export function resolveEnvRefs(value: string, ctx: RefContext, where: readonly PathPart[]): string {
  return value.replace(VARIABLE_REF, (_match, kind: string | undefined, ref: string | undefined, builtin: string | undefined) => {
    if (builtin === 'workspaceFolder') return ctx.baseDir;
    if (builtin === 'userHome') return os.homedir();
    const name = kind === 'input' ? inputVariable(ref ?? '') : (ref ?? '');
    if (!ENV_NAME.test(name)) {
      ctx.problems.add(where, `invalid reference \${${kind}:${ref}}: expected a variable name`);
      return '';
    }
    const resolved = ctx.env[name];
    if (resolved === undefined) {
      ctx.problems.add(where, kind === 'input' ? `input "${ref}": set environment variable "${name}"` : `environment variable "${name}" is not set`);
      return '';
    }
    return resolved;
  });
}

/** Each value of `record` resolved (env, headers); as written when `resolve` is off (a disabled server). */
export function resolveRecord(
  record: Record<string, string> | undefined,
  ctx: RefContext,
  where: readonly PathPart[],
  resolve: boolean,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(record ?? {})) {
    out[key] = resolve ? resolveEnvRefs(value, ctx, [...where, key]) : value;
  }
  return out;
}
