import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createServer } from 'node:net';
import { freePort, spawnManaged } from '../../src/cli/processes';
import { DIST, requireBuild, ROOT } from '../helpers/system';

/** A bad configuration stops the process at start-up with exit code 2 and a message naming the field. */
let dir: string;
beforeAll(() => {
  requireBuild();
  dir = mkdtempSync(path.join(tmpdir(), 'dmh-cfg-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function run(entry: 'src/worker.js' | 'src/api/main.js' | 'src/cli/up.js', env: NodeJS.ProcessEnv) {
  const { proc } = await spawnManaged('proc', process.execPath, [path.join(DIST, entry)], {
    env: { ...process.env, TEMPORAL_ADDRESS: '127.0.0.1:9', LLM_BASE_URL: 'http://127.0.0.1:9/v1', LLM_MODEL: 'test-model', ...env },
    cwd: ROOT,
  });
  const code = await proc.exited;
  return { code, output: proc.output() };
}

function file(name: string, content: string): string {
  const p = path.join(dir, name);
  writeFileSync(p, content);
  return p;
}

test.each([
  ['malformed JSON', '{"mcpServers": {', /mcp-bad-json\.json/],
  ['a wrong field type', JSON.stringify({ mcpServers: { notes: { command: 5 } } }), /mcpServers\.notes\.command/],
  ['neither command nor url', JSON.stringify({ mcpServers: { notes: { args: [] } } }), /mcpServers\.notes/],
  ['a bad server name', JSON.stringify({ mcpServers: { 'no spaces': { command: 'node' } } }), /no spaces/],
  ['a missing ${env:} variable', JSON.stringify({ mcpServers: { notes: { command: 'node', env: { T: '${env:DMH_UNSET_VAR}' } } } }), /DMH_UNSET_VAR/],
])('worker: MCP config with %s fails fast', async (_name, content, pattern) => {
  const name = _name === 'malformed JSON' ? 'mcp-bad-json.json' : `mcp-${Math.random().toString(36).slice(2)}.json`;
  const { code, output } = await run('src/worker.js', { MCP_CONFIG: file(name, content) });
  expect(code).toBe(2);
  expect(output).toMatch(pattern);
  expect(output).not.toMatch(/\n\s+at /);
});

test('worker: fields it does not know are said at start, not silently ignored', async () => {
  const config = file('mcp-unknown-fields.json', JSON.stringify({ mcpServers: { notes: { command: 'node', args: ['-e', ''], autoApprove: ['x'], envFile: '.env' } } }));
  // No Temporal at 127.0.0.1:9: the worker stops after reading its config, which is all this needs.
  const { output } = await run('src/worker.js', { MCP_CONFIG: config });
  expect(output).toMatch(/mcpServers\.notes\.autoApprove: unknown field, ignored/);
  expect(output).toMatch(/mcpServers\.notes\.envFile: unknown field, ignored/);
});

test('worker: a bad environment variable is named', async () => {
  const { code, output } = await run('src/worker.js', { LLM_BASE_URL: 'not a url' });
  expect(code).toBe(2);
  expect(output).toMatch(/LLM_BASE_URL/);
});

test.each([
  ['src/worker.js', { PAYLOAD_KEYS: 'k1:c2hvcnQta2V5LW9ubHktMTYtYg==' }, /PAYLOAD_KEYS: key "k1": must be 32 bytes/],
  ['src/api/main.js', { PAYLOAD_KEY_FILE: '/nonexistent/dmh-payload-keys' }, /PAYLOAD_KEY_FILE: cannot read/],
  ['src/cli/up.js', { PAYLOAD_KEYS: 'k1:c2hvcnQta2V5LW9ubHktMTYtYg==', TEMPORAL_ADDRESS: '' }, /PAYLOAD_KEYS: key \\?"k1\\?": must be 32 bytes/],
] as const)('%s: bad payload keys stop it, named, the key never printed', async (entry, env, pattern) => {
  const { code, output } = await run(entry, env);
  expect(code).toBe(2);
  expect(output).toMatch(pattern);
  expect(output).not.toContain('c2hvcnQta2V5');
});

test('API: a bad host config is named', async () => {
  const { code, output } = await run('src/api/main.js', { HOST_CONFIG: file('host.json', JSON.stringify({ maxSteps: 0 })) });
  expect(code).toBe(2);
  expect(output).toMatch(/host\.json: maxSteps/);
});

test('API: an unknown host config field is refused', async () => {
  const { code, output } = await run('src/api/main.js', { HOST_CONFIG: file('host2.json', JSON.stringify({ maxStep: 3 })) });
  expect(code).toBe(2);
  expect(output).toMatch(/maxStep/);
});

test.each([
  ['a base URL without a scheme', { LLM_BASE_URL: 'localhost:11434' }, /LLM_BASE_URL: must be an http:\/\/ or https:\/\/ URL/],
  ['a base URL without a model', { LLM_MODEL: '' }, /LLM_MODEL: required when LLM_BASE_URL is set/],
  ['an unknown provider', { LLM_PROVIDER: 'mistral' }, /LLM_PROVIDER: must be one of openai, anthropic, gemini/],
  ['a provider without a model', { LLM_BASE_URL: '', LLM_PROVIDER: 'anthropic', LLM_MODEL: '' }, /LLM_MODEL: required when LLM_PROVIDER is set/],
])('worker: %s is refused at start', async (_name, env, pattern) => {
  const { code, output } = await run('src/worker.js', env);
  expect(code).toBe(2);
  expect(output).toMatch(pattern);
});

test("worker: a host config model whose key variable is unset, or without its endpoint, is refused at start, naming the field", async () => {
  const host = (models: unknown) => file(`host-models-${Math.random().toString(36).slice(2)}.json`, JSON.stringify({ models }));
  const unsetKey = await run('src/worker.js', { HOST_CONFIG: host({ claude: { provider: 'anthropic', model: 'claude-x', apiKeyEnv: 'DMH_UNSET_ANTHROPIC_KEY' } }) });
  expect(unsetKey.code).toBe(2);
  expect(unsetKey.output).toContain('host config: models.claude.apiKeyEnv: the environment variable DMH_UNSET_ANTHROPIC_KEY is not set');
  const noUrl = await run('src/worker.js', { HOST_CONFIG: host({ local: { provider: 'openai', model: 'llama' } }) });
  expect(noUrl.code).toBe(2);
  expect(noUrl.output).toMatch(/models\.local\.baseUrl: baseUrl is required for provider openai/);
});

test('npm start: a port in use stops it before anything starts, naming the variable that moves it', async () => {
  const held = createServer();
  await new Promise<void>((resolve) => held.listen(0, '127.0.0.1', resolve));
  const port = (held.address() as { port: number }).port;
  try {
    const { code, output } = await run('src/cli/up.js', { API_PORT: String(port), PAYMENTS_PORT: String(await freePort()), DATA_DIR: path.join(dir, 'up') });
    expect(code).toBe(2);
    expect(output).toContain(`port ${port} (API) is in use: set API_PORT to another port`);
    expect(output).not.toMatch(/"name":"(payments|worker|api)"/);
  } finally {
    held.close();
  }
});

test('worker: with LLM_PROBE=on, a model the endpoint does not serve stops the start, naming it', async () => {
  const { startDemoModel } = await import('../../src/demo-model/server');
  const model = await startDemoModel({ rules: { model: 'demo-model', fallback: 'no script', scripts: [] } });
  try {
    const { code, output } = await run('src/worker.js', { LLM_PROBE: 'on', LLM_BASE_URL: model.url, LLM_MODEL: 'not-served', LLM_API_KEY: 'sk-never-printed-1234' });
    expect(code).toBe(2);
    expect(output).toContain(`LLM_MODEL: ${model.url}/models does not serve "not-served"; it lists demo-model`);
    expect(output).not.toContain('sk-never-printed-1234');
  } finally {
    await model.close();
  }
});

test('worker: with LLM_PROBE=on, an unreachable endpoint stops the start, naming the URL', async () => {
  const port = await freePort();
  const { code, output } = await run('src/worker.js', { LLM_PROBE: 'on', LLM_BASE_URL: `http://127.0.0.1:${port}/v1` });
  expect(code).toBe(2);
  expect(output).toContain(`LLM_BASE_URL: cannot reach http://127.0.0.1:${port}/v1/models (ECONNREFUSED)`);
});
