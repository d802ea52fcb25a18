/**
 * 8. Hundreds of tools (issue 28 §3, docs/decisions/0032): the 300-tool rig (12 stand-in MCP servers,
 * the real turn workflow and activities, a scripted model that searches and calls the first tool
 * found) runs its twenty requests with tool search (the default toolSearch settings) and offering
 * every tool (threshold above the catalog); per turn: LLM steps, tools offered per step and the
 * tokens of those tool lists (their JSON characters / 4), which a provider bills as prompt.
 */
import type { Policy } from '../../src/shared/policy';
import { REQUESTS, TOOL_COUNT } from '../../tests/helpers/many-tools';
import { startToolSearchRig } from '../../tests/helpers/tool-search-rig';
import { OWNER } from '../../tests/workflows/harness';
import { table } from '../lib/stats';
import { log } from '../options';

const POLICY: Policy = { roles: { member: { servers: { '*': { tools: '*' } } } }, toolScopes: {} };

interface Mode {
  turns: number;
  /** Turns whose request's own tool was called. */
  right: number;
  stepsPerTurn: number;
  toolsPerStep: number;
  tokensPerTurn: number;
}

export interface ToolSearchResult {
  tools: number;
  search: Mode;
  all: Mode;
}

export async function toolSearchSection(): Promise<ToolSearchResult> {
  log(`tool search: ${REQUESTS.length} requests over ${TOOL_COUNT} tools, with search and with every tool offered`);
  const rig = await startToolSearchRig();
  try {
    const run = async (mode: string): Promise<Mode> => {
      let right = 0;
      let steps = 0;
      let tools = 0;
      let tokens = 0;
      for (const [i, r] of REQUESTS.entries()) {
        const turn = await rig.runTurn(`bench-${mode}-${i}`, r.text, OWNER, POLICY);
        if (turn.state.toolCalls.some((c) => c.name === `${r.server}__${r.tool}` && !c.isError)) right += 1;
        steps += turn.requests.length;
        tools += turn.requests.reduce((n, q) => n + q.tools.length, 0);
        tokens += turn.tokens;
      }
      return { turns: REQUESTS.length, right, stepsPerTurn: steps / REQUESTS.length, toolsPerStep: tools / steps, tokensPerTurn: Math.round(tokens / REQUESTS.length) };
    };
    const search = await run('search');
    rig.settings.threshold = TOOL_COUNT + 1;
    const all = await run('all');
    return { tools: TOOL_COUNT, search, all };
  } finally {
    await rig.stop();
  }
}

export function renderToolSearch(r: ToolSearchResult): string {
  const row = (label: string, m: Mode) => [label, `${m.right}/${m.turns}`, m.stepsPerTurn.toFixed(1), m.toolsPerStep.toFixed(1), String(m.tokensPerTurn)];
  return [
    `8. Hundreds of tools: ${r.tools} tools over 12 stand-in servers, ${r.search.turns} requests, the scripted model; tool-list tokens are JSON characters / 4`,
    table(['offer', 'right tool called', 'LLM steps/turn', 'tools/step', 'tool tokens/turn'], [row('tool search (threshold 40, 20 offered)', r.search), row(`all ${r.tools} tools`, r.all)]),
    `Tool search offers ${(r.all.tokensPerTurn / Math.max(1, r.search.tokensPerTurn)).toFixed(1)}x fewer tool tokens per turn, for one LLM step more.`,
  ].join('\n');
}
