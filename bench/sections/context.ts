/**
 * 11. Context strategies (issue 28 §2, decisions 0032 and 0036): the five seed patterns on the school
 * servers (bench/lib/context-rig.ts: the real turn workflow and activities, the demo model over HTTP)
 * with the context chosen by role (examples/host.json), by intent (the intent rules of
 * bench/lib/context-strategies.ts, no role rule) and adaptively (no context, the host's resource tools offered: the demo model lists and reads
 * what its step needs). Per pattern and strategy: whether the answer is the role's, LLM steps, the
 * host's resource reads, and prompt tokens: every request body the model received (system, context,
 * messages and tools), its JSON characters / 4, counted the same way for all.
 */
import { startContextRig } from '../lib/context-rig';
import { comparable, PATTERNS, promptTokens, STRATEGIES, type Strategy } from '../lib/context-strategies';
import { table } from '../lib/stats';
import { log } from '../options';

export interface ContextRow {
  pattern: string;
  strategy: Strategy;
  /** Completed with the role strategy's answer (generated ids and times aside), nothing missing. */
  right: boolean;
  steps: number;
  reads: number;
  /** Prompt tokens of the turn's first model request, and of all of them. */
  firstTokens: number;
  tokens: number;
  text: string;
}

export async function contextSection(): Promise<ContextRow[]> {
  log(`context: ${PATTERNS.length} seed patterns under ${STRATEGIES.join(', ')}`);
  const rig = await startContextRig();
  const rows: ContextRow[] = [];
  try {
    for (const strategy of STRATEGIES) {
      rig.reset();
      for (const pattern of PATTERNS) {
        const { state, bodies, reads } = await rig.runTurn(strategy, pattern);
        if (state.status !== 'completed') throw new Error(`context: ${strategy} ${pattern.name}: the turn ended ${state.status}: ${JSON.stringify(state.error ?? null)}`);
        const text = state.text ?? '';
        const reference = rows.find((r) => r.strategy === 'role' && r.pattern === pattern.name)?.text ?? text;
        const right = !text.includes('<missing') && comparable(text) === comparable(reference);
        const tokens = bodies.map(promptTokens);
        rows.push({ pattern: pattern.name, strategy, right, steps: state.steps, reads, firstTokens: tokens[0] ?? 0, tokens: tokens.reduce((a, b) => a + b, 0), text });
        log(`context: ${strategy} ${pattern.name}: ${state.status}, ${state.steps} steps, ${reads} reads, ${rows.at(-1)?.tokens} tokens${right ? '' : `, NOT the role's answer: ${JSON.stringify(text.slice(0, 300))}`}`);
      }
    }
    return rows;
  } finally {
    await rig.stop();
  }
}

export function renderContext(rows: readonly ContextRow[]): string {
  const sum = (s: Strategy) => rows.filter((r) => r.strategy === s).reduce((n, r) => n + r.tokens, 0);
  return [
    '11. Context strategies: the five seed patterns on the school servers, the demo model; prompt tokens are request JSON characters / 4 (system, context, messages, tools)',
    table(
      ['pattern', 'strategy', 'role\'s answer', 'LLM steps', 'resource reads', 'tokens, 1st call', 'prompt tokens/turn'],
      rows.map((r) => [r.pattern, r.strategy, r.right ? 'yes' : 'no', String(r.steps), String(r.reads), String(r.firstTokens), String(r.tokens)]),
    ),
    `All five patterns: role ${sum('role')}, intent ${sum('intent')}, adaptive ${sum('adaptive')} prompt tokens.`,
  ].join('\n');
}
