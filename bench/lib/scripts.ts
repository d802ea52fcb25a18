/**
 * Demo-model scripts for the benchmark. Every tool step calls `notes__add_note` (our stdio server) and
 * `everything__echo` (server-everything over stdio) in parallel, like the "remember that" example, so
 * each step costs one LLM round trip plus two parallel MCP calls on two servers. A script with N tool
 * steps makes N + 1 LLM calls (the last one answers in text).
 */
import type { DemoRules } from '../../src/demo-model/rules';

/** Tool-step counts the latency section measures. */
export const STEP_COUNTS = [1, 4] as const;

export function benchMessage(toolSteps: number, tag: string): string {
  return `bench${toolSteps} ${tag}`;
}

function script(toolSteps: number): NonNullable<DemoRules['scripts']>[number] {
  const toolStep = (i: number) => ({
    toolCalls: [
      { name: 'notes__add_note', arguments: { text: `{{match.1}} step ${i}` } },
      { name: 'everything__echo', arguments: { message: `{{match.1}} step ${i}` } },
    ],
  });
  return {
    name: `bench-${toolSteps}`,
    match: `^bench${toolSteps} (\\S+)$`,
    steps: [
      ...Array.from({ length: toolSteps }, (_, i) => toolStep(i + 1)),
      { text: 'Done: {{tool:notes__add_note}} | {{tool:everything__echo}}' },
    ],
  };
}

/** A 1-step turn whose tools are all read-only: two parallel `everything__echo` calls (local activities). */
export function readOnlyMessage(tag: string): string {
  return `benchro ${tag}`;
}

const READ_ONLY_SCRIPT: NonNullable<DemoRules['scripts']>[number] = {
  name: 'bench-read-only',
  match: '^benchro (\\S+)$',
  steps: [
    {
      toolCalls: [
        { name: 'everything__echo', arguments: { message: '{{match.1}} a' } },
        { name: 'everything__echo', arguments: { message: '{{match.1}} b' } },
      ],
    },
    { text: 'Done: {{tool:everything__echo}}' },
  ],
};

/** Fixed text answers for the streaming section (no tool step: catalog, then one streamed LLM call). */
export const STREAM_REPLIES = {
  /** 20 characters. */
  short: 'The answer is: fine.',
  /** 3,000 characters of words (about 400 streamed chunks of one word each). */
  long: Array.from({ length: 600 }, (_, i) => `word${i}`)
    .join(' ')
    .slice(0, 3_000),
} as const;
export type StreamReply = keyof typeof STREAM_REPLIES;

export function streamMessage(reply: StreamReply, tag: string): string {
  return `stream${reply} ${tag}`;
}

export function benchRules(): DemoRules {
  return {
    model: 'demo-model',
    fallback: '(bench) no script for that message',
    scripts: [
      ...STEP_COUNTS.map(script),
      READ_ONLY_SCRIPT,
      ...(Object.keys(STREAM_REPLIES) as StreamReply[]).map((reply) => ({
        name: `stream-${reply}`,
        match: `^stream${reply} (\\S+)$`,
        steps: [{ text: STREAM_REPLIES[reply] }],
      })),
    ],
  };
}
