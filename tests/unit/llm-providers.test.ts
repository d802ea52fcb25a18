import { toAnthropicMessages, toAnthropicRequest } from '../../src/llm/anthropic';
import { toGeminiContents, toGeminiRequest } from '../../src/llm/gemini';
import { formatZodError } from '../../src/config';
import { ModelsSchema, resolveModels } from '../../src/config/models';
import type { ChatMessage, LlmRequest } from '../../src/shared/turn';

/** How each native adapter maps the host's (OpenAI-shaped) conversation onto its provider's request. */
const schema = { type: 'object', properties: { q: { type: 'string', description: 'query' }, n: { type: 'integer', minimum: 1 } }, required: ['q'] };
const PNG = { mimeType: 'image/png', data: 'iVBORw0KGgo=' };

const conversation: ChatMessage[] = [
  { role: 'system', content: 'You are the assistant.' },
  { role: 'system', content: 'Resource notes://all from notes:\n- a note' },
  { role: 'user', content: 'look up two things' },
  {
    role: 'assistant',
    content: 'Looking.',
    toolCalls: [
      { id: 'call_a', name: 'search__find', arguments: '{"q":"x","n":2}' },
      { id: 'call_b', name: 'charts__draw', arguments: '{"q":"y"}' },
    ],
  },
  { role: 'tool', toolCallId: 'call_a', content: 'found x', structured: { hits: [{ id: 1 }] } },
  { role: 'tool', toolCallId: 'call_b', content: 'a chart', images: [PNG] },
  { role: 'user', content: 'and now?' },
];

const request: LlmRequest = {
  turnId: 't',
  step: 2,
  messages: conversation,
  tools: [
    { name: 'search__find', description: '[search] finds', parameters: schema },
    { name: 'charts__draw', parameters: { type: 'object' } },
  ],
};

describe('anthropic', () => {
  const body = toAnthropicRequest(request, { model: 'claude-x' });

  test('system messages become system blocks, the last one a cache breakpoint', () => {
    expect(body.system).toEqual([
      { type: 'text', text: 'You are the assistant.' },
      { type: 'text', text: 'Resource notes://all from notes:\n- a note', cache_control: { type: 'ephemeral' } },
    ]);
  });

  test('tools keep their JSON Schema as input_schema and their order; the last carries the tool list breakpoint', () => {
    expect(body.tools).toEqual([
      { name: 'search__find', description: '[search] finds', input_schema: schema },
      { name: 'charts__draw', input_schema: { type: 'object' }, cache_control: { type: 'ephemeral' } },
    ]);
    const reversed = toAnthropicRequest({ ...request, tools: [...request.tools].reverse() }, { model: 'claude-x' });
    expect(reversed.tools?.map((t) => ('name' in t ? t.name : ''))).toEqual(['charts__draw', 'search__find']);
  });

  test('parallel calls are tool_use blocks of one assistant message; their results share one user message, then the user text', () => {
    expect(body.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'look up two things' }] },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Looking.' },
          { type: 'tool_use', id: 'call_a', name: 'search__find', input: { q: 'x', n: 2 } },
          { type: 'tool_use', id: 'call_b', name: 'charts__draw', input: { q: 'y' } },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'call_a', content: 'found x' },
          {
            type: 'tool_result',
            tool_use_id: 'call_b',
            content: [
              { type: 'text', text: 'a chart' },
              { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG.data } },
            ],
          },
          { type: 'text', text: 'and now?' },
        ],
      },
    ]);
  });

  test('a failed call is marked is_error; invalid arguments become an empty input; an unsupported image type stays text', () => {
    const messages = toAnthropicMessages([
      { role: 'user', content: 'go' },
      { role: 'assistant', content: null, toolCalls: [{ id: 'c1', name: 't__x', arguments: '{not json' }] },
      { role: 'tool', toolCallId: 'c1', content: 'Error: nope', isError: true, images: [{ mimeType: 'image/tiff', data: 'AA==' }] },
    ]);
    expect(messages[1]?.content).toEqual([{ type: 'tool_use', id: 'c1', name: 't__x', input: {} }]);
    expect(messages[2]?.content).toEqual([{ type: 'tool_result', tool_use_id: 'c1', content: 'Error: nope', is_error: true }]);
  });

  test('max_tokens: the request, else the model setting, else 4096; streaming on', () => {
    expect(body).toMatchObject({ model: 'claude-x', max_tokens: 4096, stream: true });
    expect(toAnthropicRequest({ ...request, maxTokens: 100 }, { model: 'm', maxTokens: 900 }).max_tokens).toBe(100);
    expect(toAnthropicRequest(request, { model: 'm', maxTokens: 900, temperature: 0.2 })).toMatchObject({ max_tokens: 900, temperature: 0.2 });
  });

  test('no tools, no system: neither field nor breakpoint', () => {
    const bare = toAnthropicRequest({ ...request, tools: [], messages: [{ role: 'user', content: 'hi' }] }, { model: 'm' });
    expect(bare).not.toHaveProperty('tools');
    expect(bare).not.toHaveProperty('system');
  });
});

describe('gemini', () => {
  const params = toGeminiRequest(request, { model: 'gemini-x', maxTokens: 500 });

  test('system messages become the systemInstruction, tools functionDeclarations with the JSON Schema as is, in order', () => {
    expect(params.config?.systemInstruction).toEqual({ parts: [{ text: 'You are the assistant.' }, { text: 'Resource notes://all from notes:\n- a note' }] });
    expect(params.config?.tools).toEqual([
      {
        functionDeclarations: [
          { name: 'search__find', description: '[search] finds', parametersJsonSchema: schema },
          { name: 'charts__draw', parametersJsonSchema: { type: 'object' } },
        ],
      },
    ]);
    expect(params.config?.maxOutputTokens).toBe(500);
  });

  test('parallel calls are functionCall parts of one model turn; the responses share one user turn, by name, with structured content and images', () => {
    expect(params.contents).toEqual([
      { role: 'user', parts: [{ text: 'look up two things' }] },
      {
        role: 'model',
        parts: [
          { text: 'Looking.' },
          { functionCall: { id: 'call_a', name: 'search__find', args: { q: 'x', n: 2 } } },
          { functionCall: { id: 'call_b', name: 'charts__draw', args: { q: 'y' } } },
        ],
      },
      {
        role: 'user',
        parts: [
          { functionResponse: { id: 'call_a', name: 'search__find', response: { output: 'found x', structured: { hits: [{ id: 1 }] } } } },
          { functionResponse: { id: 'call_b', name: 'charts__draw', response: { output: 'a chart' }, parts: [{ inlineData: PNG }] } },
          { text: 'and now?' },
        ],
      },
    ]);
  });

  test('a failed call answers with `error`', () => {
    const contents = toGeminiContents([
      { role: 'user', content: 'go' },
      { role: 'assistant', content: null, toolCalls: [{ id: 'c1', name: 't__x', arguments: '{}' }] },
      { role: 'tool', toolCallId: 'c1', content: 'Error: nope', isError: true },
    ]);
    expect(contents[2]?.parts).toEqual([{ functionResponse: { id: 'c1', name: 't__x', response: { error: 'Error: nope' } } }]);
  });
});

describe('the models the worker can ask', () => {
  const env = { LLM_API_KEY: 'k-default', LLM_TIMEOUT_MS: 1_000 };

  test('the default from the environment: openai needs a base URL, the native providers do not', () => {
    expect(resolveModels({ ...env, LLM_BASE_URL: 'http://h/v1', LLM_MODEL: 'm' }, {}, {}).defaultModel).toMatchObject({ provider: 'openai', baseUrl: 'http://h/v1', model: 'm', apiKey: 'k-default' });
    expect(resolveModels({ ...env, LLM_PROVIDER: 'anthropic', LLM_MODEL: 'claude-x' }, {}, {}).defaultModel).toEqual({ provider: 'anthropic', model: 'claude-x', apiKey: 'k-default', timeoutMs: 1_000 });
    expect(() => resolveModels({ ...env, LLM_MODEL: 'm' }, {}, {})).toThrow(/LLM_BASE_URL: required for an OpenAI-compatible endpoint/);
    expect(() => resolveModels({ ...env }, {}, {})).toThrow(/LLM_MODEL: required/);
  });

  test("LLM_MODEL may name a host config model; each model's key comes from the variable it names", () => {
    const models = { claude: { provider: 'anthropic' as const, model: 'claude-x', apiKeyEnv: 'ANTHROPIC_API_KEY' }, flash: { provider: 'gemini' as const, model: 'gemini-x', apiKeyEnv: 'GEMINI_API_KEY', maxTokens: 800 } };
    const vars = { ANTHROPIC_API_KEY: 'sk-ant', GEMINI_API_KEY: 'g-key' };
    const resolved = resolveModels({ ...env, LLM_MODEL: 'claude' }, models, vars);
    expect(resolved.defaultSource).toBe('models.claude');
    expect(resolved.defaultModel).toMatchObject({ provider: 'anthropic', apiKey: 'sk-ant' });
    expect(resolved.named.get('flash')).toMatchObject({ provider: 'gemini', model: 'gemini-x', apiKey: 'g-key', maxTokens: 800 });
    expect(() => resolveModels({ ...env, LLM_MODEL: 'claude' }, models, { ANTHROPIC_API_KEY: 'sk-ant' })).toThrow('host config: models.flash.apiKeyEnv: the environment variable GEMINI_API_KEY is not set');
    expect(() => resolveModels({ ...env, LLM_MODEL: 'claude', LLM_PROVIDER: 'gemini' }, models, vars)).toThrow(/unset LLM_PROVIDER and LLM_BASE_URL/);
  });

  test('the host config section is validated with messages naming the field', () => {
    const bad = ModelsSchema.safeParse({ gpt: { provider: 'openai', model: 'gpt-x' }, other: { provider: 'mistral', model: 'x' }, k: { provider: 'gemini', model: 'g', apiKey: 'inline-secret' } });
    expect(bad.success).toBe(false);
    const text = formatZodError('host.json', bad.error as NonNullable<typeof bad.error>);
    expect(text).toMatch(/gpt\.baseUrl.*baseUrl is required for provider openai/);
    expect(text).toMatch(/other\.provider/);
    expect(text).toMatch(/k.*apiKey/);
  });
});
