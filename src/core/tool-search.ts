/**
 * Catalogs of hundreds of tools (docs/decisions/0032): past a threshold the model is offered the
 * host's search tool, a first set of tools (the caller's most used, else the catalog's first), and
 * the tools it found or called in the turn, appended after that stable prefix so provider prompt
 * caches keep hitting. Pure: the LLM activity and the host's search tool use it; no I/O, no clocks.
 */
import type { CatalogTool, ToolRef } from '../shared/tool-types';
import type { ChatMessage } from '../shared/turn';
import { parseArguments } from './host-loop';

/** The host's own tools live under this server name, which no configured MCP server may take. */
export const HOST_SERVER = 'host';

/** The tool-search tool as the turn's catalog carries it: read-only, so it runs as a local activity. */
export const SEARCH_TOOL_REF: ToolRef = { name: 'host__search_tools', server: HOST_SERVER, tool: 'search_tools', readOnly: true };

/** The search tool as the model sees it. */
export const SEARCH_TOOL_SPEC: CatalogTool = {
  name: SEARCH_TOOL_REF.name,
  server: HOST_SERVER,
  tool: SEARCH_TOOL_REF.tool,
  description:
    'Finds tools for a task among the many this host can use, by keywords (what you want to do, the system it concerns). ' +
    'The tools it finds can be called from the next step on.',
  inputSchema: {
    type: 'object',
    properties: { query: { type: 'string', description: 'Keywords describing the task, e.g. "refund a payment".' } },
    required: ['query'],
  },
};

export interface ToolSearchSettings {
  /** More visible tools than this and the model gets the search tool and a first set instead of all. */
  threshold: number;
  /** How many tools the first set holds (most used by the caller, then catalog order). */
  offered: number;
  /** How many tools one search returns at most. */
  results: number;
}

export const DEFAULT_TOOL_SEARCH: ToolSearchSettings = { threshold: 40, offered: 20, results: 8 };

/** Words that say nothing of a tool. */
const STOP_WORDS = new Set(['the', 'an', 'and', 'or', 'of', 'for', 'to', 'in', 'on', 'at', 'by', 'with', 'from', 'is', 'are', 'it', 'its', 'this', 'that', 'my', 'me', 'our', 'we', 'you', 'please']);

/** Lower-case word stems of a text: splits names (`refund_payment`, `getInvoice`) and prose alike. */
function words(text: string): string[] {
  return text
    .replace(/([a-z])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w.length > 1 && !STOP_WORDS.has(w))
    .map(stem);
}

/** A crude stem, enough for keyword search: plurals and common verb endings fold together. */
function stem(w: string): string {
  for (const suffix of ['ing', 'ies', 'es', 's', 'ed']) {
    if (w.length > suffix.length + 2 && w.endsWith(suffix)) return suffix === 'ies' ? `${w.slice(0, -3)}y` : w.slice(0, -suffix.length);
  }
  return w;
}

/**
 * The tools best matching `query`, best first, among `tools` (the caller's visible ones: policy has
 * decided already). A word in the tool's name weighs three, in its server's name two, in its
 * description one; ties keep catalog order. Tools matching no word are not returned.
 */
export function searchTools(query: string, tools: readonly CatalogTool[], limit: number): CatalogTool[] {
  const wanted = [...new Set(words(query))];
  if (wanted.length === 0) return [];
  const scored = tools.map((t, index) => {
    const name = new Set(words(t.tool));
    const server = new Set(words(t.server));
    const description = new Set(words(t.description ?? ''));
    let score = 0;
    for (const w of wanted) score += (name.has(w) ? 3 : 0) + (server.has(w) ? 2 : 0) + (description.has(w) ? 1 : 0);
    return { t, index, score };
  });
  return scored
    .filter((s) => s.score > 0)
    .sort((a, b) => b.score - a.score || a.index - b.index)
    .slice(0, limit)
    .map((s) => s.t);
}

/** The names a search call found, as the LLM activity wrote them into its arguments (see withFound). */
export function foundOf(args: unknown): string[] {
  if (args === null || typeof args !== 'object') return [];
  const found = (args as { found?: unknown }).found;
  return Array.isArray(found) ? found.filter((n): n is string => typeof n === 'string') : [];
}

/**
 * The tools the turn has met so far, in the order it met them: those its searches found and those
 * the model called. Read from the turn's messages, so every step and every worker derives the same list.
 */
export function toolsMetInTurn(messages: readonly ChatMessage[], visible: ReadonlySet<string>): string[] {
  const met: string[] = [];
  const add = (name: string) => {
    if (visible.has(name) && !met.includes(name)) met.push(name);
  };
  // This turn's messages: those after its user message (the history before it belongs to other turns).
  const start = messages.map((m) => m.role).lastIndexOf('user') + 1;
  for (const m of messages.slice(start)) {
    if (m.role !== 'assistant' || !m.toolCalls) continue;
    for (const call of m.toolCalls) {
      if (call.name === SEARCH_TOOL_REF.name) {
        const parsed = parseArguments(call.arguments);
        if (parsed.ok) for (const name of foundOf(parsed.value)) add(name);
      } else {
        add(call.name);
      }
    }
  }
  return met;
}

/**
 * The first set: the `size` visible tools the caller used most (`uses`: calls per tool name), topped
 * up in catalog order, then listed in catalog order, so the same set gives the same prefix.
 */
export function firstSet(visible: readonly string[], uses: ReadonlyMap<string, number>, size: number): string[] {
  const position = new Map(visible.map((n, i) => [n, i] as const));
  const ranked = [...visible].sort((a, b) => (uses.get(b) ?? 0) - (uses.get(a) ?? 0) || (position.get(a) ?? 0) - (position.get(b) ?? 0));
  const chosen = new Set(ranked.slice(0, size));
  return visible.filter((n) => chosen.has(n));
}

/**
 * What one LLM step offers: all visible tools when they are few (the search tool left out), else the
 * search tool (and the host's other tools), the first set, and the tools met in the turn after them. `visible` is the step's
 * `toolNames` (the workflow filtered them by policy); the search tool is offered only if it is there.
 */
export function offeredTools(args: {
  visible: readonly string[];
  settings: ToolSearchSettings;
  first: (candidates: readonly string[]) => string[];
  messages: readonly ChatMessage[];
}): { names: string[]; searching: boolean } {
  // The host's other tools (adaptive context's) are always offered, in the prefix; they are not counted.
  const host = args.visible.filter((n) => n !== SEARCH_TOOL_REF.name && n.startsWith(`${HOST_SERVER}__`));
  const candidates = args.visible.filter((n) => n !== SEARCH_TOOL_REF.name && !host.includes(n));
  if (candidates.length <= args.settings.threshold || !args.visible.includes(SEARCH_TOOL_REF.name)) return { names: [...candidates, ...host], searching: false };
  const prefix = [SEARCH_TOOL_REF.name, ...host, ...args.first(candidates)];
  const met = toolsMetInTurn(args.messages, new Set(candidates)).filter((n) => !prefix.includes(n));
  return { names: [...prefix, ...met], searching: true };
}
