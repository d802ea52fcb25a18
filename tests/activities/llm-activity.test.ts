import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import pino from 'pino';
import { createActivities } from '../../src/activities';
import { createLlmClient, type LlmClient } from '../../src/llm/client';
import { type DemoModelHandle, startDemoModel } from '../../src/demo-model/server';
import type { LivePublisher } from '../../src/live/publisher';
import type { McpServerHub } from '../../src/mcp/pool';
import type { LlmRequest, LlmResponse } from '../../src/shared/turn';
import { clientFor, PROVIDER_ROWS, providerCase, sentTo } from '../helpers/providers';

/** The LLM activity with each provider's real SDK against the demo model's stand-in for it, over HTTP. */
let model: DemoModelHandle;
const SECRET = 'sk-test-very-secret-key-123';

beforeAll(async () => {
  model = await startDemoModel({
    apiKey: SECRET,
    rules: {
      scripts: [
        { name: 'tools', match: 'use tools', steps: [{ toolCalls: [{ name: 'a__b', arguments: { x: 1 } }, { name: 'c__d', arguments: {} }] }, { text: 'final {{result.0}}' }] },
        { name: 'long', match: 'long answer', steps: [{ text: 'word '.repeat(200).trim() }] },
        { name: 'slow', match: 'slow answer', steps: [{ text: 'one two three four five six' }] },
      ],
    },
  });
});
afterAll(async () => {
  await model.close();
});
beforeEach(() => model.setFaults([]));

/** Live text as the activity hands it to watching clients. */
function liveRecorder(onDelta?: (text: string) => void) {
  const deltas: string[] = [];
  const notices: string[] = [];
  const live = {
    delta: (_t: string, _s: number, _a: number, text: string) => {
      deltas.push(text);
      onDelta?.(text);
    },
    end: () => undefined,
    notice: (_t: string, _s: number, _a: number, message: string) => void notices.push(message),
  } as unknown as LivePublisher;
  return { live, deltas, notices };
}

function activities(llm: LlmClient, extra: { live?: LivePublisher; models?: Map<string, LlmClient> } = {}) {
  return createActivities({
    hub: {} as unknown as McpServerHub,
    llm,
    validator: { validate: () => ({ ok: true }) },
    logger: pino({ level: 'silent' }),
    secrets: [SECRET],
    ...extra,
  });
}

const req = (text: string): LlmRequest => ({
  turnId: 'turn-t-1',
  step: 1,
  messages: [{ role: 'user', content: text }],
  tools: [{ name: 'a__b', parameters: { type: 'object' } }, { name: 'c__d', parameters: { type: 'object' } }],
});

describe.each(PROVIDER_ROWS)('the LLM activity on %s', (_name, provider) => {
  const llm = () => clientFor(provider, model, SECRET);

  test('streams a text answer live, reports usage and which provider and model answered', async () => {
    const { live, deltas } = liveRecorder();
    const res = (await new MockActivityEnvironment().run(activities(llm(), { live }).callLlm, req('long answer'))) as LlmResponse;
    expect(res.text).toBe('word '.repeat(200).trim());
    expect(res.toolCalls).toEqual([]);
    expect(res.finishReason).toBe('stop');
    expect(res.provider).toBe(provider.provider);
    expect(res.model).toBe('demo-model');
    expect(res.usage?.promptTokens).toBeGreaterThan(0);
    expect(res.usage?.completionTokens).toBeGreaterThan(0);
    // Live text came in many deltas that add up to the answer.
    expect(deltas.length).toBeGreaterThan(10);
    expect(deltas.join('')).toBe(res.text);
  });

  test('no heartbeat in the first second of a stream: a quick answer completes without one; a stream that goes on beats as it goes', async () => {
    const quick = new MockActivityEnvironment();
    const quickBeats: number[] = [];
    quick.on('heartbeat', () => void quickBeats.push(Date.now()));
    const acts = activities(llm());
    const quickStart = Date.now();
    await quick.run(acts.callLlm, req('slow answer'));
    // Its completion need not wait for a heartbeat's round trip (the worker's core holds it until
    // then): no beat in its first second, so none at all for an answer that took less (only a machine
    // this busy makes it take more).
    for (const t of quickBeats) expect(t - quickStart).toBeGreaterThanOrEqual(1_000);
    // The same six words 400 ms apart: 2.4 s of stream.
    model.setFaults([{ chunkDelayMs: 400 }]);
    const slow = new MockActivityEnvironment();
    const slowBeats: number[] = [];
    slow.on('heartbeat', () => void slowBeats.push(Date.now()));
    const started = Date.now();
    const res = (await slow.run(acts.callLlm, req('slow answer'))) as LlmResponse;
    expect(res.text).toBe('one two three four five six');
    expect(slowBeats.length).toBeGreaterThanOrEqual(1);
    expect((slowBeats[0] ?? 0) - started).toBeGreaterThanOrEqual(1_000);
  });

  test('assembles streamed parallel tool calls; the results go back', async () => {
    const env = new MockActivityEnvironment();
    const acts = activities(llm());
    const res = (await env.run(acts.callLlm, req('use tools'))) as LlmResponse;
    expect(res.text).toBeNull();
    expect(res.toolCalls.map((c) => [c.name, JSON.parse(c.arguments)])).toEqual([
      ['a__b', { x: 1 }],
      ['c__d', {}],
    ]);
    expect(new Set(res.toolCalls.map((c) => c.id)).size).toBe(2);
    expect(res.finishReason).toBe('tool_calls');
    // Both results in the next step: the stand-in's script reads the first.
    const next: LlmRequest = {
      ...req('use tools'),
      step: 2,
      messages: [
        { role: 'user', content: 'use tools' },
        { role: 'assistant', content: null, toolCalls: res.toolCalls },
        { role: 'tool', toolCallId: res.toolCalls[0]?.id ?? '', content: 'result of b' },
        { role: 'tool', toolCallId: res.toolCalls[1]?.id ?? '', content: 'result of d' },
      ],
    };
    const final = (await env.run(acts.callLlm, next)) as LlmResponse;
    expect(final.text).toBe('final result of b');
    expect(sentTo(provider, model).at(-1)?.body).toMatchObject(provider.provider === 'gemini' ? {} : { model: 'demo-model', stream: true });
  });

  test('429 → retryable failure carrying retry-after as nextRetryDelay, and a notice to watching clients', async () => {
    model.setFaults([{ status: 429, retryAfter: 2, times: 1 }]);
    const { live, notices } = liveRecorder();
    const err = await new MockActivityEnvironment().run(activities(llm(), { live }).callLlm, req('long answer')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApplicationFailure);
    const f = err as ApplicationFailure;
    expect(f.nonRetryable).toBe(false);
    expect(f.type).toBe('LlmUnavailable');
    expect(f.nextRetryDelay).toBe(2000);
    expect(notices).toHaveLength(1);
    // The retry (the next attempt) answers.
    const res = (await new MockActivityEnvironment().run(activities(llm()).callLlm, req('long answer'))) as LlmResponse;
    expect(res.text).toMatch(/^word/);
  });

  test(`overloaded (HTTP ${provider.overloaded}) → retryable`, async () => {
    model.setFaults([{ status: provider.overloaded, times: 1 }]);
    const err = (await new MockActivityEnvironment().run(activities(llm()).callLlm, req('long answer')).catch((e: unknown) => e)) as ApplicationFailure;
    expect(err.nonRetryable).toBe(false);
    expect(err.type).toBe('LlmUnavailable');
    expect(err.message).toMatch(new RegExp(`^HTTP ${provider.overloaded}`));
  });

  test('a refused key → non-retryable LlmRequestRejected without the key in the message', async () => {
    const wrong = createLlmClient({ provider: provider.provider, baseUrl: provider.baseUrl(model), model: 'demo-model', apiKey: `${SECRET}-wrong`, timeoutMs: 5_000 });
    const acts = createActivities({ hub: {} as unknown as McpServerHub, llm: wrong, validator: { validate: () => ({ ok: true }) }, logger: pino({ level: 'silent' }), secrets: [`${SECRET}-wrong`] });
    const err = (await new MockActivityEnvironment().run(acts.callLlm, req('long answer')).catch((e: unknown) => e)) as ApplicationFailure;
    expect(err.nonRetryable).toBe(true);
    expect(err.type).toBe('LlmRequestRejected');
    expect(err.message).toMatch(/^HTTP 401/);
    expect(err.message).not.toContain(SECRET);
  });

  test('a conversation too long for the model → a final, clear answer', async () => {
    model.setFaults([{ status: 400, message: 'prompt is too long: 210000 tokens > 200000 maximum', times: 1 }]);
    const err = (await new MockActivityEnvironment().run(activities(llm()).callLlm, req('long answer')).catch((e: unknown) => e)) as ApplicationFailure;
    expect(err.nonRetryable).toBe(true);
    expect(err.type).toBe('LlmRequestRejected');
    expect(err.message).toMatch(/^the conversation is too long for the model's context window/);
  });

  test('a stream cut midway is retryable', async () => {
    model.setFaults([{ hangup: true, afterChunks: 3, times: 1 }]);
    const err = (await new MockActivityEnvironment().run(activities(llm()).callLlm, req('long answer')).catch((e: unknown) => e)) as ApplicationFailure;
    expect(err).toBeInstanceOf(ApplicationFailure);
    expect(err.nonRetryable).toBe(false);
  });

  test('cancelling the activity mid-stream stops the stream', async () => {
    // Slow deltas: the stream is still running when the first one arrives and the activity is cancelled.
    model.setFaults([{ chunkDelayMs: 200, times: 1 }]);
    const env = new MockActivityEnvironment();
    const { live, deltas } = liveRecorder(() => env.cancel());
    const err = await env.run(activities(llm(), { live }).callLlm, req('long answer')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CancelledFailure);
    // Far fewer than the 200 words: the rest was never read.
    expect(deltas.length).toBeGreaterThan(0);
    expect(deltas.length).toBeLessThan(50);
  });
});

test("Anthropic: the second request with the same tools and system prompt reads them from the provider's cache", async () => {
  const acts = activities(clientFor(providerCase('anthropic'), model, SECRET));
  const cached: LlmRequest = { ...req('long answer'), messages: [{ role: 'system', content: `cache test ${Date.now()}` }, { role: 'user', content: 'long answer' }] };
  const first = (await new MockActivityEnvironment().run(acts.callLlm, cached)) as LlmResponse;
  const second = (await new MockActivityEnvironment().run(acts.callLlm, { ...cached, step: 2 })) as LlmResponse;
  expect(first.usage?.cacheWriteTokens).toBeGreaterThan(0);
  expect(first.usage?.cachedTokens).toBeUndefined();
  expect(second.usage?.cachedTokens).toBe(first.usage?.cacheWriteTokens);
  // Cached tokens are prompt tokens too.
  expect(second.usage?.promptTokens).toBe(first.usage?.promptTokens);
});

test('an unreachable endpoint is retryable', async () => {
  const llm = createLlmClient({ baseUrl: 'http://127.0.0.1:9/v1', model: 'm', apiKey: 'k', timeoutMs: 2_000 });
  const err = (await new MockActivityEnvironment().run(activities(llm).callLlm, req('x')).catch((e: unknown) => e)) as ApplicationFailure;
  expect(err.nonRetryable).toBe(false);
  expect(err.message).toMatch(/cannot reach the model endpoint/);
});

test('cancelling the activity aborts the LLM request before it answers', async () => {
  model.setFaults([{ delayMs: 5_000, times: 1 }]);
  const env = new MockActivityEnvironment();
  const started = Date.now();
  const p = env.run(activities(clientFor(providerCase('openai'), model, SECRET)).callLlm, req('long answer')).catch((e: unknown) => e);
  // Cancelled once the request reached the model.
  const reached = () => model.requests().some((r) => r.at >= started);
  while (!reached()) await new Promise((r) => setImmediate(r));
  env.cancel();
  expect(await p).toBeInstanceOf(CancelledFailure);
});

test('a request naming a configured model goes to it; an unknown name is final', async () => {
  const byName = new Map([['claude', clientFor(providerCase('anthropic'), model, SECRET)]]);
  const acts = activities(clientFor(providerCase('openai'), model, SECRET), { models: byName });
  const res = (await new MockActivityEnvironment().run(acts.callLlm, { ...req('long answer'), model: 'claude' })) as LlmResponse;
  expect(res.provider).toBe('anthropic');
  expect(model.requests().at(-1)?.path).toBe('/v1/messages');
  const err = (await new MockActivityEnvironment().run(acts.callLlm, { ...req('long answer'), model: 'gpt-9' }).catch((e: unknown) => e)) as ApplicationFailure;
  expect(err.nonRetryable).toBe(true);
  expect(err.message).toBe('no model named "gpt-9" in the host config\'s models (configured: claude)');
});

test('tools offered by name are resolved from the worker catalog, listed again for an unknown name; gone ones are left out', async () => {
  const tool = (name: string, server: string) => ({ name, server, tool: name.split('__')[1] ?? name, description: `does ${name}`, inputSchema: { type: 'object', properties: { q: { type: 'string' } } } });
  let catalog = { tools: [tool('a__b', 'a')], servers: [] };
  let listed = 0;
  const hub = { catalog: async () => (listed++, catalog) } as unknown as McpServerHub;
  const acts = createActivities({
    hub,
    llm: createLlmClient({ baseUrl: model.url, model: 'demo-model', apiKey: SECRET, timeoutMs: 5_000 }),
    validator: { validate: () => ({ ok: true }) },
    logger: pino({ level: 'silent' }),
    secrets: [SECRET],
  });
  const env = new MockActivityEnvironment();
  await env.run(acts.listToolRefs);
  expect(listed).toBe(1);
  await env.run(acts.callLlm, { ...req('long answer'), tools: [], toolNames: ['a__b'] });
  const sent = (model.requests().at(-1)?.body as { tools?: Array<{ function: { name: string; description: string; parameters: unknown } }> }).tools;
  expect(sent?.map((t) => t.function)).toEqual([{ name: 'a__b', description: '[a] does a__b', parameters: { type: 'object', properties: { q: { type: 'string' } } } }]);
  // Resolved from what the worker listed: no second listing.
  expect(listed).toBe(1);

  // A name this worker has not seen: it lists again; a tool no server offers any more is left out.
  catalog = { tools: [tool('a__b', 'a'), tool('c__d', 'c')], servers: [] };
  await env.run(acts.callLlm, { ...req('long answer'), tools: [], toolNames: ['c__d', 'gone__x'] });
  expect(listed).toBe(2);
  const again = (model.requests().at(-1)?.body as { tools?: Array<{ function: { name: string } }> }).tools;
  expect(again?.map((t) => t.function.name)).toEqual(['c__d']);
});
