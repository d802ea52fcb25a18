/**
 * Checks values against JSON Schemas that servers send: LLM-produced tool arguments before the call
 * goes out (so an obviously wrong call costs one LLM round trip instead of a server round trip, and
 * never reaches a server with side effects), and a user's answer to a server's question (elicitation)
 * before it goes back. The server stays the authority: when we cannot check, we let it through.
 */
import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import Ajv2019 from 'ajv/dist/2019';
import Ajv2020 from 'ajv/dist/2020';

export type ValidationResult = { ok: true } | { ok: false; message: string };

export interface ArgumentValidator {
  /** `subject` names the value in messages (default `arguments`). */
  validate(schema: unknown, args: unknown, subject?: string): ValidationResult;
}

interface WarnLogger {
  warn(obj: object, msg?: string): void;
}

const MAX_REPORTED_ERRORS = 5;
const MAX_VALUES_SHOWN = 8;
/** Compiled validators are small, but tool schemas come from servers we do not control. */
const MAX_CACHED_SCHEMAS = 1_000;

type Draft = '07' | '2019-09' | '2020-12';

function draftOf(schema: Record<string, unknown>): Draft {
  const declared = typeof schema['$schema'] === 'string' ? schema['$schema'] : '';
  if (declared.includes('2020-12')) return '2020-12';
  if (declared.includes('2019-09')) return '2019-09';
  // No `$schema` (the common case for MCP tools), draft-07, -06 or -04: draft-07 rules are the
  // closest ajv 8 has for all of them.
  return '07';
}

function quote(value: unknown): string {
  const s = JSON.stringify(value);
  return s === undefined ? String(value) : s;
}

function describeError(e: ErrorObject, what: string): string {
  const at = e.instancePath === '' ? '' : `${e.instancePath}: `;
  const subject = e.instancePath === '' ? what : e.instancePath;
  const params = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case 'required':
      return `${at}missing required property ${quote(params['missingProperty'])}`;
    case 'additionalProperties':
      return `${at}unexpected property ${quote(params['additionalProperty'])}`;
    case 'type':
      return `${subject} must be ${String(params['type'])}`;
    case 'enum': {
      const allowed = Array.isArray(params['allowedValues']) ? (params['allowedValues'] as unknown[]) : [];
      const shown = allowed.slice(0, MAX_VALUES_SHOWN).map(quote).join(', ');
      return `${subject} must be one of ${shown}${allowed.length > MAX_VALUES_SHOWN ? ', ...' : ''}`;
    }
    case 'const':
      return `${subject} must be ${quote(params['allowedValue'])}`;
    default:
      return `${subject} ${e.message ?? `fails "${e.keyword}"`}`;
  }
}

function summarize(errors: readonly ErrorObject[], what: string): string {
  const parts = [...new Set(errors.map((e) => describeError(e, what)))];
  const shown = parts.slice(0, MAX_REPORTED_ERRORS).join('; ');
  const more = parts.length > MAX_REPORTED_ERRORS ? `; and ${parts.length - MAX_REPORTED_ERRORS} more` : '';
  return `${what} invalid: ${shown}${more}`;
}

export function createArgumentValidator(opts: { logger?: WarnLogger } = {}): ArgumentValidator {
  const options = {
    allErrors: true,
    // Server schemas use vendor keywords and loose constructs; strict mode would refuse them.
    strict: false,
    // Formats are advisory in JSON Schema and we do not ship format definitions; the server checks.
    validateFormats: false,
    // Two tools may both declare the same `$id`; registering either would make the other fail.
    addUsedSchema: false,
    logger: false as const,
  };
  const engines = new Map<Draft, Ajv>();
  const engine = (draft: Draft): Ajv => {
    let ajv = engines.get(draft);
    if (!ajv) {
      ajv = draft === '2020-12' ? new Ajv2020(options) : draft === '2019-09' ? new Ajv2019(options) : new Ajv(options);
      engines.set(draft, ajv);
    }
    return ajv;
  };
  // `null` remembers "cannot compile" so a broken schema is not recompiled on every call.
  const cache = new Map<string, ValidateFunction | null>();

  const compile = (schema: unknown): ValidateFunction | null => {
    let key: string;
    try {
      key = JSON.stringify(schema);
    } catch {
      return null;
    }
    const cached = cache.get(key);
    if (cached !== undefined) return cached;
    let fn: ValidateFunction | null = null;
    try {
      if (typeof schema === 'boolean') {
        fn = engine('07').compile(schema);
      } else if (typeof schema === 'object' && schema !== null && !Array.isArray(schema)) {
        const obj = schema as Record<string, unknown>;
        // `$schema` is only used to pick the engine; left in, an unknown meta-schema URI is a hard
        // compile error in ajv.
        const { $schema: _ignored, ...rest } = obj;
        fn = engine(draftOf(obj)).compile(rest);
      }
    } catch (error) {
      opts.logger?.warn(
        { error: error instanceof Error ? error.message : String(error) },
        'tool input schema cannot be compiled; arguments are passed to the server unchecked',
      );
      fn = null;
    }
    if (cache.size >= MAX_CACHED_SCHEMAS) cache.clear();
    cache.set(key, fn);
    return fn;
  };

  return {
    validate(schema: unknown, args: unknown, subject = 'arguments'): ValidationResult {
      const fn = compile(schema);
      if (!fn) return { ok: true };
      if (fn(args)) return { ok: true };
      return { ok: false, message: summarize(fn.errors ?? [], subject) };
    },
  };
}
