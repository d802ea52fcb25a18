import { Writable } from 'node:stream';
import { createLogger } from '../../src/logger';
import { createWorkerMetrics } from '../../src/metrics';
import { withLogContext } from '../../src/telemetry/log-context';

const value = async (text: Promise<string>, line: string) => (await text).split('\n').find((l) => l.startsWith(`${line} `))?.split(' ').at(-1);

test('approvals pending: a wait counts until it ends or its deadline passes; an end never seen begin only counts as decided', async () => {
  const { registry, observer } = createWorkerMetrics({ circuits: () => [] });
  observer.approvalWaiting('turn-a/call-1', Date.now() + 60_000);
  observer.approvalWaiting('turn-b/call-1', Date.now() + 60_000);
  observer.approvalWaiting('turn-c/call-1', Date.now() - 1);
  expect(await value(registry.metrics(), 'dmh_approvals_pending')).toBe('2');
  observer.approvalEnded('turn-a/call-1', 'approved');
  observer.approvalEnded('turn-z/call-9', 'cancelled');
  expect(await value(registry.metrics(), 'dmh_approvals_pending')).toBe('1');
  expect(await value(registry.metrics(), 'dmh_approvals_decided_total{decision="approved"}')).toBe('1');
  expect(await value(registry.metrics(), 'dmh_approvals_decided_total{decision="cancelled"}')).toBe('1');
});

test('LLM and tool errors count by class; successes add no error', async () => {
  const { registry, observer } = createWorkerMetrics({ circuits: () => [] });
  observer.llmCall('ok', 0.1);
  observer.llmCall('retryable_error', 0.1, 'rate_limited');
  observer.toolCall('notes', 'add_note', 'tool_error', 0.01, 'invalid_arguments');
  observer.toolCall('notes', 'add_note', 'ok', 0.01);
  const text = registry.metrics();
  expect(await value(text, 'dmh_llm_errors_total{class="rate_limited"}')).toBe('1');
  expect(await value(text, 'dmh_tool_errors_total{server="notes",tool="add_note",class="invalid_arguments"}')).toBe('1');
  expect((await text).match(/^dmh_tool_errors_total\{/gm)).toHaveLength(1);
});

test('tokens and cost per provider and model, priced from the host config; cached prompt tokens apart', async () => {
  const prices = { 'claude-x': { promptPerMillion: 3, completionPerMillion: 15, currency: 'USD' } };
  const { registry, observer } = createWorkerMetrics({ circuits: () => [], prices: () => prices });
  observer.llmCall('ok', 0.1, undefined, { provider: 'anthropic', model: 'claude-x' });
  observer.llmTokens({ promptTokens: 1_000_000, completionTokens: 100_000, cachedTokens: 800_000 }, 'turn', { provider: 'anthropic', model: 'claude-x' });
  observer.llmTokens({ promptTokens: 10, completionTokens: 5 }, 'turn', { provider: 'gemini', model: 'unpriced' });
  const text = registry.metrics();
  expect(await value(text, 'dmh_llm_model_calls_total{provider="anthropic",model="claude-x",outcome="ok"}')).toBe('1');
  expect(await value(text, 'dmh_llm_model_tokens_total{provider="anthropic",model="claude-x",kind="prompt"}')).toBe('1000000');
  expect(await value(text, 'dmh_llm_model_tokens_total{provider="anthropic",model="claude-x",kind="cached"}')).toBe('800000');
  expect(await value(text, 'dmh_llm_model_tokens_total{provider="gemini",model="unpriced",kind="completion"}')).toBe('5');
  expect(await value(text, 'dmh_llm_cost_total{provider="anthropic",model="claude-x",currency="USD"}')).toBe('4.5');
  expect((await text).match(/^dmh_llm_cost_total\{/gm)).toHaveLength(1);
  // The totals across models are still there.
  expect(await value(text, 'dmh_llm_tokens_total{kind="prompt"}')).toBe('1000010');
});

test("a provider's own price wins over the model id's: the same id through two providers costs apart", async () => {
  const prices = {
    'claude-x': { promptPerMillion: 1, completionPerMillion: 1, currency: 'USD' },
    'anthropic:claude-x': { promptPerMillion: 3, completionPerMillion: 15, currency: 'USD' },
  };
  const { registry, observer } = createWorkerMetrics({ circuits: () => [], prices: () => prices });
  observer.llmTokens({ promptTokens: 1_000_000, completionTokens: 100_000 }, 'turn', { provider: 'anthropic', model: 'claude-x' });
  observer.llmTokens({ promptTokens: 1_000_000, completionTokens: 100_000 }, 'turn', { provider: 'openai', model: 'claude-x' });
  const text = registry.metrics();
  expect(await value(text, 'dmh_llm_cost_total{provider="anthropic",model="claude-x",currency="USD"}')).toBe('4.5');
  expect(await value(text, 'dmh_llm_cost_total{provider="openai",model="claude-x",currency="USD"}')).toBe('1.1');
});

test("a line logged inside an activity's log context names the turn; explicit fields win", () => {
  let out = '';
  const logger = createLogger('worker', 'info', new Writable({ write: (chunk: Buffer, _enc, done) => ((out += chunk.toString()), done()) }));
  withLogContext({ turnId: 'turn-s-1', sessionId: 's', userId: 'u-1' }, () => logger.info({ userId: 'explicit' }, 'inside'));
  logger.info('outside');
  const [inside, outside] = out.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
  expect(inside).toMatchObject({ msg: 'inside', turnId: 'turn-s-1', sessionId: 's', userId: 'explicit' });
  expect(outside).not.toHaveProperty('turnId');
});
