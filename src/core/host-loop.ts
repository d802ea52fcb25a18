/**
 * Pure decisions of the host loop. The turn workflow drives these; jest tests them without Temporal.
 * No I/O, no clocks, no randomness: everything here must replay identically.
 */
import type { CatalogTool, ToolRef } from '../shared/tool-types';
import type { ChatMessage, LlmToolCall, LlmToolSpec } from '../shared/turn';

/** The tools as the LLM sees them. Descriptions are prefixed with the server so the model can tell them apart. */
export function toLlmTools(tools: readonly CatalogTool[]): LlmToolSpec[] {
  return tools.map((t) => ({
    name: t.name,
    description: t.description ? `[${t.server}] ${t.description}` : `[${t.server}] ${t.tool}`,
    parameters: normalizeParameters(t.inputSchema),
  }));
}

/** OpenAI requires an object schema; MCP servers occasionally send `{}` or omit `type`. */
function normalizeParameters(schema: Record<string, unknown>): Record<string, unknown> {
  if (schema['type'] === 'object') return schema;
  return { type: 'object', properties: {}, ...schema };
}

export type PlannedCall =
  | { kind: 'call'; call: LlmToolCall; tool: ToolRef; arguments: Record<string, unknown> }
  | { kind: 'reject'; call: LlmToolCall; tool?: ToolRef; arguments: unknown; reason: string };

/**
 * Resolves each tool call of one LLM step through the catalog (never by splitting names) and parses
 * its arguments. Problems become rejections that go back to the LLM as tool results.
 */
export function planToolCalls(
  calls: readonly LlmToolCall[],
  tools: readonly ToolRef[],
  /** The tools the caller may see; an "unknown tool" answer must not reveal the hidden ones. */
  visible: readonly ToolRef[] = tools,
): PlannedCall[] {
  const byName = new Map(tools.map((t) => [t.name, t] as const));
  const seen = new Set<string>();
  return calls.map((call): PlannedCall => {
    if (seen.has(call.id)) {
      return { kind: 'reject', call, arguments: call.arguments, reason: `Duplicate tool call id "${call.id}" in one step.` };
    }
    seen.add(call.id);
    const tool = byName.get(call.name);
    if (!tool) {
      const names = visible.map((t) => t.name).slice(0, 50).join(', ');
      return {
        kind: 'reject',
        call,
        arguments: call.arguments,
        reason: `Unknown tool "${call.name}". Available tools: ${names || '(none)'}.`,
      };
    }
    const parsed = parseArguments(call.arguments);
    if (!parsed.ok) return { kind: 'reject', call, tool, arguments: call.arguments, reason: parsed.reason };
    return { kind: 'call', call, tool, arguments: parsed.value };
  });
}

export function parseArguments(
  raw: string,
): { ok: true; value: Record<string, unknown> } | { ok: false; reason: string } {
  const text = raw.trim() === '' ? '{}' : raw;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, reason: `Tool arguments are not valid JSON: ${truncate(raw, 200)}` };
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return { ok: false, reason: 'Tool arguments must be a JSON object.' };
  }
  return { ok: true, value: value as Record<string, unknown> };
}

const truncationNote = (rest: number) => `\n[truncated: ${rest} more characters]`;

export function truncate(text: string, max: number): string {
  if (text.length <= max) return text;
  return `${text.slice(0, max)}${truncationNote(text.length - max)}`;
}

/** As truncate, but the result, note included, has at most `limit` characters (so truncate(…, limit) leaves it alone). */
export function truncateWithin(text: string, limit: number): string {
  if (text.length <= limit) return text;
  let keep = limit;
  while (keep > 0 && keep + truncationNote(text.length - keep).length > limit) keep--;
  return `${text.slice(0, keep)}${truncationNote(text.length - keep)}`;
}

export interface ContextPiece {
  kind: 'resource' | 'prompt';
  server: string;
  /** Resource URI or prompt name. */
  ref: string;
  text: string;
}

/** First messages of a turn: system prompt, gathered context, server availability, history, the user. */
export function buildInitialMessages(args: {
  systemPrompt?: string;
  context: readonly ContextPiece[];
  unavailableServers: readonly { server: string; error?: string }[];
  history: readonly ChatMessage[];
  userText: string;
}): ChatMessage[] {
  const messages: ChatMessage[] = [];
  if (args.systemPrompt) messages.push({ role: 'system', content: args.systemPrompt });
  for (const piece of args.context) {
    const label = piece.kind === 'resource' ? `Resource ${piece.ref} from ${piece.server}` : `Prompt ${piece.ref} from ${piece.server}`;
    messages.push({ role: 'system', content: `${label}:\n${piece.text}` });
  }
  if (args.unavailableServers.length > 0) {
    const list = args.unavailableServers.map((s) => s.server).join(', ');
    messages.push({
      role: 'system',
      content: `These tool servers are currently unavailable; their tools cannot be used in this turn: ${list}. Tell the user if their request needs them.`,
    });
  }
  messages.push(...args.history);
  messages.push({ role: 'user', content: args.userText });
  return messages;
}
