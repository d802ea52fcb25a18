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
  [503, true, 'server_error'],
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
  expect(c.message).toBe(`HTTP ${status}: status ${status}`);
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
