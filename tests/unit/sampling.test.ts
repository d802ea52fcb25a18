import type { LlmClient } from '../../src/llm/client';
import { SamplingRefused, SamplingSession } from '../../src/mcp/sampling';
import { ElicitationSession } from '../../src/mcp/elicitation';
import type { LlmRequest } from '../../src/shared/turn';

/** A model that answers "ok" and reports 30 tokens per request. */
function fakeLlm(seen: LlmRequest[]): LlmClient {
  return {
    provider: 'openai',
    model: 'fake-model',
    endpoint: 'http://fake.invalid',
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

describe('with approval (policy sampling.approval)', () => {
  const allowance = { maxTokens: 50, budgetTokens: 500, approval: true };
  const question = 'everything asks to use the model (up to 50 tokens) for: hello';

  test('an unasked request records the question and aborts the call; nothing reaches the model', async () => {
    const seen: LlmRequest[] = [];
    const audited: unknown[] = [];
    const questions = new ElicitationSession();
    const session = new SamplingSession(fakeLlm(seen), allowance, 'turn-1', async (r) => void audited.push(r), { server: 'everything', session: questions });
    await expect(session.sample(params(500), new AbortController().signal)).rejects.toBeInstanceOf(SamplingRefused);
    expect(questions.asked).toEqual({ mode: 'sampling', message: question, requestedSchema: { type: 'object', properties: {} } });
    expect(questions.signal.aborted).toBe(true);
    expect(seen).toHaveLength(0);
    // Audited once the user has answered, not while asking.
    expect(audited).toHaveLength(0);
  });

  test("the user's yes on the re-issued call lets the request through; a no refuses it, audited", async () => {
    const seen: LlmRequest[] = [];
    const audited: unknown[] = [];
    const allowed = new SamplingSession(fakeLlm(seen), allowance, 'turn-1', async (r) => void audited.push(r), {
      server: 'everything',
      session: new ElicitationSession([{ mode: 'sampling', message: question, action: 'accept' }]),
    });
    await expect(allowed.sample(params(500), new AbortController().signal)).resolves.toMatchObject({ content: { text: 'ok' } });
    expect(seen).toHaveLength(1);
    const refused = new SamplingSession(fakeLlm(seen), allowance, 'turn-1', async (r) => void audited.push(r), {
      server: 'everything',
      session: new ElicitationSession([{ mode: 'sampling', message: question, action: 'decline' }]),
    });
    await expect(refused.sample(params(500), new AbortController().signal)).rejects.toThrow('the user did not allow this request (decline)');
    expect(seen).toHaveLength(1);
    expect(audited).toEqual([{ tokens: 30 }, { refused: 'the user did not allow this request (decline)' }]);
  });
});
