/**
 * The demo model's brain: a rules-file schema plus the pure logic that turns a Chat Completions
 * conversation into the next scripted answer. No I/O here, so it is unit-testable without sockets.
 *
 * Rules file (JSON):
 *
 *   {
 *     "model": "demo-model",                       // id reported by /v1/models and in completions
 *     "fallback": "(demo model) I have no ...",     // answer when no script matches
 *     "scripts": [
 *       {
 *         "name": "notes",                          // unique; named in errors
 *         "match": "(?i)remember that (.+)",        // JS regex, tested against the LAST user message
 *         "flags": "s",                             // optional extra flags (i, m, s, u)
 *         "example": "remember that milk is out",   // optional: offered as a suggestion; must match
 *         "steps": [                                // one step per model turn within the user turn
 *           { "toolCalls": [ { "name": "notes__add_note", "arguments": { "text": "{{match.1}}" } } ] },
 *           { "text": "Saved: {{result.0}}" }
 *         ]
 *       }
 *     ]
 *   }
 *
 * A leading inline flag group such as `(?i)` or `(?is)` is accepted in `match` because JS regexes
 * have no inline flags and rules files are easier to write that way.
 *
 * Which step? The first script (file order) whose regex matches the last user message wins. The
 * step index is the number of assistant messages carrying tool_calls after that user message, so
 * each tool round-trip by the host advances the script by one. Running past the last step is an
 * error (the server answers HTTP 400 `script_exhausted`) rather than a silent fallback, because a
 * host that loops on tool calls must be noticed in tests.
 *
 * A step has `text`, `toolCalls`, or both. A tool call has `name` (used verbatim, even if the
 * request's `tools` list lacks it: tests rely on that to exercise unknown-tool handling) and either
 * `arguments` (an object, templated recursively) or `rawArguments` (a templated string sent as-is,
 * which lets tests feed the host malformed JSON arguments).
 *
 * Templates, `{{...}}`, in text and in string values:
 *   {{match.N}}            regex capture group N (0 = whole match)
 *   {{context:URI}}        the text of resource URI as the host put it in a system message
 *   {{error}}              the first tool result of this turn that is an error (see `onToolError`)
 *   (json paths may use `*` to map over an array: {{json:result.0:students.*.email}})
 *   {{user}}               the whole last user message
 *   {{system}}             the first system message, or ""
 *   {{result.N}}           content of the N-th tool message after the last user message
 *   {{result.last}}        content of the latest tool message after the last user message
 *   {{tool:NAME}}          content of the latest tool message (this user turn) answering tool NAME
 *   {{json:REF:a.b.0}}     REF's content parsed as JSON, then the dotted path (numbers index arrays)
 *   {{number:REF}}         REF converted to a number
 * where REF is any of the first six forms. When a string argument value is exactly one `json:` or
 * `number:` template, the value keeps its JSON type (so `"a": "{{number:match.1}}"` sends a number);
 * anywhere else it is rendered as text. Something that cannot be resolved at answer time renders as
 * a visible marker such as `<missing result.3>`; answering never throws. Template syntax is checked
 * when the rules are loaded, so typos fail fast instead of surfacing mid-demo.
 */
import { z } from 'zod';
import { describeIssues } from '../shared/issues';

const TEMPLATE = /\{\{\s*([^{}]*?)\s*\}\}/g;
const WHOLE_TEMPLATE = /^\{\{\s*([^{}]*?)\s*\}\}$/;
const INLINE_FLAGS = /^\(\?([a-z]+)\)/;
const ALLOWED_FLAGS = 'imsu';

// ---------------------------------------------------------------------------------------------
// Template parsing (shared by load-time validation and answer-time rendering)
// ---------------------------------------------------------------------------------------------

type Ref =
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

function parseTemplate(expr: string): TemplateExpr | undefined {
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

/** The subset of an OpenAI chat message the demo model looks at. */
export interface ChatMessageLike {
  role: string;
  content?: string | ReadonlyArray<{ type?: string; text?: string }> | null;
  tool_calls?: ReadonlyArray<{ id: string; function: { name: string; arguments?: string } }> | null;
  tool_call_id?: string;
}

export interface DemoToolCall {
  id: string;
  name: string;
  /** JSON text, exactly as the OpenAI API carries tool arguments. */
  arguments: string;
}

export type DemoAnswer =
  | {
      ok: true;
      /** null when the fallback answered. */
      script: string | null;
      step: number;
      text: string | null;
      toolCalls: DemoToolCall[];
      finishReason: 'stop' | 'tool_calls';
    }
  | { ok: false; code: 'script_exhausted'; message: string; script: string; step: number };

export function messageText(content: ChatMessageLike['content']): string {
  if (typeof content === 'string') return content;
  if (!content) return '';
  return content.map((part) => (typeof part.text === 'string' ? part.text : '')).join('');
}

/** FNV-1a, 32 bit: enough to tell conversations apart, and needs no crypto module. */
export function shortHash(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0).toString(16).padStart(8, '0');
}

/** A stable fingerprint of messages, so identical requests give identical ids. */
export function conversationHash(messages: readonly ChatMessageLike[]): string {
  return shortHash(
    JSON.stringify(
      messages.map((m) => [m.role, messageText(m.content), m.tool_call_id ?? null, m.tool_calls?.map((c) => c.id) ?? null]),
    ),
  );
}

interface TurnContext {
  match: RegExpExecArray;
  user: string;
  system: string;
  systems: string[];
  results: string[];
  byTool: Map<string, string>;
}

function resolveRef(ref: Ref, ctx: TurnContext): string | undefined {
  switch (ref.kind) {
    case 'user':
      return ctx.user;
    case 'system':
      return ctx.system;
    case 'match':
      return ctx.match[ref.index];
    case 'result':
      return ref.index === 'last' ? ctx.results[ctx.results.length - 1] : ctx.results[ref.index];
    case 'tool':
      return ctx.byTool.get(ref.name);
    case 'error':
      return ctx.results.find((r) => r.startsWith('Error:'));
    case 'context': {
      // The host renders gathered resources as "Resource <uri> from <server>:\n<text>".
      const prefix = `Resource ${ref.uri} from `;
      const msg = ctx.systems.find((m) => m.startsWith(prefix));
      return msg === undefined ? undefined : msg.slice(msg.indexOf('\n') + 1);
    }
  }
}

function jsonPath(text: string, path: readonly string[]): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  return walkPath(value, path);
}

/** `*` maps the rest of the path over an array: `students.*.email` yields every student's email. */
function walkPath(start: unknown, path: readonly string[]): unknown {
  let value = start;
  for (let i = 0; i < path.length; i++) {
    const key = path[i] as string;
    if (key === '*' && Array.isArray(value)) {
      const rest = path.slice(i + 1);
      const mapped = value.map((v) => walkPath(v, rest));
      return mapped.some((v) => v === undefined) ? undefined : mapped;
    }
    if (Array.isArray(value) && /^\d+$/.test(key)) value = value[Number(key)];
    else if (value !== null && typeof value === 'object' && Object.hasOwn(value, key)) {
      value = (value as Record<string, unknown>)[key];
    } else return undefined;
  }
  return value;
}

/** Evaluates one template to a typed value, or undefined when it cannot be resolved. */
function evaluate(expr: string, ctx: TurnContext): unknown {
  const parsed = parseTemplate(expr);
  if (!parsed) return undefined;
  const base = resolveRef(parsed.ref, ctx);
  if (base === undefined) return undefined;
  switch (parsed.kind) {
    case 'ref':
      return base;
    case 'json':
      return jsonPath(base, parsed.path);
    case 'number': {
      const n = base.trim() === '' ? NaN : Number(base.trim());
      return Number.isFinite(n) ? n : undefined;
    }
  }
}

function asText(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

function renderString(text: string, ctx: TurnContext): string {
  return text.replace(TEMPLATE, (_all, expr: string) => {
    const value = evaluate(expr, ctx);
    return value === undefined ? `<missing ${expr}>` : asText(value);
  });
}

function renderValue(value: unknown, ctx: TurnContext): unknown {
  if (typeof value === 'string') {
    const whole = WHOLE_TEMPLATE.exec(value);
    const expr = whole?.[1];
    if (expr !== undefined && (expr.startsWith('json:') || expr.startsWith('number:'))) {
      const typed = evaluate(expr, ctx);
      return typed === undefined ? `<missing ${expr}>` : typed;
    }
    return renderString(value, ctx);
  }
  if (Array.isArray(value)) return value.map((v) => renderValue(v, ctx));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, renderValue(v, ctx)]));
  }
  return value;
}

/**
 * Picks the scripted answer for a conversation. Pure and deterministic: the same messages always
 * yield the same answer, including tool call ids, so a retried LLM call reproduces its output.
 */
export function answer(rules: ResolvedDemoRules, messages: readonly ChatMessageLike[]): DemoAnswer {
  let lastUser = -1;
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i]?.role === 'user') {
      lastUser = i;
      break;
    }
  }
  const fallback: DemoAnswer = {
    ok: true,
    script: null,
    step: 0,
    text: rules.fallback,
    toolCalls: [],
    finishReason: 'stop',
  };
  if (lastUser < 0) return fallback;

  const user = messageText(messages[lastUser]?.content);
  let script: DemoScript | undefined;
  let match: RegExpExecArray | null = null;
  const systems = messages.filter((m) => m.role === 'system').map((m) => messageText(m.content));
  const systemHas = (pattern: string) => systems.some((t) => compilePattern(pattern).test(t));
  for (const candidate of rules.scripts) {
    if (candidate.systemMatch !== undefined && !systemHas(candidate.systemMatch)) continue;
    if (candidate.systemNotMatch !== undefined && systemHas(candidate.systemNotMatch)) continue;
    match = compilePattern(candidate.match, candidate.flags).exec(user);
    if (match) {
      script = candidate;
      break;
    }
  }
  if (!script || !match) return fallback;

  const turn = messages.slice(lastUser + 1);
  const callNames = new Map<string, string>();
  let step = 0;
  for (const m of turn) {
    if (m.role === 'assistant' && m.tool_calls && m.tool_calls.length > 0) {
      step++;
      for (const call of m.tool_calls) callNames.set(call.id, call.function.name);
    }
  }
  const results: string[] = [];
  const byTool = new Map<string, string>();
  for (const m of turn) {
    if (m.role !== 'tool') continue;
    const text = messageText(m.content);
    results.push(text);
    const name = m.tool_call_id === undefined ? undefined : callNames.get(m.tool_call_id);
    if (name !== undefined) byTool.set(name, text);
  }

  const system = systems[0] ?? '';
  const ctx: TurnContext = { match, user, system, systems, results, byTool };
  if (script.onToolError !== undefined && results.some((r) => r.startsWith('Error:'))) {
    return { ok: true, script: script.name, step, text: renderString(script.onToolError, ctx), toolCalls: [], finishReason: 'stop' };
  }

  const spec = script.steps[step];
  if (!spec) {
    return {
      ok: false,
      code: 'script_exhausted',
      message: `demo model: script '${script.name}' has no step ${step}`,
      script: script.name,
      step,
    };
  }

  // A step whose input is not there (no unpaid invoice) answers instead of calling with `<missing>` arguments.
  const required = spec.requires === undefined ? undefined : WHOLE_TEMPLATE.exec(spec.requires)?.[1];
  if (required !== undefined && evaluate(required, ctx) === undefined) {
    return { ok: true, script: script.name, step, text: renderString(spec.otherwise ?? '', ctx), toolCalls: [], finishReason: 'stop' };
  }

  // Hashing only up to the user message keeps ids unique across turns yet stable within a retry.
  const hash = conversationHash(messages.slice(0, lastUser + 1));
  const toolCalls = (spec.toolCalls ?? []).map((call, index): DemoToolCall => ({
    id: `call_${hash}_${step}_${index}`,
    name: call.name,
    arguments:
      call.rawArguments !== undefined
        ? renderString(call.rawArguments, ctx)
        : JSON.stringify(renderValue(call.arguments ?? {}, ctx)),
  }));
  return {
    ok: true,
    script: script.name,
    step,
    text: spec.text === undefined ? null : renderString(spec.text, ctx),
    toolCalls,
    finishReason: toolCalls.length > 0 ? 'tool_calls' : 'stop',
  };
}
