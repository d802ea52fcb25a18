import { createServer, type Server } from 'node:http';
import { freePort } from '../../src/cli/processes';
import { probeModels } from '../../src/llm/probe';

/** The start-up probe against real HTTP servers, one per outcome. */
const KEY = 'sk-probe-test-key-never-shown';
const servers: Server[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
});

async function serve(handler: (path: string, auth: string | undefined) => { status: number; body: string }): Promise<string> {
  const server = createServer((req, res) => {
    const { status, body } = handler(req.url ?? '', req.headers.authorization);
    res.writeHead(status, { 'content-type': 'application/json' }).end(body);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return `http://127.0.0.1:${port}/v1`;
}

const models = (...ids: string[]) => JSON.stringify({ object: 'list', data: ids.map((id) => ({ id, object: 'model' })) });

test('ok when the endpoint lists the model; the key is sent as a bearer token', async () => {
  let seen: string | undefined;
  const base = await serve((path, auth) => {
    seen = auth;
    return path === '/v1/models' ? { status: 200, body: models('llama3.1', 'qwen2') } : { status: 404, body: '{}' };
  });
  expect(await probeModels({ baseUrl: base, apiKey: KEY, model: 'qwen2' })).toEqual({ kind: 'ok', message: `${base}/models serves qwen2` });
  expect(seen).toBe(`Bearer ${KEY}`);
});

test('a model the endpoint does not serve is named, with what it does serve', async () => {
  const base = await serve(() => ({ status: 200, body: models('llama3.1', 'qwen2') }));
  const r = await probeModels({ baseUrl: base, apiKey: KEY, model: 'gpt-9' });
  expect(r).toEqual({ kind: 'failed', message: `LLM_MODEL: ${base}/models does not serve "gpt-9"; it lists llama3.1, qwen2` });
});

test('a refused key, a missing /models route, an error status and a non-list answer each say so, never the key', async () => {
  const refused = await serve(() => ({ status: 401, body: JSON.stringify({ error: { message: `bad key ${KEY}` } }) }));
  const r1 = await probeModels({ baseUrl: refused, apiKey: KEY, model: 'm' });
  expect(r1).toEqual({ kind: 'failed', message: `LLM_API_KEY: ${refused}/models refused the key (HTTP 401)` });

  const noRoute = await serve(() => ({ status: 404, body: '{}' }));
  expect((await probeModels({ baseUrl: noRoute, apiKey: KEY, model: 'm' })).kind).toBe('unchecked');

  const broken = await serve(() => ({ status: 500, body: '{}' }));
  expect(await probeModels({ baseUrl: broken, apiKey: KEY, model: 'm' })).toEqual({ kind: 'failed', message: `LLM_BASE_URL: ${broken}/models answered HTTP 500` });

  const html = await serve(() => ({ status: 200, body: '<html>' }));
  expect((await probeModels({ baseUrl: html, apiKey: KEY, model: 'm' })).message).toMatch(/did not answer with an OpenAI-style model list/);
  for (const r of [r1]) expect(JSON.stringify(r)).not.toContain(KEY);
});

test('an unreachable endpoint names the URL and the cause', async () => {
  const port = await freePort();
  const r = await probeModels({ baseUrl: `http://127.0.0.1:${port}/v1`, apiKey: KEY, model: 'm' });
  expect(r.kind).toBe('failed');
  expect(r.message).toBe(`LLM_BASE_URL: cannot reach http://127.0.0.1:${port}/v1/models (ECONNREFUSED); is the model server running, and is the URL right?`);
});
