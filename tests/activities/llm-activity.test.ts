import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import pino from 'pino';
import { createActivities } from '../../src/activities';
import { createLlmClient } from '../../src/llm/client';
import { type DemoModelHandle, startDemoModel } from '../../src/demo-model/server';
import type { McpServerHub } from '../../src/mcp/pool';
import type { LlmRequest, LlmResponse } from '../../src/shared/turn';

/** The LLM activity with the real openai client against the demo model over HTTP. */
let model: DemoModelHandle;
const SECRET = 'sk-test-very-secret-key-123';

beforeAll(async () => {
  model = await startDemoModel({
    rules: {
      scripts: [
        { name: 'tools', match: 'use tools', steps: [{ toolCalls: [{ name: 'a__b', arguments: { x: 1 } }, { name: 'c__d', arguments: {} }] }, { text: 'final {{result.0}}' }] },
        { name: 'long', match: 'long answer', steps: [{ text: 'word '.repeat(200).trim() }] },
      ],
    },
  });
});
afterAll(async () => {
  await model.close();
});
beforeEach(() => model.setFaults([]));

function activities() {
  const llm = createLlmClient({ baseUrl: model.url, model: 'demo-model', apiKey: SECRET, timeoutMs: 5_000 });
  return createActivities({
    hub: {} as unknown as McpServerHub,
    llm,
    validator: { validate: () => ({ ok: true }) },
    logger: pino({ level: 'silent' }),
    secrets: [SECRET],
  });
}

const req = (text: string): LlmRequest => ({
  turnId: 'turn-t-1',
  step: 1,
  messages: [{ role: 'user', content: text }],
  tools: [{ name: 'a__b', parameters: { type: 'object' } }],
});

test('streams a text answer and reports usage', async () => {
  const env = new MockActivityEnvironment();
  const res = (await env.run(activities().callLlm, req('long answer'))) as LlmResponse;
  expect(res.text).toBe('word '.repeat(200).trim());
  expect(res.toolCalls).toEqual([]);
  expect(res.finishReason).toBe('stop');
});

test('assembles streamed parallel tool calls and heartbeats while streaming', async () => {
  const env = new MockActivityEnvironment();
  const beats: unknown[] = [];
  env.on('heartbeat', (d: unknown) => beats.push(d));
  const res = (await env.run(activities().callLlm, req('use tools'))) as LlmResponse;
  expect(res.text).toBeNull();
  expect(res.toolCalls.map((c) => [c.name, JSON.parse(c.arguments)])).toEqual([
    ['a__b', { x: 1 }],
    ['c__d', {}],
  ]);
  expect(res.toolCalls[0]?.id).toMatch(/^call_/);
  expect(res.finishReason).toBe('tool_calls');
  expect(beats.length).toBeGreaterThanOrEqual(1);
  // The key went to the endpoint, as a bearer token.
  expect(model.requests().at(-1)?.body).toMatchObject({ model: 'demo-model', stream: true });
});

test('429 → retryable failure carrying retry-after as nextRetryDelay', async () => {
  model.setFaults([{ status: 429, retryAfter: 2, times: 1 }]);
  const env = new MockActivityEnvironment();
  const err = await env.run(activities().callLlm, req('long answer')).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(ApplicationFailure);
  const f = err as ApplicationFailure;
  expect(f.nonRetryable).toBe(false);
  expect(f.type).toBe('LlmUnavailable');
  expect(f.nextRetryDelay).toBe(2000);
});

test('401 → non-retryable LlmRequestRejected without the key in the message', async () => {
  model.setFaults([{ status: 401, message: `Incorrect API key provided: ${SECRET}`, times: 1 }]);
  const env = new MockActivityEnvironment();
  const err = (await env.run(activities().callLlm, req('long answer')).catch((e: unknown) => e)) as ApplicationFailure;
  expect(err.nonRetryable).toBe(true);
  expect(err.type).toBe('LlmRequestRejected');
  expect(err.message).toMatch(/^HTTP 401/);
  expect(err.message).not.toContain(SECRET);
});

test('an unreachable endpoint is retryable', async () => {
  const llm = createLlmClient({ baseUrl: 'http://127.0.0.1:9/v1', model: 'm', apiKey: 'k', timeoutMs: 2_000 });
  const acts = createActivities({ hub: {} as unknown as McpServerHub, llm, validator: { validate: () => ({ ok: true }) }, logger: pino({ level: 'silent' }), secrets: [] });
  const err = (await new MockActivityEnvironment().run(acts.callLlm, req('x')).catch((e: unknown) => e)) as ApplicationFailure;
  expect(err.nonRetryable).toBe(false);
  expect(err.message).toMatch(/cannot reach the model endpoint/);
});

test('a stream cut midway is retryable', async () => {
  model.setFaults([{ hangup: true, afterChunks: 3, times: 1 }]);
  const err = (await new MockActivityEnvironment().run(activities().callLlm, req('long answer')).catch((e: unknown) => e)) as ApplicationFailure;
  expect(err).toBeInstanceOf(ApplicationFailure);
  expect(err.nonRetryable).toBe(false);
});

test('cancelling the activity aborts the LLM request', async () => {
  model.setFaults([{ delayMs: 5_000, times: 1 }]);
  const env = new MockActivityEnvironment();
  const started = Date.now();
  const p = env.run(activities().callLlm, req('long answer')).catch((e: unknown) => e);
  setTimeout(() => env.cancel(), 200);
  const err = await p;
  expect(Date.now() - started).toBeLessThan(3_000);
  expect(err).toBeInstanceOf(CancelledFailure);
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
