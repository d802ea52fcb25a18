/**
 * The worker's side of tool search (docs/decisions/0032): which tools an LLM step offers, what a
 * search the model asked for found (written into the call's arguments, so the turn's history keeps
 * it), the host tool's answer, and the callers' tool use that ranks the first set.
 *
 * Policy decides what search can return: it searches only the step's `toolNames`, which the turn
 * workflow filtered by the caller's policy; the host tool renders only what that search wrote.
 */
import { parseArguments, toLlmTools } from '../core/host-loop';
import {
  DEFAULT_TOOL_SEARCH,
  firstSet,
  foundOf,
  HOST_SERVER,
  offeredTools,
  SEARCH_TOOL_REF,
  SEARCH_TOOL_SPEC,
  searchTools,
  type ToolSearchSettings,
} from '../core/tool-search';
import type { CatalogTool, ToolOutcome } from '../shared/tool-types';
import type { LlmRequest, LlmResponse, LlmToolSpec } from '../shared/turn';
import type { UserContext } from '../shared/user';

/** Callers whose tool use the worker remembers; the least recently active goes first. */
const MAX_CALLERS = 10_000;
/** Turns whose first set the worker keeps, so a turn's prefix stays the same while its caller's use changes. */
const MAX_TURNS = 2_000;

type Caller = Pick<UserContext, 'id' | 'tenant'>;
const callerKey = (c: Caller) => `${c.tenant}\u0000${c.id}`;

/** A map that forgets its oldest entry past `max` (insertion order, refreshed on write). */
function remember<V>(map: Map<string, V>, key: string, value: V, max: number): V {
  map.delete(key);
  map.set(key, value);
  if (map.size > max) map.delete(map.keys().next().value as string);
  return value;
}

export function createToolSearch(settings: () => ToolSearchSettings = () => DEFAULT_TOOL_SEARCH) {
  /** Successful calls per caller and tool name, since this worker started. */
  const uses = new Map<string, Map<string, number>>();
  const firstSets = new Map<string, string[]>();

  return {
    settings,

    /** Counts one successful call of `name` by `user` (host tools are not counted). */
    recordUse(user: Caller | undefined, name: string, server: string): void {
      if (!user || server === HOST_SERVER) return;
      const key = callerKey(user);
      const counts = remember(uses, key, uses.get(key) ?? new Map<string, number>(), MAX_CALLERS);
      counts.set(name, (counts.get(name) ?? 0) + 1);
    },

    /**
     * The tool specs one LLM step offers, resolved from the catalog (`byName`; a name whose tool is
     * gone is left out), and whether the search tool is among them.
     */
    offer(req: LlmRequest, byName: ReadonlyMap<string, CatalogTool>): { specs: LlmToolSpec[]; searching: boolean } {
      const names = req.toolNames ?? [];
      const s = settings();
      const first = (candidates: readonly string[]) => {
        const kept = firstSets.get(req.turnId);
        if (kept) return kept.filter((n) => candidates.includes(n));
        const counts = req.caller ? uses.get(callerKey(req.caller)) : undefined;
        return remember(firstSets, req.turnId, firstSet(candidates, counts ?? new Map(), s.offered), MAX_TURNS);
      };
      const { names: offered, searching } = offeredTools({ visible: names, settings: s, first, messages: req.messages });
      const specs = offered.flatMap((n) => (n === SEARCH_TOOL_REF.name ? [SEARCH_TOOL_SPEC] : (byName.get(n) ?? [])));
      return { specs: toLlmTools(specs), searching };
    },

    /**
     * The model's search calls with what they found among the step's visible tools, as `found` in their
     * arguments (whatever the model put there is replaced). The turn records this response, so later
     * steps and the host tool read the same list on every worker.
     */
    withFound(response: LlmResponse, req: LlmRequest, byName: ReadonlyMap<string, CatalogTool>): LlmResponse {
      if (!response.toolCalls.some((c) => c.name === SEARCH_TOOL_REF.name)) return response;
      const visible = (req.toolNames ?? []).flatMap((n) => (n === SEARCH_TOOL_REF.name ? [] : (byName.get(n) ?? [])));
      const toolCalls = response.toolCalls.map((call) => {
        if (call.name !== SEARCH_TOOL_REF.name) return call;
        const parsed = parseArguments(call.arguments);
        if (!parsed.ok) return call;
        const args = parsed.value;
        const query = typeof args['query'] === 'string' ? args['query'] : '';
        const found = searchTools(query, visible, settings().results).map((t) => t.name);
        return { ...call, arguments: JSON.stringify({ ...args, found }) };
      });
      return { ...response, toolCalls };
    },

    /** The host's search tool: the tools its call found, described for the model. */
    answer(tool: string, args: Record<string, unknown>, byName: ReadonlyMap<string, CatalogTool>): ToolOutcome {
      if (tool !== SEARCH_TOOL_REF.tool) return { isError: true, text: `The host has no tool ${tool}.` };
      const found = foundOf(args).flatMap((n) => byName.get(n) ?? []);
      const query = typeof args['query'] === 'string' ? args['query'] : '';
      if (found.length === 0) return { isError: false, text: `No tool matches "${query}". Try other words, or fewer.`, structuredContent: { tools: [] } };
      const lines = toLlmTools(found).map((t) => `- ${t.name}: ${t.description ?? ''}`);
      return {
        isError: false,
        text: `${found.length} tool${found.length > 1 ? 's' : ''} for "${query}", callable from now on:\n${lines.join('\n')}`,
        structuredContent: { tools: found.map((t) => ({ name: t.name, server: t.server, tool: t.tool })) },
      };
    },
  };
}

export type ToolSearch = ReturnType<typeof createToolSearch>;
