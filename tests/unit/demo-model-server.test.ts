import OpenAI, { APIConnectionError, AuthenticationError, BadRequestError, InternalServerError, RateLimitError } from 'openai';
import type { ChatCompletionChunk, ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import { startDemoModel, textPieces, type DemoModelHandle } from '../../src/demo-model/server';
import type { DemoRules } from '../../src/demo-model/rules';
import { waitFor } from '../helpers/http';

const rules: DemoRules = {
  model: 'demo-model',
  fallback: '(demo model) no script for that',
  scripts: [
    { name: 'hello', match: '(?i)^hello', steps: [{ text: 'Hello there, I am the demo model and I stream in small pieces.' }] },
    {
      name: 'remember',
      match: '(?i)remember that (.+)',
      steps: [
        {
          toolCalls: [
            { name: 'notes__add_note', arguments: { text: '{{match.1}}', tags: ['demo', '{{match.1}}'] } },
            { name: 'everything__echo', arguments: { message: 'saved {{match.1}}' } },
          ],
        },
        { text: 'Saved. notes said: {{tool:notes__add_note}}; echo said: {{tool:everything__echo}}' },
      ],
    },
    {
      name: 'add',
      match: 'add (\\d+) and (\\d+)',
      steps: [
        { toolCalls: [{ name: 'add', arguments: { a: '{{number:match.1}}', b: '{{number:match.2}}' } }] },
        { text: 'The sum is {{json:result.0:sum}}.' },
      ],
    },
    { name: 'loop', match: '^loop$', steps: [{ toolCalls: [{ name: 'noop', arguments: {} }] }] },
  ],
};

const tools: ChatCompletionTool[] = [
  { type: 'function', function: { name: 'notes__add_note', parameters: { type: 'object', properties: { text: { type: 'string' } } } } },
];

let demo: DemoModelHandle;
let client: OpenAI;

beforeAll(async () => {
  demo = await startDemoModel({ rules, port: 0 });
  client = new OpenAI({ baseURL: demo.url, apiKey: 'demo', maxRetries: 0 });
});

afterAll(async () => {
  await demo.close();
});

beforeEach(() => {
  demo.setFaults([]);
  demo.resetRequests();
});

const user = (content: string): ChatCompletionMessageParam => ({ role: 'user', content });

async function collect(stream: AsyncIterable<ChatCompletionChunk>): Promise<ChatCompletionChunk[]> {
  const chunks: ChatCompletionChunk[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

async function rawFetch(path: string, init?: RequestInit): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${demo.url.replace(/\/v1$/, '')}${path}`, init);
  const text = await res.text();
  return { status: res.status, body: text === '' ? undefined : JSON.parse(text) };
}

describe('demo model server: OpenAI compatibility (real openai client)', () => {
  it('binds to 127.0.0.1 on a free port', () => {
    expect(demo.url).toBe(`http://127.0.0.1:${demo.port}/v1`);
    expect(demo.port).toBeGreaterThan(0);
  });

  it('answers a plain non-streaming completion with usage', async () => {
    const completion = await client.chat.completions.create({ model: 'demo-model', messages: [user('hello')] });
    expect(completion.object).toBe('chat.completion');
    expect(completion.model).toBe('demo-model');
    expect(completion.choices[0]?.message.content).toBe('Hello there, I am the demo model and I stream in small pieces.');
    expect(completion.choices[0]?.finish_reason).toBe('stop');
    expect(completion.usage?.completion_tokens).toBeGreaterThan(0);
    expect(completion.usage?.total_tokens).toBe((completion.usage?.prompt_tokens ?? 0) + (completion.usage?.completion_tokens ?? 0));
  });

  it('answers the fallback when no script matches', async () => {
    const completion = await client.chat.completions.create({ model: 'demo-model', messages: [user('weather?')] });
    expect(completion.choices[0]?.message.content).toBe('(demo model) no script for that');
  });

  it('runs a non-streaming tool round trip, with stable ids on a repeated request', async () => {
    const messages: ChatCompletionMessageParam[] = [{ role: 'system', content: 'be brief' }, user('remember that eggs')];
    const first = await client.chat.completions.create({ model: 'demo-model', messages, tools });
    const again = await client.chat.completions.create({ model: 'demo-model', messages, tools });
    expect(again.choices[0]?.message.tool_calls).toEqual(first.choices[0]?.message.tool_calls);

    const choice = first.choices[0];
    expect(choice?.finish_reason).toBe('tool_calls');
    const calls = choice?.message.tool_calls ?? [];
    const fns = calls.map((c) => (c.type === 'function' ? c.function : undefined));
    expect(fns.map((f) => f?.name)).toEqual(['notes__add_note', 'everything__echo']);
    expect(JSON.parse(fns[0]?.arguments ?? '')).toEqual({ text: 'eggs', tags: ['demo', 'eggs'] });
    expect(new Set(calls.map((c) => c.id)).size).toBe(2);

    messages.push(choice?.message as ChatCompletionMessageParam);
    messages.push({ role: 'tool', tool_call_id: calls[1]?.id ?? '', content: 'Echo: saved eggs' });
    messages.push({ role: 'tool', tool_call_id: calls[0]?.id ?? '', content: [{ type: 'text', text: 'note #1 added' }] });
    const second = await client.chat.completions.create({ model: 'demo-model', messages, tools });
    expect(second.choices[0]?.message.content).toBe('Saved. notes said: note #1 added; echo said: Echo: saved eggs');
    expect(second.choices[0]?.message.tool_calls ?? []).toEqual([]);
  });

  it('streams text in several deltas, then finish_reason and a usage chunk', async () => {
    const stream = await client.chat.completions.create({
      model: 'demo-model',
      messages: [user('hello')],
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = await collect(stream);
    expect(chunks[0]?.choices[0]?.delta.role).toBe('assistant');
    const deltas = chunks.map((c) => c.choices[0]?.delta.content ?? '').filter((t) => t !== '');
    expect(deltas.length).toBeGreaterThan(5);
    expect(deltas.join('')).toBe('Hello there, I am the demo model and I stream in small pieces.');
    const withFinish = chunks.filter((c) => c.choices[0]?.finish_reason);
    expect(withFinish.map((c) => c.choices[0]?.finish_reason)).toEqual(['stop']);
    const last = chunks[chunks.length - 1];
    expect(last?.choices).toEqual([]);
    expect(last?.usage?.total_tokens).toBeGreaterThan(0);
  });

  it('streams tool calls OpenAI-style: id and name first, argument fragments after', async () => {
    const chunks = await collect(
      await client.chat.completions.create({ model: 'demo-model', messages: [user('remember that a long note here')], stream: true }),
    );
    const toolDeltas = chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []);
    const heads = toolDeltas.filter((d) => d.id !== undefined);
    expect(heads.map((d) => [d.index, d.function?.name, d.function?.arguments])).toEqual([
      [0, 'notes__add_note', ''],
      [1, 'everything__echo', ''],
    ]);
    const fragments = toolDeltas.filter((d) => d.id === undefined);
    expect(fragments.length).toBeGreaterThan(2);
    for (const f of fragments) expect(f.function?.name).toBeUndefined();
    const args = [0, 1].map((i) =>
      fragments
        .filter((f) => f.index === i)
        .map((f) => f.function?.arguments ?? '')
        .join(''),
    );
    expect(JSON.parse(args[0] ?? '')).toEqual({ text: 'a long note here', tags: ['demo', 'a long note here'] });
    expect(JSON.parse(args[1] ?? '')).toEqual({ message: 'saved a long note here' });
    expect(chunks[chunks.length - 1]?.choices[0]?.finish_reason).toBe('tool_calls');
    // No usage chunk unless asked for.
    expect(chunks.every((c) => c.choices.length === 1)).toBe(true);
  });

  it("is accepted by the client's stream accumulator", async () => {
    const stream = client.chat.completions.stream({ model: 'demo-model', messages: [user('remember that milk')] });
    const final = await stream.finalChatCompletion();
    const message = final.choices[0]?.message;
    expect(final.choices[0]?.finish_reason).toBe('tool_calls');
    expect(message?.tool_calls?.map((c) => (c.type === 'function' ? [c.function.name, JSON.parse(c.function.arguments)] : null))).toEqual([
      ['notes__add_note', { text: 'milk', tags: ['demo', 'milk'] }],
      ['everything__echo', { message: 'saved milk' }],
    ]);
  });

  it("drives the client's streaming tool runner to a final answer", async () => {
    const runner = client.chat.completions.runTools({
      model: 'demo-model',
      stream: true,
      messages: [user('add 2 and 3')],
      tools: [
        {
          type: 'function',
          function: {
            name: 'add',
            description: 'adds two numbers',
            parameters: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } } },
            parse: (input: string) => JSON.parse(input) as { a: number; b: number },
            function: ({ a, b }: { a: number; b: number }) => ({ sum: a + b }),
          },
        },
      ],
    });
    expect(await runner.finalContent()).toBe('The sum is 5.');
  });

  it('fails loudly with HTTP 400 script_exhausted when a script runs out of steps', async () => {
    const first = await client.chat.completions.create({ model: 'demo-model', messages: [user('loop')] });
    const call = first.choices[0]?.message.tool_calls?.[0];
    const messages: ChatCompletionMessageParam[] = [
      user('loop'),
      first.choices[0]?.message as ChatCompletionMessageParam,
      { role: 'tool', tool_call_id: call?.id ?? '', content: 'done' },
    ];
    const err = await client.chat.completions.create({ model: 'demo-model', messages }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BadRequestError);
    expect((err as BadRequestError).status).toBe(400);
    expect((err as BadRequestError).code).toBe('script_exhausted');
    expect((err as BadRequestError).message).toContain("demo model: script 'loop' has no step 1");
    // Streaming requests fail the same way, before any event is sent.
    await expect(client.chat.completions.create({ model: 'demo-model', messages, stream: true })).rejects.toBeInstanceOf(BadRequestError);
  });

  it('lists the model', async () => {
    const ids: string[] = [];
    for await (const model of client.models.list()) ids.push(model.id);
    expect(ids).toEqual(['demo-model']);
    expect((await client.models.retrieve('demo-model')).owned_by).toBe('demo');
  });
});

describe('demo model server: faults', () => {
  it('answers N requests with the injected status and retry-after, then recovers', async () => {
    demo.setFaults([{ status: 429, times: 2, retryAfter: 1 }]);
    for (let i = 0; i < 2; i++) {
      const err = await client.chat.completions.create({ model: 'demo-model', messages: [user('hello')] }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(RateLimitError);
      expect((err as RateLimitError).headers.get('retry-after')).toBe('1');
    }
    const ok = await client.chat.completions.create({ model: 'demo-model', messages: [user('hello')] });
    expect(ok.choices[0]?.finish_reason).toBe('stop');
  });

  it('accepts faults over HTTP and lets a retrying client recover', async () => {
    expect((await rawFetch('/__demo/faults', { method: 'POST', body: JSON.stringify([{ status: 503, times: 1, retryAfter: 0 }]) })).status).toBe(200);
    expect((await rawFetch('/__demo/faults')).body).toEqual([{ status: 503, times: 1, retryAfter: 0 }]);
    const retrying = new OpenAI({ baseURL: demo.url, apiKey: 'demo', maxRetries: 1 });
    const completion = await retrying.chat.completions.create({ model: 'demo-model', messages: [user('hello')] });
    expect(completion.choices[0]?.message.content).toMatch(/^Hello there/);
    expect(demo.requests().filter((r) => r.path === '/v1/chat/completions')).toHaveLength(2);

    demo.setFaults([{ status: 500 }]);
    await expect(client.chat.completions.create({ model: 'demo-model', messages: [user('hello')] })).rejects.toBeInstanceOf(InternalServerError);
  });

  it('rejects malformed faults', async () => {
    const res = await rawFetch('/__demo/faults', { method: 'POST', body: JSON.stringify([{ times: 1 }]) });
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body)).toContain('a fault needs status, delayMs, hangup or chunkDelayMs');
    expect(() => demo.setFaults([{ status: 200 }])).toThrow();
  });

  it('delays an answer', async () => {
    demo.setFaults([{ delayMs: 300 }]);
    const started = Date.now();
    await client.chat.completions.create({ model: 'demo-model', messages: [user('hello')] });
    expect(Date.now() - started).toBeGreaterThanOrEqual(280);
    const quick = Date.now();
    await client.chat.completions.create({ model: 'demo-model', messages: [user('hello')] });
    expect(Date.now() - quick).toBeLessThan(280);
  });

  it('spaces streamed text deltas in time, per request (fault) or server-wide', async () => {
    /** Arrival times of the text deltas of one streamed answer, relative to the request. */
    const timings = async (c: OpenAI): Promise<{ at: number[]; text: string }> => {
      const started = Date.now();
      const at: number[] = [];
      let text = '';
      const stream = await c.chat.completions.create({ model: 'demo-model', messages: [user('hello')], stream: true });
      for await (const chunk of stream) {
        const piece = chunk.choices[0]?.delta.content ?? '';
        if (piece === '') continue;
        at.push(Date.now() - started);
        text += piece;
      }
      return { at, text };
    };

    demo.setFaults([{ chunkDelayMs: 40 }]);
    const slow = await timings(client);
    expect(slow.text).toBe('Hello there, I am the demo model and I stream in small pieces.');
    expect(slow.at.length).toBeGreaterThan(5);
    // The first delta is visible long before the last one: what live streaming tests need.
    expect((slow.at.at(-1) ?? 0) - (slow.at[0] ?? 0)).toBeGreaterThanOrEqual((slow.at.length - 1) * 40 * 0.8);

    const quick = await timings(client);
    expect((quick.at.at(-1) ?? 0) - (quick.at[0] ?? 0)).toBeLessThan(200);

    const paced = await startDemoModel({ rules, chunkDelayMs: 25 });
    try {
      const c = new OpenAI({ baseURL: paced.url, apiKey: 'demo', maxRetries: 0 });
      const spaced = await timings(c);
      expect((spaced.at.at(-1) ?? 0) - (spaced.at[0] ?? 0)).toBeGreaterThanOrEqual((spaced.at.length - 1) * 25 * 0.8);
      // Non-streaming answers are not delayed.
      const plain = Date.now();
      await c.chat.completions.create({ model: 'demo-model', messages: [user('hello')] });
      expect(Date.now() - plain).toBeLessThan(200);
    } finally {
      await paced.close();
    }
  });

  it('closes promptly while a slowly streamed answer is in flight', async () => {
    const paced = await startDemoModel({ rules, chunkDelayMs: 10_000 });
    const c = new OpenAI({ baseURL: paced.url, apiKey: 'demo', maxRetries: 0 });
    const stream = await c.chat.completions.create({ model: 'demo-model', messages: [user('hello')], stream: true });
    const reading = (async () => {
      for await (const _chunk of stream) {
        // drain
      }
    })().catch((e: unknown) => e);
    // The server holds the stream (its request is in).
    await waitFor(async () => (paced.requests().length > 0 ? true : undefined), 10_000, 10);
    const started = Date.now();
    await paced.close();
    expect(Date.now() - started).toBeLessThan(2000);
    await reading;
  });

  it('hangs up, immediately or in the middle of a stream', async () => {
    demo.setFaults([{ hangup: true }]);
    await expect(client.chat.completions.create({ model: 'demo-model', messages: [user('hello')] })).rejects.toBeInstanceOf(APIConnectionError);

    demo.setFaults([{ hangup: true, afterChunks: 3 }]);
    const stream = await client.chat.completions.create({ model: 'demo-model', messages: [user('hello')], stream: true });
    const seen: string[] = [];
    await expect(
      (async () => {
        for await (const chunk of stream) seen.push(chunk.choices[0]?.delta.content ?? '');
      })(),
    ).rejects.toThrow();
    expect(seen).toHaveLength(3);

    const ok = await client.chat.completions.create({ model: 'demo-model', messages: [user('hello')] });
    expect(ok.choices[0]?.finish_reason).toBe('stop');
  });
});

describe('demo model server: robustness and inspection', () => {
  it('rejects bad JSON and bad shapes with OpenAI-style errors, and keeps serving', async () => {
    const badJson = await rawFetch('/v1/chat/completions', { method: 'POST', body: '{nope' });
    expect(badJson.status).toBe(400);
    expect(badJson.body).toEqual({
      error: { message: expect.stringContaining('not valid JSON'), type: 'invalid_request_error', param: null, code: 'invalid_json' },
    });

    const badShape = await rawFetch('/chat/completions', { method: 'POST', body: JSON.stringify({ model: 'demo-model' }) });
    expect(badShape.status).toBe(400);
    expect(badShape.body).toMatchObject({ error: { param: 'messages', code: 'invalid_request' } });

    const badRole = await rawFetch('/v1/chat/completions', {
      method: 'POST',
      body: JSON.stringify({ model: 'demo-model', messages: [{ role: 'wizard', content: 'x' }] }),
    });
    expect(badRole.status).toBe(400);
    expect(JSON.stringify(badRole.body)).not.toMatch(/at .*\.ts:\d+/);

    expect((await rawFetch('/v1/chat/completions')).status).toBe(405);
    const unknown = await rawFetch('/v1/embeddings', { method: 'POST', body: '{}' });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ error: { code: 'not_found' } });

    const ok = await client.chat.completions.create({ model: 'demo-model', messages: [user('hello')] });
    expect(ok.choices[0]?.finish_reason).toBe('stop');
  });

  it('records what the host sent, without the API key', async () => {
    await client.chat.completions.create({ model: 'demo-model', messages: [user('hello')], tools });
    const viaHttp = await rawFetch('/__demo/requests');
    expect(viaHttp.body).toEqual(demo.requests());
    const [req] = demo.requests();
    expect(req).toMatchObject({
      method: 'POST',
      path: '/v1/chat/completions',
      body: { model: 'demo-model', messages: [{ role: 'user', content: 'hello' }], tools },
    });
    expect(req?.headers.authorization).toBe('[redacted]');

    expect((await rawFetch('/__demo/requests', { method: 'DELETE' })).status).toBe(200);
    expect(demo.requests()).toEqual([]);
  });

  it('enforces an API key when configured', async () => {
    const locked = await startDemoModel({ rules, apiKey: 'sekret' });
    try {
      const wrong = new OpenAI({ baseURL: locked.url, apiKey: 'nope', maxRetries: 0 });
      await expect(wrong.chat.completions.create({ model: 'demo-model', messages: [user('hello')] })).rejects.toBeInstanceOf(
        AuthenticationError,
      );
      const right = new OpenAI({ baseURL: locked.url, apiKey: 'sekret', maxRetries: 0 });
      expect((await right.chat.completions.create({ model: 'demo-model', messages: [user('hello')] })).choices).toHaveLength(1);
    } finally {
      await locked.close();
    }
  });

  it('swaps rules at runtime and validates them', async () => {
    const other = await startDemoModel({ rules: { scripts: [] } });
    try {
      const c = new OpenAI({ baseURL: other.url, apiKey: 'demo', maxRetries: 0 });
      expect((await c.chat.completions.create({ model: 'x', messages: [user('ping')] })).choices[0]?.message.content).toMatch(/^\(demo model\)/);
      other.setRules({ scripts: [{ name: 'ping', match: 'ping', steps: [{ text: 'pong' }] }] });
      expect((await c.chat.completions.create({ model: 'x', messages: [user('ping')] })).choices[0]?.message.content).toBe('pong');
      expect(() => other.setRules({ scripts: [{ name: 'bad', match: '(', steps: [{ text: 'x' }] }] })).toThrow(/scripts\[0\]\.match/);
    } finally {
      await other.close();
    }
  });

  it('closes promptly even with a delayed request in flight', async () => {
    const slow = await startDemoModel({ rules });
    slow.setFaults([{ delayMs: 30_000 }]);
    const c = new OpenAI({ baseURL: slow.url, apiKey: 'demo', maxRetries: 0 });
    const pending = c.chat.completions.create({ model: 'demo-model', messages: [user('hello')] }).catch((e: unknown) => e);
    // The request is in, held by the fault.
    await waitFor(async () => (slow.requests().length > 0 ? true : undefined), 10_000, 10);
    const started = Date.now();
    await slow.close();
    expect(Date.now() - started).toBeLessThan(2000);
    expect(await pending).toBeInstanceOf(APIConnectionError);
  });

  it('splits text into pieces that add back up', () => {
    const text = '  Hello,   supercalifragilistic world!\nbye ';
    const pieces = textPieces(text);
    expect(pieces.join('')).toBe(text);
    expect(pieces.every((p) => p.length <= 8)).toBe(true);
    expect(textPieces('')).toEqual([]);
    // A long reply, with or without spaces, streams as many deltas.
    const long = 'word '.repeat(200);
    expect(textPieces(long).length).toBe(200);
    expect(textPieces('x'.repeat(100)).length).toBe(13);
  });
});
