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
 *   {{context:URI}}        the text of resource URI as the host put it in a system message, or as
 *                          host__read_resource returned it (context on demand: ./on-demand.ts)
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
import {
  compilePattern,
  parseTemplate,
  TEMPLATE,
  WHOLE_TEMPLATE,
  type DemoScript,
  type Ref,
  type ResolvedDemoRules,
} from './rules-schema';
import { callsResourceTools, contextUris, isOnDemandRound, readUri, LIST_RESOURCES, onDemandCalls, READ_RESOURCE, readText } from './on-demand';

export {
  compilePattern,
  DEFAULT_FALLBACK,
  DEFAULT_MODEL,
  DemoRulesError,
  DemoRulesSchema,
  parseDemoRules,
  type DemoRules,
  type DemoScript,
  type ResolvedDemoRules,
} from './rules-schema';

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
  /** Results of this turn's `host__read_resource` calls (context on demand, ./on-demand.ts). */
  reads: string[];
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
      return msg === undefined ? readText(ref.uri, ctx.reads) : msg.slice(msg.indexOf('\n') + 1);
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
 * `offered`: the names of the tools the request offers (context on demand needs the host's resource tools).
 */
export function answer(rules: ResolvedDemoRules, messages: readonly ChatMessageLike[], offered: readonly string[] = []): DemoAnswer {
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
  const tried = new Set<string>();
  // A script that calls the host's resource tools itself fetches nothing on demand: its steps count as written.
  const onDemand = !callsResourceTools(script);
  let step = 0;
  let rounds = 0;
  for (const m of turn) {
    if (m.role === 'assistant' && m.tool_calls && m.tool_calls.length > 0) {
      // Rounds that only fetched context (./on-demand.ts) do not advance the script.
      if (onDemand && isOnDemandRound(m.tool_calls)) rounds++;
      else step++;
      for (const call of m.tool_calls) {
        callNames.set(call.id, call.function.name);
        if (call.function.name === READ_RESOURCE) tried.add(readUri(call.function.arguments));
      }
    }
  }
  const results: string[] = [];
  const reads: string[] = [];
  let listing: string | undefined;
  const byTool = new Map<string, string>();
  for (const m of turn) {
    if (m.role !== 'tool') continue;
    const text = messageText(m.content);
    const name = m.tool_call_id === undefined ? undefined : callNames.get(m.tool_call_id);
    if (name === READ_RESOURCE) reads.push(text);
    if (name === LIST_RESOURCES) listing = text;
    if (!onDemand || (name !== READ_RESOURCE && name !== LIST_RESOURCES)) results.push(text);
    if (name !== undefined) byTool.set(name, text);
  }

  const system = systems[0] ?? '';
  const ctx: TurnContext = { match, user, system, systems, results, byTool, reads };
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

  // Hashing only up to the user message keeps ids unique across turns yet stable within a retry.
  const hash = conversationHash(messages.slice(0, lastUser + 1));
  const missing = contextUris(spec).filter((uri) => evaluate(`context:${uri}`, ctx) === undefined);
  const fetch = onDemand ? onDemandCalls({ missing, tried, offered, listing, script: script.name }) : [];
  if (fetch.length > 0) {
    const toolCalls = fetch.map((call, index): DemoToolCall => ({ id: `call_${hash}_r${rounds}_${index}`, name: call.name, arguments: JSON.stringify(call.arguments) }));
    return { ok: true, script: script.name, step, text: null, toolCalls, finishReason: 'tool_calls' };
  }

  // A step whose input is not there (no unpaid invoice) answers instead of calling with `<missing>` arguments.
  const required = spec.requires === undefined ? undefined : WHOLE_TEMPLATE.exec(spec.requires)?.[1];
  if (required !== undefined && evaluate(required, ctx) === undefined) {
    return { ok: true, script: script.name, step, text: renderString(spec.otherwise ?? '', ctx), toolCalls: [], finishReason: 'stop' };
  }

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
