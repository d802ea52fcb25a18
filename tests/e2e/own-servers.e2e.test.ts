import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { mintDevToken } from '../../src/api/auth';
import type { ManagedProcess } from '../../src/cli/processes';
import { bearer, getJson, postMessage, readSse } from '../helpers/http';
import { EVERYTHING_SERVER, requireBuild } from '../helpers/system';
import { startLauncher } from '../helpers/launcher';

/**
 * `npm start -- --config <file>` with a pasted Claude Desktop file that names one server of the
 * user's own: the whole stack starts (through the same launcher as `npm start`), the example servers
 * and their context stay out of it, and the printed local-mode policy lets the demo roles use it.
 */
let dir: string;
let up: ManagedProcess;
let apiUrl: string;

beforeAll(async () => {
  requireBuild();
  dir = mkdtempSync(path.join(tmpdir(), 'dmh-own-'));
  const config = path.join(dir, 'claude_desktop_config.json');
  writeFileSync(config, JSON.stringify({ mcpServers: { everything: { command: process.execPath, args: [EVERYTHING_SERVER, 'stdio'] } } }));
  ({ up, apiUrl } = await startLauncher(path.join(dir, 'data'), { INIT_CWD: dir, CONFIG_POLL_MS: '200' }, ['--config', 'claude_desktop_config.json']));
}, 120_000);

afterAll(async () => {
  await up?.stop(30_000);
  rmSync(dir, { recursive: true, force: true });
}, 60_000);

async function token(role: 'admin' | 'teacher' | 'student'): Promise<string> {
  const secret = readFileSync(path.join(dir, 'data', 'dev-jwt-secret'), 'utf8').trim();
  return await mintDevToken({ secret, sub: `u-${role}`, role, tenant: 'demo', scopes: [] });
}

/** The launcher's own lines (name `up`) of its JSON stream. */
const launcherLines = (): Array<{ level: number; msg: string }> =>
  up
    .output()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { name: string; level: number; msg: string })
    .filter((l) => l.name === 'up');

test('the launcher says which servers, host config and policy it uses, and starts no example server', () => {
  const msgs = launcherLines().map((l) => l.msg);
  expect(msgs.some((m) => m.startsWith('MCP servers:') && m.includes('(everything); the example servers are not started'))).toBe(true);
  expect(msgs.some((m) => /^policy: LOCAL MODE: the demo roles \(admin, teacher, student\) may use every tool of everything/.test(m))).toBe(true);
  expect(up.output()).not.toContain('"name":"payments"');
  // The local-mode host config and policy match the configured servers: nothing to warn about.
  expect(launcherLines().filter((l) => l.level >= 40)).toEqual([]);
});

test('a non-admin role sees and uses the pasted server; a turn reads no school context', async () => {
  const headers = bearer(await token('student'));
  const tools = await getJson(`${apiUrl}/v1/tools`, headers);
  expect(tools.status).toBe(200);
  const names: string[] = tools.body.tools.map((t: { name: string }) => t.name);
  expect(names.length).toBeGreaterThan(0);
  expect(names.every((n) => n.startsWith('everything__'))).toBe(true);
  expect(tools.body.servers.map((s: { server: string }) => s.server)).toEqual(['everything']);

  const post = await postMessage(apiUrl, 'own-1', 'hello', headers);
  expect(post.status).toBe(202);
  const events = await readSse(`${apiUrl}${post.body.eventsUrl as string}`, { headers, timeoutMs: 60_000 });
  expect(events.at(-1)?.event).toBe('done');
  const notices = events.filter((e) => e.event === 'notice').map((e) => e.data);
  expect(JSON.stringify(notices)).not.toContain('context_unavailable');
});

test('an edit to the MCP config applies without a restart; a bad edit keeps the last good one and says why', async () => {
  const config = path.join(dir, 'claude_desktop_config.json');
  const headers = bearer(await token('student'));
  const everything = { command: process.execPath, args: [EVERYTHING_SERVER, 'stdio'] };
  const servers = async (): Promise<string[]> => {
    const tools = await getJson(`${apiUrl}/v1/tools`, headers);
    expect(tools.status).toBe(200);
    const listed = tools.body.tools.map((t: { server: string }) => t.server) as string[];
    return [...new Set(listed)].sort();
  };
  const until = async (what: string, predicate: () => Promise<boolean> | boolean) => {
    const deadline = Date.now() + 30_000;
    while (!(await predicate())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n${up.output().slice(-3000)}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  };

  writeFileSync(config, JSON.stringify({ mcpServers: { everything, more: everything } }));
  // The worker connects the new server; the local-mode policy follows the file, and the API reloads
  // it, so even a student sees the new server's tools.
  await until('the new server in /v1/tools', async () => (await servers()).includes('more'));
  expect(await servers()).toEqual(['everything', 'more']);
  expect(up.output()).toMatch(/MCP servers reconfigured/);
  expect(launcherLines().some((l) => /^policy: LOCAL MODE: .* may use every tool of everything, more/.test(l.msg))).toBe(true);

  writeFileSync(config, '{ "mcpServers": { "broken": ');
  await until('the worker to reject the edit', () => up.output().includes('MCP config not reloaded: the last good version stays in force'));
  expect(await servers()).toEqual(['everything', 'more']);

  writeFileSync(config, JSON.stringify({ mcpServers: { everything } }));
  await until('the removed server to leave /v1/tools', async () => !(await servers()).includes('more'));
}, 120_000);
