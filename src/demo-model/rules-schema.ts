/**
 * The demo model's rules file: its schema, the template syntax checked when the rules load, and
 * `compilePattern` for the `(?i)`-style inline flags. rules.ts (the answering engine) documents the
 * format and re-exports what callers need.
 */
import { z } from 'zod';
import { describeIssues } from '../shared/issues';

export const TEMPLATE = /\{\{\s*([^{}]*?)\s*\}\}/g;
export const WHOLE_TEMPLATE = /^\{\{\s*([^{}]*?)\s*\}\}$/;
const INLINE_FLAGS = /^\(\?([a-z]+)\)/;
const ALLOWED_FLAGS = 'imsu';

// ---------------------------------------------------------------------------------------------
// Template parsing (shared by load-time validation and answer-time rendering)
// ---------------------------------------------------------------------------------------------

export type Ref =
  | { kind: 'match'; index: number }
  | { kind: 'result'; index: number | 'last' }
  | { kind: 'tool'; name: string }
  | { kind: 'user' }
  | { kind: 'system' }
  | { kind: 'error' }
  | { kind: 'context'; uri: string };

type TemplateExpr =
  | { kind: 'ref'; ref: Ref }
  | { kind: 'json'; ref: Ref; path: string[] }
  | { kind: 'number'; ref: Ref };

function parseRef(text: string): Ref | undefined {
  if (text === 'user') return { kind: 'user' };
  if (text === 'system') return { kind: 'system' };
  if (text === 'error') return { kind: 'error' };
  if (text === 'result.last') return { kind: 'result', index: 'last' };
  const indexed = /^(match|result)\.(\d+)$/.exec(text);
  if (indexed) {
    const index = Number(indexed[2]);
    return indexed[1] === 'match' ? { kind: 'match', index } : { kind: 'result', index };
  }
  if (text.startsWith('context:') && text.length > 'context:'.length) {
    return { kind: 'context', uri: text.slice('context:'.length) };
  }
  if (text.startsWith('tool:') && text.length > 'tool:'.length) {
    return { kind: 'tool', name: text.slice('tool:'.length) };
  }
  return undefined;
}

export function parseTemplate(expr: string): TemplateExpr | undefined {
  if (expr.startsWith('json:')) {
    const rest = expr.slice('json:'.length);
    // Tool names never contain ':', so the path is whatever follows the last one.
    const cut = rest.lastIndexOf(':');
    if (cut < 0) return undefined;
    const ref = parseRef(rest.slice(0, cut));
    const pathText = rest.slice(cut + 1);
    if (!ref) return undefined;
    return { kind: 'json', ref, path: pathText === '' ? [] : pathText.split('.') };
  }
  if (expr.startsWith('number:')) {
    const ref = parseRef(expr.slice('number:'.length));
    return ref ? { kind: 'number', ref } : undefined;
  }
  const ref = parseRef(expr);
  return ref ? { kind: 'ref', ref } : undefined;
}

function templatesIn(text: string): string[] {
  return [...text.matchAll(TEMPLATE)].map((m) => m[1] ?? '');
}

// ---------------------------------------------------------------------------------------------
// Schema
// ---------------------------------------------------------------------------------------------

/** Splits a leading `(?i)`-style group off a pattern and merges it with explicit flags. */
export function compilePattern(match: string, flags = ''): RegExp {
  let source = match;
  let allFlags = flags;
  const inline = INLINE_FLAGS.exec(match);
  if (inline) {
    source = match.slice(inline[0].length);
    allFlags += inline[1] ?? '';
  }
  for (const flag of allFlags) {
    if (!ALLOWED_FLAGS.includes(flag)) {
      throw new Error(`unsupported regex flag '${flag}' (allowed: ${ALLOWED_FLAGS})`);
    }
  }
  return new RegExp(source, [...new Set(allFlags)].join(''));
}

function captureGroupCount(re: RegExp): number {
  // An empty alternative always matches, and the result's length reveals the number of groups.
  const probe = new RegExp(`(?:${re.source})|`, re.flags).exec('');
  return probe ? probe.length - 1 : 0;
}

const ToolCallSpecSchema = z
  .object({
    name: z.string().min(1),
    arguments: z.record(z.string(), z.unknown()).optional(),
    rawArguments: z.string().optional(),
  })
  .refine((c) => c.arguments === undefined || c.rawArguments === undefined, {
    message: 'give either arguments or rawArguments, not both',
  });

const StepSchema = z
  .object({
    text: z.string().optional(),
    toolCalls: z.array(ToolCallSpecSchema).min(1).optional(),
    /** A template (e.g. `{{json:tool:admin__get_invoice:invoices.0.id}}`) that must resolve for this step to run... */
    requires: z.string().optional(),
    /** ...or else the answer is this text, and the script stops (e.g. "nothing to pay"). */
    otherwise: z.string().optional(),
  })
  .refine((s) => s.text !== undefined || s.toolCalls !== undefined, {
    message: 'a step needs text, toolCalls, or both',
  })
  .refine((s) => (s.requires === undefined) === (s.otherwise === undefined), {
    message: 'give requires and otherwise together',
    path: ['requires'],
  });

const ScriptSchema = z
  .object({
    name: z.string().min(1),
    match: z.string().min(1),
    flags: z.string().optional(),
    /** Only use this script when some system message matches (e.g. a server is unavailable). */
    systemMatch: z.string().min(1).optional(),
    /** Only use this script when no system message matches. */
    systemNotMatch: z.string().min(1).optional(),
    /** Answer with this text (templates allowed, `{{error}}` = the first failed result) once a tool fails. */
    onToolError: z.string().min(1).optional(),
    /** A message this script answers, offered to users as a suggestion (suggestions.ts); must match `match`. */
    example: z.string().min(1).max(200).optional(),
    steps: z.array(StepSchema).min(1),
  })
  .superRefine((script, ctx) => {
    let groups = Infinity;
    try {
      const pattern = compilePattern(script.match, script.flags);
      groups = captureGroupCount(pattern);
      if (script.example !== undefined && !pattern.test(script.example)) {
        ctx.addIssue({ code: 'custom', path: ['example'], message: `"${script.example}" does not match the script's own match` });
      }
    } catch (err) {
      ctx.addIssue({
        code: 'custom',
        path: ['match'],
        message: `invalid regular expression: ${err instanceof Error ? err.message : String(err)}`,
      });
    }
    const check = (text: string, path: PropertyKey[]): void => {
      for (const expr of templatesIn(text)) {
        const parsed = parseTemplate(expr);
        if (!parsed) {
          ctx.addIssue({ code: 'custom', path, message: `unknown template {{${expr}}}` });
        } else if (parsed.ref.kind === 'match' && parsed.ref.index > groups) {
          ctx.addIssue({
            code: 'custom',
            path,
            message: `{{${expr}}} refers to a capture group the regex does not have (it has ${groups})`,
          });
        }
      }
    };
    const walk = (value: unknown, path: PropertyKey[]): void => {
      if (typeof value === 'string') check(value, path);
      else if (Array.isArray(value)) value.forEach((v, i) => walk(v, [...path, i]));
      else if (value !== null && typeof value === 'object') {
        for (const [k, v] of Object.entries(value)) walk(v, [...path, k]);
      }
    };
    if (script.onToolError !== undefined) check(script.onToolError, ['onToolError']);
    script.steps.forEach((step, i) => {
      if (step.text !== undefined) check(step.text, ['steps', i, 'text']);
      if (step.otherwise !== undefined) check(step.otherwise, ['steps', i, 'otherwise']);
      if (step.requires !== undefined) {
        const whole = WHOLE_TEMPLATE.exec(step.requires);
        if (!whole) ctx.addIssue({ code: 'custom', path: ['steps', i, 'requires'], message: 'must be one template, e.g. {{json:tool:name:path}}' });
        else check(step.requires, ['steps', i, 'requires']);
      }
      step.toolCalls?.forEach((call, j) => {
        const base = ['steps', i, 'toolCalls', j];
        if (call.rawArguments !== undefined) check(call.rawArguments, [...base, 'rawArguments']);
        if (call.arguments !== undefined) walk(call.arguments, [...base, 'arguments']);
      });
    });
  });

export const DEFAULT_MODEL = 'demo-model';
export const DEFAULT_FALLBACK = '(demo model) I have no script for that message.';

export const DemoRulesSchema = z
  .object({
    model: z.string().min(1).default(DEFAULT_MODEL),
    fallback: z.string().default(DEFAULT_FALLBACK),
    scripts: z.array(ScriptSchema).default([]),
  })
  .superRefine((rules, ctx) => {
    const seen = new Set<string>();
    rules.scripts.forEach((s, i) => {
      if (seen.has(s.name)) {
        ctx.addIssue({ code: 'custom', path: ['scripts', i, 'name'], message: `duplicate script name '${s.name}'` });
      }
      seen.add(s.name);
    });
  });

/** What a rules author writes (defaults still optional). */
export type DemoRules = z.input<typeof DemoRulesSchema>;
/** Validated rules with defaults filled in. */
export type ResolvedDemoRules = z.output<typeof DemoRulesSchema>;
export type DemoScript = ResolvedDemoRules['scripts'][number];

export class DemoRulesError extends Error {
  constructor(readonly issues: string[]) {
    super(`invalid demo model rules:\n  ${issues.join('\n  ')}`);
    this.name = 'DemoRulesError';
  }
}

/** Validates rules; throws DemoRulesError whose issues name each bad field by path. */
export function parseDemoRules(input: unknown): ResolvedDemoRules {
  const parsed = DemoRulesSchema.safeParse(input);
  if (parsed.success) return parsed.data;
  throw new DemoRulesError(describeIssues(parsed.error.issues));
}

// ---------------------------------------------------------------------------------------------
// Answering
// ---------------------------------------------------------------------------------------------
