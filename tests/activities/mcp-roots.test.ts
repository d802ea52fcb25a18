/**
 * Roots, against the published `@modelcontextprotocol/server-filesystem` started with no directory
 * arguments (it then works only in the roots its client gives): the server sees exactly the roots of
 * its config entry, never more; a reload that changes only the roots keeps the connection and
 * announces them (`roots/list_changed`), and the server follows.
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseMcpConfig } from '../../src/mcp/config';
import { McpServerHub } from '../../src/mcp/pool';
import { ROOT } from '../helpers/system';

const FILESYSTEM = path.join(ROOT, 'node_modules/@modelcontextprotocol/server-filesystem/dist/index.js');
let base: string;
let hub: McpServerHub;

const config = (roots: string[]) =>
  parseMcpConfig({ mcpServers: { fs: { command: process.execPath, args: [FILESYSTEM], roots } } }, {}, base, 'test');

const allowed = async (): Promise<string> => (await hub.callTool({ server: 'fs', tool: 'list_allowed_directories', arguments: {} })).text;

/** The server asks for its roots after the handshake, and again after `roots/list_changed`: wait until it has them. */
async function allowedOnce(dir: string): Promise<string> {
  let text = '';
  for (let i = 0; i < 100 && !text.includes(dir); i++) {
    if (i > 0) await new Promise((r) => setTimeout(r, 50));
    text = await allowed();
  }
  return text;
}

beforeAll(() => {
  base = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'dmh-roots-')));
  for (const dir of ['alpha', 'beta']) {
    rmSync(path.join(base, dir), { recursive: true, force: true });
    mkdirSync(path.join(base, dir));
    writeFileSync(path.join(base, dir, `${dir}.txt`), `in ${dir}`);
  }
});

afterAll(async () => {
  await hub?.close();
  rmSync(base, { recursive: true, force: true });
});

test('the server works in the configured roots only, and follows a reload of them on the same connection', async () => {
  hub = new McpServerHub(config(['alpha']));
  const first = await allowedOnce(path.join(base, 'alpha'));
  expect(first).toContain(path.join(base, 'alpha'));
  expect(first).not.toContain(path.join(base, 'beta'));
  const read = await hub.callTool({ server: 'fs', tool: 'read_text_file', arguments: { path: path.join(base, 'beta', 'beta.txt') } });
  expect(read.isError).toBe(true);
  const pid = hub.serverPid('fs');

  const summary = hub.reconfigure(config(['beta']));
  expect(summary).toEqual({ added: [], removed: [], changed: ['fs'] });
  const now = await allowedOnce(path.join(base, 'beta'));
  expect(now).toContain(path.join(base, 'beta'));
  expect(now).not.toContain(path.join(base, 'alpha'));
  expect(hub.serverPid('fs')).toBe(pid);
  expect((await hub.callTool({ server: 'fs', tool: 'read_text_file', arguments: { path: path.join(base, 'beta', 'beta.txt') } })).text).toBe('in beta');
});

test('roots in the config: paths relative to the file, file:// URIs, and nothing else', () => {
  const cfg = parseMcpConfig({ mcpServers: { fs: { command: 'x', roots: ['alpha', `file://${base}/beta`] } } }, {}, base, 'test');
  expect(cfg.mcpServers.fs?.roots).toEqual([
    { uri: `file://${base}/alpha`, name: 'alpha' },
    { uri: `file://${base}/beta`, name: 'beta' },
  ]);
  expect(() => parseMcpConfig({ mcpServers: { fs: { command: 'x', roots: ['https://example.com/x'] } } }, {}, base, 'test')).toThrow(
    'mcpServers.fs.roots[0]: expected a directory path or a file:// URI',
  );
  expect(parseMcpConfig({ mcpServers: { fs: { command: 'x' } } }, {}, base, 'test').mcpServers.fs?.roots).toBeUndefined();
});

test('a server without roots in its config gets none: never the whole disk', async () => {
  const bare = new McpServerHub(config([]));
  try {
    const listed = (await bare.callTool({ server: 'fs', tool: 'list_allowed_directories', arguments: {} })).text;
    expect(listed).not.toContain('/');
    const read = await bare.callTool({ server: 'fs', tool: 'read_text_file', arguments: { path: path.join(base, 'alpha', 'alpha.txt') } });
    expect(read.isError).toBe(true);
  } finally {
    await bare.close();
  }
});
