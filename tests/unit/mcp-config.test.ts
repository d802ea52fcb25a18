import os from 'node:os';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import {
  DEFAULT_TIMEOUTS,
  McpConfigError,
  describeServer,
  loadMcpConfig,
  parseMcpConfig,
  type HttpServerConfig,
  type StdioServerConfig,
} from '../../src/mcp/config';
import { serverSecrets } from '../../src/security/secrets';

const REPO_ROOT = path.resolve(__dirname, '../..');

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'mcp-config-test-'));
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

function writeConfig(name: string, content: unknown): string {
  const file = path.join(dir, name);
  writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content, null, 2));
  return file;
}

/** The message of the McpConfigError `fn` throws (fails the test if it throws anything else). */
function configError(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(McpConfigError);
    return (error as Error).message;
  }
  throw new Error('expected an McpConfigError');
}

function badServer(entry: unknown, env: NodeJS.ProcessEnv = {}): string {
  return configError(() => parseMcpConfig({ mcpServers: { notes: entry } }, env, dir, 'mcp.json'));
}

describe('loadMcpConfig', () => {
  it('loads a good file with defaults filled in', () => {
    const file = writeConfig('good.json', {
      mcpServers: {
        notes: { command: 'node', args: ['server.js', '--stdio'], env: { A: '1' }, description: 'Notes' },
        sub: { command: 'node', cwd: 'sub/dir', timeouts: { callMs: 5000 } },
        web: { url: 'https://example.com/mcp', headers: { 'X-Api-Key': 'k' } },
        legacy: { type: 'sse', url: 'http://127.0.0.1:9/sse' },
        off: { command: 'whatever', disabled: true },
      },
      // Other hosts keep their own top-level settings in the same file.
      globalShortcut: 'Ctrl+Space',
    });
    const config = loadMcpConfig(file, {});
    expect(config.source).toBe(file);
    expect(Object.keys(config.mcpServers)).toEqual(['notes', 'sub', 'web', 'legacy', 'off']);
    expect(config.warnings).toEqual([]);

    const notes = config.mcpServers['notes'] as StdioServerConfig;
    expect(notes).toEqual({
      name: 'notes',
      kind: 'stdio',
      command: 'node',
      args: ['server.js', '--stdio'],
      env: { A: '1' },
      cwd: dir,
      description: 'Notes',
      disabled: false,
      timeouts: DEFAULT_TIMEOUTS,
    });
    expect(DEFAULT_TIMEOUTS).toEqual({ connectMs: 10_000, callMs: 60_000, listMs: 15_000 });

    const sub = config.mcpServers['sub'] as StdioServerConfig;
    expect(sub.cwd).toBe(path.join(dir, 'sub/dir'));
    expect(sub.args).toEqual([]);
    expect(sub.env).toEqual({});
    expect(sub.timeouts).toEqual({ connectMs: 10_000, callMs: 5000, listMs: 15_000 });

    const web = config.mcpServers['web'] as HttpServerConfig;
    expect(web).toMatchObject({ kind: 'http', url: 'https://example.com/mcp', headers: { 'X-Api-Key': 'k' }, transport: 'auto' });
    expect((config.mcpServers['legacy'] as HttpServerConfig).transport).toBe('sse');
    expect(config.mcpServers['off']?.disabled).toBe(true);
  });

  it('keeps an absolute cwd as is', () => {
    const config = parseMcpConfig({ mcpServers: { a: { command: 'x', cwd: '/opt/a' } } }, {}, dir);
    expect((config.mcpServers['a'] as StdioServerConfig).cwd).toBe(path.resolve('/opt/a'));
  });

  it('resolves ${env:NAME} in args, env, url, headers and cwd', () => {
    const env = { TOKEN: 't0k3n', HOST: 'api.example.com', DIR: 'work', ARG: 'verbose' };
    const config = parseMcpConfig(
      {
        mcpServers: {
          local: {
            command: 'node',
            args: ['--level=${env:ARG}', 'plain $HOME ${notenv}'],
            env: { API_TOKEN: '${env:TOKEN}', MIXED: 'a-${env:TOKEN}-b' },
            cwd: '${env:DIR}/x',
          },
          remote: {
            url: 'https://${env:HOST}/mcp',
            headers: { Authorization: 'Bearer ${env:TOKEN}' },
          },
        },
      },
      env,
      dir,
    );
    const local = config.mcpServers['local'] as StdioServerConfig;
    expect(local.args).toEqual(['--level=verbose', 'plain $HOME ${notenv}']);
    expect(local.env).toEqual({ API_TOKEN: 't0k3n', MIXED: 'a-t0k3n-b' });
    expect(local.cwd).toBe(path.join(dir, 'work/x'));
    const remote = config.mcpServers['remote'] as HttpServerConfig;
    expect(remote.url).toBe('https://api.example.com/mcp');
    expect(remote.headers).toEqual({ Authorization: 'Bearer t0k3n' });
  });

  it('names the server and field of a missing environment variable', () => {
    const message = configError(() =>
      parseMcpConfig({ mcpServers: { api: { url: 'https://x.test/mcp', headers: { Authorization: 'Bearer ${env:API_TOKEN}' } } } }, {}, dir, 'mcp.json'),
    );
    expect(message).toBe('mcp.json: mcpServers.api.headers.Authorization: environment variable "API_TOKEN" is not set');
    expect(badServer({ command: 'x', args: ['ok', '${env:NOPE}'] })).toBe(
      'mcp.json: mcpServers.notes.args[1]: environment variable "NOPE" is not set',
    );
    expect(badServer({ command: 'x', env: { K: '${env:bad-name}' } })).toContain('mcpServers.notes.env.K: invalid reference');
  });

  it('reads an auth block: user OAuth or client credentials, secrets from the environment', () => {
    const cfg = parseMcpConfig(
      {
        mcpServers: {
          saas: { url: 'https://saas.test/mcp', auth: { type: 'oauth', scope: 'read write', clientId: 'host', clientSecret: '${env:SAAS_SECRET}' } },
          svc: { url: 'https://svc.test/mcp', auth: { type: 'client_credentials', clientId: 'worker', privateKey: '${env:SVC_KEY}', algorithm: 'RS256' } },
        },
      },
      { SAAS_SECRET: 'saas-secret-value', SVC_KEY: '-----BEGIN PRIVATE KEY-----x' },
      dir,
      'mcp.json',
    );
    expect((cfg.mcpServers.saas as HttpServerConfig).auth).toEqual({ type: 'oauth', scope: 'read write', clientId: 'host', clientSecret: 'saas-secret-value' });
    expect((cfg.mcpServers.svc as HttpServerConfig).auth).toEqual({ type: 'client_credentials', clientId: 'worker', privateKey: '-----BEGIN PRIVATE KEY-----x', algorithm: 'RS256' });
    expect(serverSecrets(cfg.mcpServers.saas!)).toContain('saas-secret-value');
    expect(serverSecrets(cfg.mcpServers.svc!)).toContain('-----BEGIN PRIVATE KEY-----x');
  });

  it('rejects auth blocks that cannot work, naming the field', () => {
    const url = 'https://x.test/mcp';
    expect(badServer({ url, auth: { type: 'oauth' }, forwardUserToken: true })).toContain('mcpServers.notes.auth: choose one of "auth" and "forwardUserToken"');
    expect(badServer({ url, auth: { type: 'client_credentials', clientId: 'c' } })).toContain('exactly one of "clientSecret" and "privateKey"');
    expect(badServer({ url, auth: { type: 'client_credentials', clientId: 'c', clientSecret: 's', privateKey: 'k' } })).toContain('exactly one of');
    expect(badServer({ url, auth: { type: 'oauth', clientMetadataUrl: 'http://plain.test/meta.json' } })).toContain('auth.clientMetadataUrl: expected an https:// URL');
    expect(badServer({ url, auth: { type: 'magic' } })).toContain('mcpServers.notes.auth');
    expect(badServer({ url, auth: { type: 'oauth', clientSecret: '${env:MISSING_SECRET}' } })).toContain(
      'mcpServers.notes.auth.clientSecret: environment variable "MISSING_SECRET" is not set',
    );
  });

  it('reads the transport limits: maxMessageBytes and timeouts.callTotalMs, validated', () => {
    const cfg = parseMcpConfig({ mcpServers: { notes: { command: 'x', maxMessageBytes: 2_000_000, timeouts: { callTotalMs: 120_000 } } } }, {}, dir);
    expect(cfg.mcpServers['notes']).toMatchObject({ maxMessageBytes: 2_000_000, timeouts: { ...DEFAULT_TIMEOUTS, callTotalMs: 120_000 } });
    // Absent: not set, the defaults apply where they are used (src/mcp/transport-limits.ts, config.ts).
    expect(parseMcpConfig({ mcpServers: { notes: { command: 'x' } } }, {}, dir).mcpServers['notes']).not.toHaveProperty('maxMessageBytes');
    expect(badServer({ command: 'x', maxMessageBytes: 10 })).toContain('mcpServers.notes.maxMessageBytes: must be >= 1024');
    expect(badServer({ command: 'x', maxMessageBytes: 1e12 })).toContain('mcpServers.notes.maxMessageBytes: must be <= 268435456');
    expect(badServer({ url: 'http://127.0.0.1/mcp', maxMessageBytes: '1MB' })).toContain('mcpServers.notes.maxMessageBytes: expected number, got string');
    expect(badServer({ command: 'x', timeouts: { callTotalMs: 0 } })).toContain('mcpServers.notes.timeouts.callTotalMs: must be > 0');
  });

  it('does not resolve references of disabled servers (their secrets need not exist here)', () => {
    const config = parseMcpConfig(
      { mcpServers: { off: { url: 'https://x.test/${env:MISSING}', headers: { A: '${env:MISSING}' }, disabled: true } } },
      {},
      dir,
    );
    expect(config.mcpServers['off']?.disabled).toBe(true);
  });

  it('names the file and the exact field path of each kind of bad field', () => {
    expect(badServer({ command: 42 })).toBe('mcp.json: mcpServers.notes.command: expected string, got number');
    expect(badServer({ args: [] })).toBe('mcp.json: mcpServers.notes.command: expected string (missing)');
    expect(badServer({ command: '' })).toBe('mcp.json: mcpServers.notes.command: must not be empty');
    expect(badServer({ command: 'x', args: 'a b' })).toBe('mcp.json: mcpServers.notes.args: expected array, got string');
    expect(badServer({ command: 'x', args: ['a', 2] })).toBe('mcp.json: mcpServers.notes.args[1]: expected string, got number');
    expect(badServer({ command: 'x', env: { PORT: 8080 } })).toBe('mcp.json: mcpServers.notes.env.PORT: expected string, got number');
    expect(badServer({ command: 'x', env: ['A=1'] })).toBe('mcp.json: mcpServers.notes.env: expected object, got array');
    expect(badServer({ command: 'x', cwd: 3 })).toBe('mcp.json: mcpServers.notes.cwd: expected string, got number');
    expect(badServer({ command: 'x', disabled: 'yes' })).toBe('mcp.json: mcpServers.notes.disabled: expected boolean, got string');
    expect(badServer({ command: 'x', description: 1 })).toBe('mcp.json: mcpServers.notes.description: expected string, got number');
    expect(badServer({ command: 'x', timeouts: { callMs: -5 } })).toBe('mcp.json: mcpServers.notes.timeouts.callMs: must be > 0');
    expect(badServer({ command: 'x', timeouts: { listMs: 1.5 } })).toBe('mcp.json: mcpServers.notes.timeouts.listMs: expected integer, got number');
    expect(badServer({ command: 'x', timeouts: 1000 })).toBe('mcp.json: mcpServers.notes.timeouts: expected object, got number');
    expect(badServer({ url: 42 })).toBe('mcp.json: mcpServers.notes.url: expected string, got number');
    expect(badServer({ url: 'not a url' })).toBe('mcp.json: mcpServers.notes.url: expected an http:// or https:// URL');
    expect(badServer({ url: 'ftp://x.test/' })).toBe('mcp.json: mcpServers.notes.url: expected an http:// or https:// URL');
    expect(badServer({ url: 'http://x.test', headers: { A: true } })).toBe('mcp.json: mcpServers.notes.headers.A: expected string, got boolean');
    expect(badServer({ url: 'http://x.test', transport: 'websocket' })).toBe(
      'mcp.json: mcpServers.notes.transport: expected one of "auto", "streamable-http", "sse"',
    );
    expect(badServer({ command: 'x', url: 'http://x.test' })).toContain('mcp.json: mcpServers.notes: specify either');
    expect(badServer('node server.js')).toBe('mcp.json: mcpServers.notes: expected object, got string');
  });

  it('rejects bad server names', () => {
    for (const name of ['has space', 'a__b', 'x'.repeat(33), 'dot.ted', '']) {
      const message = configError(() => parseMcpConfig({ mcpServers: { [name]: { command: 'x' } } }, {}, dir, 'mcp.json'));
      expect(message).toContain('invalid server name');
      expect(message.startsWith('mcp.json: mcpServers')).toBe(true);
    }
    expect(parseMcpConfig({ mcpServers: { 'ok-name_1': { command: 'x' }, ['y'.repeat(32)]: { command: 'x' } } }, {}, dir)).toBeDefined();
    // The host's own tools (tool search) live under "host".
    expect(configError(() => parseMcpConfig({ mcpServers: { host: { command: 'x' } } }, {}, dir, 'mcp.json'))).toContain('mcp.json: mcpServers.host: "host" is reserved');
  });

  it('rejects a document without mcpServers', () => {
    // (A `servers` document is VS Code's shape, accepted since issue 10: see the VS Code test below.)
    expect(configError(() => parseMcpConfig({ tools: {} }, {}, dir, 'mcp.json'))).toBe(
      'mcp.json: mcpServers: expected object (missing)',
    );
    expect(configError(() => parseMcpConfig([], {}, dir, 'mcp.json'))).toBe('mcp.json: (root): expected a JSON object, got array');
  });

  it("loads VS Code's shape: `servers` with `type`, `${input:}` from the environment, `${workspaceFolder}`", () => {
    const config = parseMcpConfig(
      {
        inputs: [{ type: 'promptString', id: 'github-token', description: 'GitHub token', password: true }],
        servers: {
          github: { type: 'http', url: 'https://api.example.com/mcp/', headers: { Authorization: 'Bearer ${input:github-token}' } },
          legacy: { type: 'sse', url: 'https://old.example.com/sse' },
          files: { type: 'stdio', command: 'node', args: ['${workspaceFolder}/server.js'], env: { HOME_DIR: '${userHome}' } },
        },
      },
      { GITHUB_TOKEN: 'gh-secret' },
      dir,
      'mcp.json',
    );
    expect(config.mcpServers['github']).toMatchObject({ kind: 'http', transport: 'auto', headers: { Authorization: 'Bearer gh-secret' } });
    expect(config.mcpServers['legacy']).toMatchObject({ kind: 'http', transport: 'sse' });
    expect(config.mcpServers['files']).toMatchObject({ kind: 'stdio', args: [`${dir}/server.js`], env: { HOME_DIR: os.homedir() } });

    const missing = configError(() =>
      parseMcpConfig({ servers: { github: { type: 'http', url: 'https://x.test/mcp', headers: { A: '${input:github-token}' } } } }, {}, dir, 'mcp.json'),
    );
    expect(missing).toBe('mcp.json: servers.github.headers.A: input "github-token": set environment variable "GITHUB_TOKEN"');
    expect(configError(() => parseMcpConfig({ servers: {}, mcpServers: {} }, {}, dir, 'mcp.json'))).toBe(
      'mcp.json: (root): expected either "mcpServers" or "servers" (VS Code), not both',
    );
  });

  it('reports every problem at once, one per line', () => {
    let error: McpConfigError | undefined;
    try {
      parseMcpConfig({ mcpServers: { a: { command: 1 }, b: { url: 'nope' } } }, {}, dir, 'mcp.json');
    } catch (e) {
      error = e as McpConfigError;
    }
    expect(error?.problems).toEqual([
      'mcp.json: mcpServers.a.command: expected string, got number',
      'mcp.json: mcpServers.b.url: expected an http:// or https:// URL',
    ]);
    expect(error?.message.split('\n')).toHaveLength(2);
  });

  it('warns about fields it does not know instead of failing (other hosts add their own)', () => {
    const config = parseMcpConfig(
      { mcpServers: { a: { command: 'x', autoApprove: [], timeouts: { callMS: 5 } } } },
      {},
      dir,
      'mcp.json',
    );
    expect(config.warnings).toEqual([
      'mcp.json: mcpServers.a.autoApprove: unknown field, ignored',
      'mcp.json: mcpServers.a.timeouts.callMS: unknown field, ignored',
    ]);
  });

  it('never echoes values (they may be secrets) in messages', () => {
    const message = badServer({ url: 'ftp://user:hunter2-secret@x.test/?token=abc-secret', headers: { Authorization: 7 } });
    expect(message).not.toContain('hunter2');
    expect(message).not.toContain('abc-secret');
  });

  it('reports unreadable and malformed files with the file name', () => {
    const missing = path.join(dir, 'missing.json');
    expect(configError(() => loadMcpConfig(missing, {}))).toBe(`${missing}: cannot read config file (ENOENT)`);
    const broken = writeConfig('broken.json', '{\n  "mcpServers": {\n    "a": { "command": "x", "env": { "K": "sup3rs3cret } }\n');
    const message = configError(() => loadMcpConfig(broken, {}));
    expect(message.startsWith(`${broken}: invalid JSON`)).toBe(true);
    expect(message).not.toContain('sup3rs3cret');
  });

  it('gives the position of a file cut short (its end)', () => {
    const cut = writeConfig('cut.json', '{\n  "mcpServers": {\n    "a":');
    expect(configError(() => loadMcpConfig(cut, {}))).toBe(`${cut}: invalid JSON at line 3, column 9 (the file ends before the JSON does: is it cut short?)`);
  });

  it('labels messages with the path it was given', () => {
    const file = writeConfig('mcp.json', { mcpServers: { notes: { args: [] } } });
    const relative = path.relative(process.cwd(), file);
    expect(configError(() => loadMcpConfig(relative, {}))).toBe(`${relative}: mcpServers.notes.command: expected string (missing)`);
  });
});

describe('describeServer', () => {
  it('describes without secrets: command and arg count, or URL origin', () => {
    const config = parseMcpConfig(
      {
        mcpServers: {
          local: { command: 'node', args: ['a.js', '--token', '${env:T}'], env: { SECRET: '${env:T}' } },
          remote: { url: 'https://user:pw-secret@api.example.com/mcp/${env:T}?key=${env:T}', headers: { Authorization: 'Bearer ${env:T}' } },
        },
      },
      { T: 'very-secret-value' },
      dir,
    );
    const local = describeServer(config.mcpServers['local']!);
    const remote = describeServer(config.mcpServers['remote']!);
    expect(local).toBe('local: stdio node with 3 args');
    expect(remote).toBe('remote: http https://api.example.com');
    for (const text of [local, remote]) {
      expect(text).not.toContain('very-secret-value');
      expect(text).not.toContain('pw-secret');
    }
  });
});

describe('examples/mcp.json', () => {
  it('is valid and points at files relative to the repo root', () => {
    // npm start runs the payments server and hands its URL to the worker this way.
    const config = loadMcpConfig(path.join(REPO_ROOT, 'examples/mcp.json'), { PAYMENTS_SERVER_URL: 'http://127.0.0.1:4020/mcp' });
    expect(config.warnings).toEqual([]);
    expect(config.mcpServers['payments']).toMatchObject({ kind: 'http', url: 'http://127.0.0.1:4020/mcp', forwardUserToken: false });
    for (const name of ['admin', 'comms', 'student', 'teacher']) {
      const school = config.mcpServers[name] as StdioServerConfig;
      expect(existsSync(path.join(REPO_ROOT, (school.args[0] ?? '').replace(/^dist\//, '').replace(/\.js$/, '.ts')))).toBe(true);
    }
    const notes = config.mcpServers['notes'] as StdioServerConfig;
    const everything = config.mcpServers['everything'] as StdioServerConfig;
    expect(notes.cwd).toBe(REPO_ROOT);
    expect(notes.command).toBe('node');
    expect(notes.args).toEqual(['dist/examples/servers/notes-server.js', '--stdio', '--data', '.data/notes.json']);
    expect(everything.cwd).toBe(REPO_ROOT);
    expect(everything.args[1]).toBe('stdio');
    expect(existsSync(path.join(everything.cwd, everything.args[0]!))).toBe(true);
    // The notes script is built output; its source must exist where tsc (rootDir ".") maps it from.
    expect(existsSync(path.join(REPO_ROOT, 'examples/servers/notes-server.ts'))).toBe(true);
  });
});
