import type { LlmClient } from '../../src/llm/client';
import { SamplingRefused, SamplingSession } from '../../src/mcp/sampling';
import type { LlmRequest } from '../../src/shared/turn';

/** A model that answers "ok" and reports 30 tokens per request. */
function fakeLlm(seen: LlmRequest[]): LlmClient {
  return {
    model: 'fake-model',
    complete: (req) => {
      seen.push(req);
      return Promise.resolve({ text: 'ok', toolCalls: [], finishReason: 'stop', usage: { promptTokens: 20, completionTokens: 10 } });
    },
  };
}

const params = (maxTokens: number) => ({
  messages: [{ role: 'user' as const, content: { type: 'text' as const, text: 'hello' } }, { role: 'assistant' as const, content: { type: 'image' as const, data: 'AAAA', mimeType: 'image/png' } }],
  systemPrompt: 'be brief',
  maxTokens,
});

test('a request goes to the model with the smallest of the asked, allowed and remaining tokens; usage counts against the budget', async () => {
  const seen: LlmRequest[] = [];
  const audited: unknown[] = [];
  const session = new SamplingSession(fakeLlm(seen), { maxTokens: 50, budgetTokens: 70 }, 'turn-1', async (r) => void audited.push(r));
  const result = await session.sample(params(500), new AbortController().signal);
  expect(result).toEqual({ role: 'assistant', content: { type: 'text', text: 'ok' }, model: 'fake-model', stopReason: 'endTurn' });
  expect(seen[0]?.maxTokens).toBe(50);
  expect(seen[0]?.messages).toEqual([
    { role: 'system', content: 'be brief' },
    { role: 'user', content: 'hello' },
    { role: 'assistant', content: '[image omitted]' },
  ]);
  expect(seen[0]?.tools).toEqual([]);
  await session.sample(params(500), new AbortController().signal);
  expect(seen[1]?.maxTokens).toBe(40); // 70 - 30 left
  expect(session.used).toBe(60);
  await session.sample(params(500), new AbortController().signal); // 10 left: still allowed, clamped
  expect(seen[2]?.maxTokens).toBe(10);
  await expect(session.sample(params(5), new AbortController().signal)).rejects.toBeInstanceOf(SamplingRefused);
  expect(audited).toEqual([{ tokens: 30 }, { tokens: 30 }, { tokens: 30 }, { refused: "the turn's sampling budget is spent" }]);
});

test('without an allowance every request is refused, and the refusal is audited', async () => {
  const audited: unknown[] = [];
  const session = new SamplingSession(fakeLlm([]), undefined, 'turn-1', async (r) => void audited.push(r));
  await expect(session.sample(params(10), new AbortController().signal)).rejects.toThrow('does not let this server use its model');
  expect(audited).toHaveLength(1);
});
