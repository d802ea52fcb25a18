/**
 * What the context section compares (bench/sections/context.ts, issue 28 §2): the five seed patterns,
 * the three strategies and the context each gives a turn, and how answers and prompt tokens are
 * compared. No I/O beyond reading examples/host.json; the rig (./context-rig.ts) runs the turns.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { HostConfigSchema } from '../../src/config/host-schema';
import { contextFor } from '../../src/core/intents';
import type { ContextSpec } from '../../src/shared/turn';
import { ROOT } from '../../tests/helpers/system';

export const STRATEGIES = ['role', 'intent', 'adaptive'] as const;
export type Strategy = (typeof STRATEGIES)[number];

/** The five seed patterns (tests/tools/capture-school-groups.ts), each by the role that sends it there. */
export const PATTERNS: ReadonlyArray<{ name: string; text: string; as: 'admin' | 'teacher' }> = [
  { name: '1 simple query', text: 'How many students do we have?', as: 'admin' },
  { name: '2 single tool', text: 'Add a teacher named Alice Johnson', as: 'admin' },
  { name: '3 multi-server', text: "Process payment for student Bob's invoice", as: 'admin' },
  { name: '4 fan-out', text: 'Give me a full system status report', as: 'admin' },
  { name: '5 delegation', text: 'Assign homework Essay on Hamlet to English 101 due 2026-12-01', as: 'teacher' },
];

/** What an operator would map the school's requests to (no role rule beside them: intent alone). */
export const HOST = HostConfigSchema.parse({
  ...(JSON.parse(readFileSync(path.join(ROOT, 'examples/host.json'), 'utf8')) as object),
  intents: [
    { name: 'counts', match: '\\bhow many\\b', resources: [{ server: 'admin', uri: 'admin://system_status' }], prompts: [] },
    {
      name: 'status-report',
      match: '\\bstatus\\b',
      resources: [{ server: 'admin', uri: 'admin://system_status' }, { server: 'payments', uri: 'payments://revenue_summary' }, { server: 'admin', uri: 'admin://classes' }],
      prompts: [],
    },
    { name: 'payments', match: '\\b(payment|invoice|refund)', resources: [{ server: 'payments', uri: 'payments://revenue_summary' }], prompts: [] },
    { name: 'homework', match: '\\bhomework\\b', resources: [{ server: 'teacher', uri: 'teacher://my_classes' }], prompts: [] },
  ],
});
const NONE: ContextSpec = { resources: [], prompts: [] };

export function contextOf(strategy: Strategy, role: string, text: string): ContextSpec {
  if (strategy === 'role') return contextFor({ role, text, byRole: HOST.contextByRole, base: HOST.context, intents: [] });
  if (strategy === 'intent') return contextFor({ role, text, byRole: {}, base: NONE, intents: HOST.intents });
  return NONE;
}

/** Prompt tokens of one request the model received: its body's JSON characters / 4. */
export function promptTokens(body: unknown): number {
  return Math.ceil(JSON.stringify(body).length / 4);
}

/** An answer without what two runs of one pattern differ in by design: generated ids and timestamps. */
export function comparable(text: string): string {
  return text
    .replace(/\d{4}-\d{2}-\d{2}T[\d:.]+Z?/g, '<time>')
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi, '<uuid>')
    .replace(/\b([A-Za-z]+[_-])(?=[A-Za-z]*\d)[A-Za-z0-9]{6,}\b/g, '$1<id>');
}
