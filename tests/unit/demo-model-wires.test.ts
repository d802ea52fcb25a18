import { type DemoModelHandle, startDemoModel } from '../../src/demo-model/server';

/** The demo model's Anthropic and Gemini dialects on the wire, as the real APIs frame them. */
let model: DemoModelHandle;
beforeAll(async () => {
  model = await startDemoModel({
    apiKey: 'k-1',
    rules: { scripts: [{ name: 'tools', match: 'use tools', steps: [{ text: 'On it.', toolCalls: [{ name: 'a__b', arguments: { x: 1 } }, { name: 'c__d', arguments: {} }] }, { text: 'done: {{result.0}}' }] }, { name: 'context', match: 'status', steps: [{ text: 'S={{context:a://s}}' }] }] },
  });
});
afterAll(async () => model.close());
beforeEach(() => model.setFaults([]));

/** Each SSE event's name (if any) and data. */
function events(text: string): Array<{ event?: string; data: Record<string, unknown> }> {
  return text
    .split('\n\n')
    .filter((block) => block.includes('data: '))
    .map((block) => {
      const event = /^event: (.+)$/m.exec(block)?.[1];
      return { ...(event ? { event } : {}), data: JSON.parse(/^data: (.+)$/m.exec(block)?.[1] ?? '{}') as Record<string, unknown> };
    });
}

const anthropic = (body: unknown, headers: Record<string, string> = { 'x-api-key': 'k-1' }) =>
  fetch(`${model.origin}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
const gemini = (body: unknown, method = 'streamGenerateContent?alt=sse') =>
  fetch(`${model.origin}/v1beta/models/demo-model:${method}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-goog-api-key': 'k-1' }, body: JSON.stringify(body) });

test('Anthropic: message_start, text and tool_use blocks, message_delta with the stop reason, message_stop', async () => {
  const res = await anthropic({ model: 'demo-model', max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'use tools' }] });
  expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
  const evs = events(await res.text());
  expect(evs.every((e) => e.event === e.data['type'])).toBe(true);
  expect(evs[0]?.event).toBe('message_start');
  expect(evs.at(-1)?.event).toBe('message_stop');
  const starts = evs.filter((e) => e.event === 'content_block_start').map((e) => (e.data['content_block'] as { type: string }).type);
  expect(starts).toEqual(['text', 'tool_use', 'tool_use']);
  const json = evs.filter((e) => (e.data['delta'] as { type?: string } | undefined)?.type === 'input_json_delta' && e.data['index'] === 1);
  expect(JSON.parse(json.map((e) => (e.data['delta'] as { partial_json: string }).partial_json).join(''))).toEqual({ x: 1 });
  expect(evs.find((e) => e.event === 'message_delta')?.data['delta']).toEqual({ stop_reason: 'tool_use', stop_sequence: null });
});

test('Anthropic: tool results in a user message drive the next step; max_tokens is required; the key is checked; 529 is overloaded_error', async () => {
  const conversation = [
    { role: 'user', content: 'use tools' },
    { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'a__b', input: { x: 1 } }, { type: 'tool_use', id: 't2', name: 'c__d', input: {} }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: [{ type: 'text', text: 'B' }] }, { type: 'tool_result', tool_use_id: 't2', content: 'D' }] },
  ];
  const res = await anthropic({ model: 'demo-model', max_tokens: 100, messages: conversation });
  expect(await res.json()).toMatchObject({ type: 'message', content: [{ type: 'text', text: 'done: B' }], stop_reason: 'end_turn' });
  const missing = await anthropic({ model: 'demo-model', messages: conversation });
  expect(missing.status).toBe(400);
  expect(await missing.json()).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', message: expect.stringMatching(/max_tokens/) } });
  expect((await anthropic({ model: 'demo-model', max_tokens: 1, messages: conversation }, { 'x-api-key': 'wrong' })).status).toBe(401);
  model.setFaults([{ status: 529 }]);
  const overloaded = await anthropic({ model: 'demo-model', max_tokens: 1, messages: conversation });
  expect(overloaded.status).toBe(529);
  expect(await overloaded.json()).toMatchObject({ type: 'error', error: { type: 'overloaded_error' } });
  // Recorded without the key.
  expect(model.requests().at(-1)?.headers['x-api-key']).toBe('[redacted]');
});

test('Gemini: data-only SSE, text chunks, then the parallel function calls and usage in the last chunk', async () => {
  const res = await gemini({ contents: [{ role: 'user', parts: [{ text: 'use tools' }] }] });
  const evs = events(await res.text());
  expect(evs.every((e) => e.event === undefined)).toBe(true);
  const last = evs.at(-1)?.data as { candidates: Array<{ content: { parts: unknown[] }; finishReason: string }>; usageMetadata: { promptTokenCount: number } };
  expect(last.candidates[0]?.content.parts).toEqual([{ functionCall: { name: 'a__b', args: { x: 1 } } }, { functionCall: { name: 'c__d', args: {} } }]);
  expect(last.candidates[0]?.finishReason).toBe('STOP');
  expect(last.usageMetadata.promptTokenCount).toBeGreaterThan(0);
  const text = evs.slice(0, -1).map((e) => ((e.data as { candidates: Array<{ content: { parts: Array<{ text: string }> } }> }).candidates[0]?.content.parts[0]?.text ?? '')).join('');
  expect(text).toBe('On it.');
});

test('Gemini: function responses drive the next step; 429 carries RetryInfo', async () => {
  const contents = [
    { role: 'user', parts: [{ text: 'use tools' }] },
    { role: 'model', parts: [{ functionCall: { name: 'a__b', args: { x: 1 } } }, { functionCall: { name: 'c__d', args: {} } }] },
    { role: 'user', parts: [{ functionResponse: { name: 'a__b', response: { output: 'B' } } }, { functionResponse: { name: 'c__d', response: { output: 'D' } } }] },
  ];
  const res = await gemini({ contents }, 'generateContent');
  expect(await res.json()).toMatchObject({ candidates: [{ content: { role: 'model', parts: [{ text: 'done: B' }] }, finishReason: 'STOP' }] });
  model.setFaults([{ status: 429, retryAfter: 7 }]);
  const limited = await gemini({ contents });
  expect(limited.status).toBe(429);
  expect(await limited.json()).toEqual({
    error: { code: 429, message: 'demo model: injected fault (HTTP 429)', status: 'RESOURCE_EXHAUSTED', details: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '7s' }] },
  });
});

test('each dialect tells the rule engine which tools it offers: offered host__read_resource, a step missing its context lists first', async () => {
  const names = ['host__list_resources', 'host__read_resource'];
  const user = { role: 'user', content: 'status' };
  const openai = async (tools?: unknown[]) =>
    (await (
      await fetch(`${model.url}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer k-1' }, body: JSON.stringify({ model: 'demo-model', messages: [user], ...(tools ? { tools } : {}) }) })
    ).json()) as { choices: Array<{ message: { content: string | null; tool_calls?: Array<{ function: { name: string } }> } }> };
  const offered = await openai(names.map((name) => ({ type: 'function', function: { name, parameters: { type: 'object' } } })));
  expect(offered.choices[0]?.message.tool_calls?.map((c) => c.function.name)).toEqual(['host__list_resources']);
  expect((await openai()).choices[0]?.message.content).toBe('S=<missing context:a://s>');
  const claude = await anthropic({ model: 'demo-model', max_tokens: 100, messages: [user], tools: names.map((name) => ({ name, input_schema: { type: 'object' } })) });
  expect(await claude.json()).toMatchObject({ content: [{ type: 'tool_use', name: 'host__list_resources' }], stop_reason: 'tool_use' });
  const g = await gemini({ contents: [{ role: 'user', parts: [{ text: 'status' }] }], tools: [{ functionDeclarations: names.map((name) => ({ name })) }] }, 'generateContent');
  expect(await g.json()).toMatchObject({ candidates: [{ content: { parts: [{ functionCall: { name: 'host__list_resources' } }] } }] });
});
