import * as Anthropic from '@anthropic-ai/sdk';
import { ApiError as GeminiApiError } from '@google/genai';
import { APIConnectionError, APIConnectionTimeoutError, APIError } from 'openai';
import { classifyLlmError, describeEndpoint } from '../../src/llm/errors';
import { scrubSecrets as redact } from '../../src/security/secrets';

const headers = (h: Record<string, string>) => new Headers(h);

test.each([
  [408, true, 'timeout'],
  [409, true, 'bad_request'],
  [429, true, 'rate_limited'],
  [500, true, 'server_error'],
  [502, true, 'server_error'],
  [503, true, 'overloaded'],
  [529, true, 'overloaded'],
  [400, false, 'bad_request'],
  [401, false, 'auth'],
  [403, false, 'auth'],
  [404, false, 'bad_request'],
  [422, false, 'bad_request'],
])('HTTP %i → retryable %s, class %s', (status, retryable, errorClass) => {
  const err = APIError.generate(status, { error: { message: `status ${status}` } }, undefined, headers({}));
  const c = classifyLlmError(err);
  expect(c.retryable).toBe(retryable);
  expect(c.errorClass).toBe(errorClass);
  expect(c.status).toBe(status);
  expect(c.message).toBe(`HTTP ${status}: status ${status}${errorClass === 'auth' ? '; check the API key configured for this model' : ''}`);
});

/** The same HTTP answer as each provider's SDK reports it. */
const asProvider = {
  openai: (status: number, message: string, h: Record<string, string> = {}) => APIError.generate(status, { error: { message } }, undefined, headers(h)),
  anthropic: (status: number, message: string, h: Record<string, string> = {}) =>
    Anthropic.APIError.generate(status, { type: 'error', error: { type: 'x', message } }, undefined, headers(h)),
  gemini: (status: number, message: string, h: Record<string, string> = {}) =>
    new GeminiApiError({
      status,
      message: JSON.stringify({ error: { code: status, message, ...(h['retry-after'] ? { details: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: `${h['retry-after']}s` }] } : {}) } }),
    }),
};

describe.each(Object.entries(asProvider))('%s errors map to the one retry policy', (_provider, make) => {
  test('rate limit: retried after the retry-after the endpoint asked for', () => {
    expect(classifyLlmError(make(429, 'slow down', { 'retry-after': '3' }))).toMatchObject({ retryable: true, errorClass: 'rate_limited', retryAfterMs: 3000, message: 'HTTP 429: slow down' });
  });
  test('overload (529, 503): retried', () => {
    expect(classifyLlmError(make(529, 'Overloaded'))).toMatchObject({ retryable: true, errorClass: 'overloaded' });
    expect(classifyLlmError(make(503, 'The model is overloaded'))).toMatchObject({ retryable: true, errorClass: 'overloaded' });
  });
  test.each([
    ["This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens."],
    ['prompt is too long: 210000 tokens > 200000 maximum'],
    ['The input token count (1100000) exceeds the maximum number of tokens allowed (1048576).'],
  ])('context too long (%s): final, with a clear answer', (message) => {
    const c = classifyLlmError(make(400, message));
    expect(c).toMatchObject({ retryable: false, errorClass: 'context_too_long' });
    expect(c.message).toMatch(/^the conversation is too long for the model's context window \(HTTP 400: .+\); start a new session or shorten the message$/);
  });
  test('auth: final, no retry, no key in the message', () => {
    const c = classifyLlmError(make(401, 'invalid x-api-key sk-SECRET-1'), ['sk-SECRET-1']);
    expect(c).toMatchObject({ retryable: false, errorClass: 'auth' });
    expect(c.retryAfterMs).toBeUndefined();
    expect(c.message).not.toContain('SECRET');
  });
  test('any other 400 is final, a 500 retried', () => {
    expect(classifyLlmError(make(400, 'tools.0.name: bad'))).toMatchObject({ retryable: false, errorClass: 'bad_request' });
    expect(classifyLlmError(make(500, 'internal'))).toMatchObject({ retryable: true, errorClass: 'server_error' });
  });
});

test("each SDK's connection failures and aborts are classified alike", () => {
  expect(classifyLlmError(new Anthropic.APIConnectionError({ message: 'Connection error.' }))).toMatchObject({ retryable: true, errorClass: 'connection' });
  expect(classifyLlmError(new Anthropic.APIConnectionTimeoutError())).toMatchObject({ retryable: true, errorClass: 'timeout' });
  expect(classifyLlmError(Object.assign(new TypeError('fetch failed'), { cause: new Error('connect ECONNREFUSED 127.0.0.1:9') }))).toMatchObject({ retryable: true, errorClass: 'connection' });
  expect(classifyLlmError(new Anthropic.APIUserAbortError())).toMatchObject({ message: 'the request was aborted' });
  expect(classifyLlmError(new DOMException('This operation was aborted', 'AbortError'))).toMatchObject({ message: 'the request was aborted' });
});

test('retry-after (seconds, ms, date) is honoured and capped', () => {
  const s = classifyLlmError(APIError.generate(429, { error: { message: 'slow down' } }, undefined, headers({ 'retry-after': '3' })));
  expect(s.retryAfterMs).toBe(3000);
  const ms = classifyLlmError(APIError.generate(503, {}, undefined, headers({ 'retry-after-ms': '250' })));
  expect(ms.retryAfterMs).toBe(250);
  const huge = classifyLlmError(APIError.generate(429, {}, undefined, headers({ 'retry-after': '99999' })));
  expect(huge.retryAfterMs).toBe(60_000);
  const date = classifyLlmError(
    APIError.generate(429, {}, undefined, headers({ 'retry-after': new Date(Date.now() + 5_000).toUTCString() })),
  );
  expect(date.retryAfterMs).toBeGreaterThan(3_000);
  expect(date.retryAfterMs).toBeLessThanOrEqual(5_000);
  // A final error gets no retry hint even if the server sent one.
  expect(classifyLlmError(APIError.generate(400, {}, undefined, headers({ 'retry-after': '3' }))).retryAfterMs).toBeUndefined();
});

test('network errors and timeouts are retryable, each with its own class', () => {
  expect(classifyLlmError(new APIConnectionError({ message: 'ECONNREFUSED' }))).toMatchObject({ retryable: true, errorClass: 'connection' });
  expect(classifyLlmError(new APIConnectionTimeoutError())).toMatchObject({ retryable: true, errorClass: 'timeout' });
  expect(classifyLlmError(new SyntaxError('Unexpected token'))).toMatchObject({ retryable: true, errorClass: 'malformed_response' });
  expect(classifyLlmError(new Error('something else'))).toMatchObject({ retryable: true, errorClass: 'other' });
});

test('secrets are scrubbed from messages', () => {
  const err = APIError.generate(401, { error: { message: 'Incorrect API key provided: sk-test-SECRET-123' } }, undefined, headers({}));
  const c = classifyLlmError(err, ['sk-test-SECRET-123']);
  expect(c.message).not.toContain('SECRET');
  expect(c.message).toContain('[redacted]');
  expect(redact('a b', [''])).toBe('a b');
});

test('messages name the model endpoint without its credentials or query', () => {
  const endpoint = describeEndpoint('https://user:pw-secret@llm.example:8443/v1/?key=k-secret');
  expect(endpoint).toBe('https://llm.example:8443/v1');
  const down = classifyLlmError(new APIConnectionError({ message: 'Connection error.' }), [], endpoint);
  expect(down.message).toBe('cannot reach the model endpoint https://llm.example:8443/v1 (Connection error.)');
  const rejected = classifyLlmError(APIError.generate(404, { error: { message: 'model "x" not found' } }, undefined, headers({})), [], endpoint);
  expect(rejected.message).toBe('HTTP 404 from https://llm.example:8443/v1: model "x" not found');
  expect(describeEndpoint('not a url')).toBe('the configured endpoint');
});
