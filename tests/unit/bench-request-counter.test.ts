import { RequestCounter, installCounter, labelOf } from '../../bench/lib/request-counter';

/** The bench's counting fetch (bench/lib/request-counter.ts): what each request is, how many, and a replay of the same bytes. */

test('a request is named by its JSON-RPC method, a batch by each, an answer to the server as a response, a bodiless one by its HTTP method', () => {
  expect(labelOf('POST', JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: {} }))).toBe('tools/call');
  expect(labelOf('post', JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }))).toBe('notifications/initialized');
  expect(labelOf('POST', JSON.stringify([{ jsonrpc: '2.0', id: 1, method: 'a' }, { jsonrpc: '2.0', id: 2, result: {} }]))).toBe('a+response');
  expect(labelOf('POST', JSON.stringify({ jsonrpc: '2.0', id: 3, error: { code: 1, message: 'no' } }))).toBe('response');
  expect(labelOf('POST', 'not json')).toBe('POST');
  expect(labelOf('POST', undefined)).toBe('POST');
  expect(labelOf(undefined, undefined)).toBe('GET');
  expect(labelOf('DELETE', undefined)).toBe('DELETE');
});

test('counts the requests after a mark, and replays the last one of a label to a URL with the same headers and body', async () => {
  const sent: Array<{ url: string; method?: string; headers?: RequestInit['headers']; body?: RequestInit['body'] }> = [];
  const inner = (async (input: string | URL | Request, init?: RequestInit) => {
    sent.push({ url: String(input), ...(init?.method ? { method: init.method } : {}), ...(init?.headers ? { headers: init.headers } : {}), ...(init?.body !== undefined ? { body: init.body } : {}) });
    return new Response('{}', { status: 200 });
  }) as typeof fetch;
  const counter = new RequestCounter(inner);
  await counter.fetch('http://a/mcp', { method: 'POST', body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize' }) });
  const mark = counter.mark();
  const call = (id: number) => ({ method: 'POST', headers: { 'mcp-method': 'tools/call' }, body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call' }) });
  await counter.fetch('http://a/mcp', call(2));
  await counter.fetch(new URL('http://b/mcp'), call(3));
  await counter.fetch('http://a/mcp', { method: 'GET' });
  expect(counter.since(mark)).toEqual(['tools/call', 'tools/call', 'GET']);

  const before = counter.mark();
  await counter.replay('tools/call', 'http://a/mcp');
  expect(counter.since(before)).toEqual(['tools/call']);
  expect(sent.at(-1)).toEqual({ url: 'http://a/mcp', method: 'POST', headers: { 'mcp-method': 'tools/call' }, body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call' }) });
  await expect(counter.replay('tools/list', 'http://a/mcp')).rejects.toThrow(/no tools\/list request was sent to http:\/\/a\/mcp/);
});

test('a replay that the server refuses fails, and installCounter counts the global fetch until restored', async () => {
  const original = globalThis.fetch;
  const counter = new RequestCounter((async () => new Response('nope', { status: 400 })) as typeof fetch);
  await counter.fetch('http://a/mcp', { method: 'POST', body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call' }) });
  await expect(counter.replay('tools/call', 'http://a/mcp')).rejects.toThrow('tools/call replayed: HTTP 400');

  const installed = installCounter();
  try {
    expect(globalThis.fetch).toBe(installed.counter.fetch);
    expect(installed.counter.inner).toBe(original);
  } finally {
    installed.restore();
  }
  expect(globalThis.fetch).toBe(original);
});
