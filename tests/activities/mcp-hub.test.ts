/**
 * The hub against real MCP servers in real processes: our notes server over stdio, Streamable HTTP
 * and legacy HTTP+SSE, and the reference "everything" server over stdio. No SDK mocks.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { parseMcpConfig, type McpConfig } from '../../src/mcp/config';
import { McpServerHub, type HubLogger } from '../../src/mcp/pool';
import { McpPermanentError, McpTransientError } from '../../src/mcp/failures';
import { IDEMPOTENCY_KEY_META_KEY } from '../../src/shared/meta';
import { compileExamples, waitForExit } from '../helpers/compile-examples';
import { CatalogSchema } from '../../src/api/contract';
import type { ToolOutcome } from '../../src/shared/tool-types';

jest.setTimeout(60_000);

const REPO_ROOT = path.resolve(__dirname, '../..');
const EVERYTHING_SERVER = require.resolve('@modelcontextprotocol/server-everything/dist/index.js', { paths: [REPO_ROOT] });

// ------------------------------------------------------------------ fixtures

interface HttpServerProcess {
  child: ChildProcess;
  url: string;
  port: number;
  stderr: string[];
  stop(): Promise<void>;
}

function startNotesHttp(script: string, mode: 'http' | 'sse', dataFile: string, port = 0): Promise<HttpServerProcess> {
  const child = spawn(process.execPath, [script, `--${mode}`, '--port', String(port), '--data', dataFile], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const stderr: string[] = [];
  child.stderr?.on('data', (chunk: Buffer) => stderr.push(...chunk.toString().split('\n').filter(Boolean)));
  const stop = async (): Promise<void> => {
    child.kill('SIGTERM');
    if (!(await waitForExit(child, 5_000))) {
      child.kill('SIGKILL');
      await waitForExit(child, 5_000);
    }
  };
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => {
      void stop();
      reject(new Error(`notes server (${mode}) did not start: ${stderr.join('\n')}`));
    }, 20_000);
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = /NOTES_SERVER_URL=(\S+)/.exec(out);
      if (match?.[1]) {
        clearTimeout(timer);
        const url = match[1];
        resolve({ child, url, port: Number(new URL(url).port), stderr, stop });
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`notes server (${mode}) exited with ${code}: ${stderr.join('\n')}`));
    });
  });
}

/** A port nobody listens on (bound, then released). */
async function unusedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

class CapturingLogger implements HubLogger {
  readonly lines: Array<{ level: string; msg: string; obj: object }> = [];
  debug = (obj: object, msg = ''): void => void this.lines.push({ level: 'debug', msg, obj });
  info = (obj: object, msg = ''): void => void this.lines.push({ level: 'info', msg, obj });
  warn = (obj: object, msg = ''): void => void this.lines.push({ level: 'warn', msg, obj });
  error = (obj: object, msg = ''): void => void this.lines.push({ level: 'error', msg, obj });
  text(): string {
    return this.lines.map((l) => `${l.level} ${l.msg} ${JSON.stringify(l.obj)}`).join('\n');
  }
}

async function waitFor(what: string, predicate: () => boolean, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

function processGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return false;
  } catch {
    return true;
  }
}

async function rejection(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected the promise to reject');
}

function notesIn(outcome: ToolOutcome): Array<{ id: string; text: string }> {
  return (outcome.structuredContent?.['notes'] ?? []) as Array<{ id: string; text: string }>;
}

/**
 * A bare JSON-RPC server over stdio, without the SDK: it can do what SDK servers never do (answer
 * with JSON-RPC errors, send malformed results) and counts tools/list requests. Tools are listed
 * two per page to exercise pagination.
 */
const RAW_SERVER = `
const readline = require('readline');
let tools = ['alpha', 'beta', 'refuse', 'malformed', 'internal', 'change', 'stats'];
let listCalls = 0;
const send = (m) => process.stdout.write(JSON.stringify(m) + '\\n');
const rl = readline.createInterface({ input: process.stdin });
rl.on('close', () => process.exit(0));
rl.on('line', (line) => {
  const msg = JSON.parse(line);
  if (msg.id === undefined) return;
  const reply = (result) => send({ jsonrpc: '2.0', id: msg.id, result });
  const fail = (code, message) => send({ jsonrpc: '2.0', id: msg.id, error: { code, message } });
  const text = (t) => reply({ content: [{ type: 'text', text: t }] });
  if (msg.method === 'initialize') {
    return reply({ protocolVersion: msg.params.protocolVersion, capabilities: { tools: { listChanged: true } }, serverInfo: { name: 'raw', version: '1.0.0' } });
  }
  if (msg.method === 'ping') return reply({});
  if (msg.method === 'tools/list') {
    listCalls++;
    const start = Number((msg.params && msg.params.cursor) || 0);
    const next = start + 2 < tools.length ? String(start + 2) : undefined;
    return reply({ tools: tools.slice(start, start + 2).map((name) => ({ name, inputSchema: { type: 'object' } })), ...(next ? { nextCursor: next } : {}) });
  }
  if (msg.method !== 'tools/call') return fail(-32601, 'Method not found');
  const name = msg.params.name;
  if (!tools.includes(name)) return fail(-32602, 'Unknown tool: ' + name);
  if (name === 'refuse') return fail(-32602, 'argument "x" is required');
  if (name === 'malformed') return reply({ content: 'not-a-list' });
  if (name === 'internal') return fail(-32603, 'database unavailable');
  if (name === 'stats') return text(String(listCalls));
  if (name === 'change') {
    tools = [...tools, 'delta'];
    text('changed');
    return send({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
  }
  return text('ran ' + name);
});
`;

// ------------------------------------------------------------------ shared setup

const SECRET_HEADER = 'Bearer s3cr3t-header-value';
const SECRET_QUERY = 'q-s3cr3t-token';

let dataDir: string;
let notesScript: string;
let web: HttpServerProcess;
let legacy: HttpServerProcess;
let downUrl: string;
const hubs: McpServerHub[] = [];
const logger = new CapturingLogger();
let hub: McpServerHub;

function makeConfig(servers: Record<string, unknown>): McpConfig {
  return parseMcpConfig({ mcpServers: servers }, { ...process.env, EXTRA_FOR_CHILD: 'configured-value' }, REPO_ROOT, 'test');
}

function newHub(config: McpConfig, log: HubLogger = logger): McpServerHub {
  const h = new McpServerHub(config, { logger: log, clientInfo: { name: 'mcp-hub-test', version: '1.0.0' } });
  hubs.push(h);
  return h;
}

function stdioNotes(dataFile: string): Record<string, unknown> {
  return { command: 'node', args: [notesScript, '--stdio', '--data', dataFile] };
}

beforeAll(async () => {
  dataDir = mkdtempSync(path.join(tmpdir(), 'mcp-hub-test-'));
  [notesScript] = (await compileExamples(['examples/servers/notes-server.ts'], 'notes-server')) as [string];
  [web, legacy] = await Promise.all([
    startNotesHttp(notesScript, 'http', path.join(dataDir, 'web.json')),
    startNotesHttp(notesScript, 'sse', path.join(dataDir, 'legacy.json')),
  ]);
  downUrl = `http://127.0.0.1:${await unusedPort()}/mcp?token=${SECRET_QUERY}`;

  hub = newHub(
    makeConfig({
      notes: stdioNotes(path.join(dataDir, 'stdio.json')),
      everything: {
        command: 'node',
        args: [EVERYTHING_SERVER, 'stdio'],
        env: { EXTRA_FOR_CHILD: '${env:EXTRA_FOR_CHILD}' },
      },
      web: { url: web.url },
      // The legacy server refuses POST /mcp with 405, so `auto` has to fall back to SSE.
      legacy: { url: legacy.url.replace(/\/sse$/, '/mcp') },
      down: { url: downUrl, headers: { Authorization: SECRET_HEADER }, timeouts: { connectMs: 3_000 } },
      off: { command: 'node', args: ['never-started.js'], disabled: true },
    }),
  );
}, 120_000);

afterAll(async () => {
  await Promise.all(hubs.map((h) => h.close()));
  await Promise.all([web?.stop(), legacy?.stop()]);
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

// ------------------------------------------------------------------ tests

describe('McpServerHub', () => {
  it('lists every reachable server and reports the unreachable and disabled ones', async () => {
    const catalog = await hub.catalog();
    // What GET /v1/tools answers, but for the policy's word on each tool, which the API adds per caller.
    expect(() => CatalogSchema.parse({ ...catalog, tools: catalog.tools.map((t) => ({ ...t, needsApproval: false })) })).not.toThrow();

    const byServer = Object.fromEntries(catalog.servers.map((s) => [s.server, s]));
    expect(byServer['notes']).toEqual({ server: 'notes', transport: 'stdio', state: 'connected', toolCount: 3 });
    expect(byServer['web']).toEqual({ server: 'web', transport: 'streamable-http', state: 'connected', toolCount: 3 });
    // Fallback proven: configured as `auto` at a URL that refuses Streamable HTTP.
    expect(byServer['legacy']).toEqual({ server: 'legacy', transport: 'sse', state: 'connected', toolCount: 3 });
    expect(byServer['everything']).toMatchObject({ transport: 'stdio', state: 'connected' });
    expect(byServer['everything']?.toolCount).toBeGreaterThan(5);
    expect(byServer['off']).toEqual({ server: 'off', transport: 'stdio', state: 'disabled', toolCount: 0 });
    expect(byServer['down']).toMatchObject({ server: 'down', state: 'unavailable', toolCount: 0 });
    expect(byServer['down']?.error).toMatch(/ECONNREFUSED|fetch failed/);
    // Secret-free: neither the header nor the token in the URL leaks into the report.
    expect(JSON.stringify(catalog)).not.toContain('s3cr3t');

    const names = catalog.tools.map((t) => t.name);
    for (const server of ['notes', 'web', 'legacy']) {
      expect(names).toEqual(expect.arrayContaining([`${server}__add_note`, `${server}__list_notes`, `${server}__slow_task`]));
    }
    expect(names).toEqual(expect.arrayContaining(['everything__echo', 'everything__get-tiny-image']));
    expect(names.some((n) => n.startsWith('down__') || n.startsWith('off__'))).toBe(false);
    expect(new Set(names).size).toBe(names.length);

    const addNote = catalog.tools.find((t) => t.name === 'notes__add_note');
    expect(addNote).toMatchObject({
      server: 'notes',
      tool: 'add_note',
      annotations: { title: 'Add note', readOnlyHint: false, idempotentHint: false, destructiveHint: false },
    });
    expect(addNote?.inputSchema).toMatchObject({ type: 'object', required: ['text'] });
    expect(catalog.tools.find((t) => t.name === 'notes__list_notes')?.annotations?.readOnlyHint).toBe(true);
  });

  it('calls a tool on each server and transport', async () => {
    const text = `hello ${randomUUID()}`;
    for (const server of ['notes', 'web', 'legacy']) {
      const added = await hub.callTool({ server, tool: 'add_note', arguments: { text } });
      expect(added.isError).toBe(false);
      expect(added.text).toContain(text);
      expect(added.structuredContent).toMatchObject({ text });
    }
    const echo = await hub.callTool({ server: 'everything', tool: 'echo', arguments: { message: 'hi there' } });
    expect(echo).toEqual({ isError: false, text: 'Echo: hi there' });

    const image = await hub.callTool({ server: 'everything', tool: 'get-tiny-image', arguments: {} });
    expect(image.isError).toBe(false);
    expect(image.text).toMatch(/\[image image\/png, \d+ bytes base64\]/);
  });

  it('passes only the minimal environment plus the configured env to stdio children', async () => {
    process.env['HOST_ONLY_SECRET_FOR_TEST'] = 'must-not-leak';
    try {
      const fresh = newHub(makeConfig({ everything: { command: 'node', args: [EVERYTHING_SERVER, 'stdio'], env: { EXTRA_FOR_CHILD: 'configured-value' } } }));
      const env = await fresh.callTool({ server: 'everything', tool: 'get-env', arguments: {} });
      expect(env.text).toContain('configured-value');
      expect(env.text).not.toContain('must-not-leak');
      await fresh.close();
    } finally {
      delete process.env['HOST_ONLY_SECRET_FOR_TEST'];
    }
  });

  it('dedupes on the idempotency key: the same key twice adds one note', async () => {
    for (const server of ['notes', 'web']) {
      const text = `once ${randomUUID()}`;
      const meta = { [IDEMPOTENCY_KEY_META_KEY]: `key-${randomUUID()}` };
      const first = await hub.callTool({ server, tool: 'add_note', arguments: { text }, meta });
      const second = await hub.callTool({ server, tool: 'add_note', arguments: { text }, meta });
      expect(second).toEqual(first);
      const list = await hub.callTool({ server, tool: 'list_notes', arguments: {} });
      expect(notesIn(list).filter((n) => n.text === text)).toHaveLength(1);
    }
    // Without a key, nothing is deduped.
    const text = `twice ${randomUUID()}`;
    await hub.callTool({ server: 'notes', tool: 'add_note', arguments: { text } });
    await hub.callTool({ server: 'notes', tool: 'add_note', arguments: { text } });
    const list = await hub.callTool({ server: 'notes', tool: 'list_notes', arguments: {} });
    expect(notesIn(list).filter((n) => n.text === text)).toHaveLength(2);
  });

  it('resolves (not rejects) with isError for an unknown tool or arguments the server refuses', async () => {
    const unknown = await hub.callTool({ server: 'notes', tool: 'no_such_tool', arguments: {} });
    expect(unknown.isError).toBe(true);
    expect(unknown.text).toContain('no_such_tool');

    const unknownEverything = await hub.callTool({ server: 'everything', tool: 'no_such_tool', arguments: {} });
    expect(unknownEverything.isError).toBe(true);

    const badArgs = await hub.callTool({ server: 'legacy', tool: 'add_note', arguments: { text: 42 } });
    expect(badArgs.isError).toBe(true);
    expect(badArgs.text).toMatch(/text/);
  });

  it('reads resources and prompts as text for the context gatherer', async () => {
    const text = `resource ${randomUUID()}`;
    await hub.callTool({ server: 'legacy', tool: 'add_note', arguments: { text } });
    const json = await hub.readResource('legacy', 'notes://all');
    expect((JSON.parse(json) as Array<{ text: string }>).map((n) => n.text)).toContain(text);

    // Listed for adaptive context (decision 0036): the server's own entries, with what it says of them.
    expect(await hub.listResources('legacy')).toContainEqual({ uri: 'notes://all', name: 'All notes', description: 'Every saved note as a JSON array.', mimeType: 'application/json' });

    const prompt = await hub.getPrompt('everything', 'args-prompt', { city: 'Oslo' });
    expect(prompt).toBe("user: What's weather in Oslo?");

    expect(await rejection(hub.readResource('notes', 'notes://no-such-resource'))).toBeInstanceOf(McpPermanentError);
    expect(await rejection(hub.getPrompt('nope', 'x'))).toBeInstanceOf(McpPermanentError);
  });

  it('rejects with McpPermanentError for an unknown or disabled server', async () => {
    const unknown = await rejection(hub.callTool({ server: 'nope', tool: 'x', arguments: {} }));
    expect(unknown).toBeInstanceOf(McpPermanentError);
    expect(unknown.name).toBe('McpPermanentError');
    expect(await rejection(hub.callTool({ server: 'off', tool: 'x', arguments: {} }))).toBeInstanceOf(McpPermanentError);
  });

  it('rejects with McpTransientError for an unreachable server, failing fast right after a failure', async () => {
    const attempts = (): number =>
      // A failed connect is logged at warn the first time and at debug while it fails the same way.
      logger.lines.filter((l) => /^MCP server (still )?unavailable/.test(l.msg) && (l.obj as { server?: string }).server === 'down').length;
    await new Promise((r) => setTimeout(r, 550)); // out of the fail-fast window of earlier tests
    const before = attempts();
    const first = await rejection(hub.callTool({ server: 'down', tool: 'x', arguments: {} }));
    expect(first).toBeInstanceOf(McpTransientError);
    expect(first.name).toBe('McpTransientError');
    expect(first.message).toContain('"down"');
    expect(first.message).not.toContain('s3cr3t');
    expect(attempts()).toBe(before + 1);
    // Right after a failed connect the hub does not try again: no new attempt, same kind of error.
    const second = await rejection(hub.callTool({ server: 'down', tool: 'x', arguments: {} }));
    expect(second).toBeInstanceOf(McpTransientError);
    expect(attempts()).toBe(before + 1);
  });

  it('reports progress notifications', async () => {
    for (const server of ['notes', 'web']) {
      const seen: Array<{ progress: number; total?: number; message?: string }> = [];
      const result = await hub.callTool({
        server,
        tool: 'slow_task',
        arguments: { seconds: 1 },
        onProgress: (p) => seen.push(p),
      });
      expect(result.isError).toBe(false);
      expect(seen.length).toBeGreaterThanOrEqual(3);
      expect(seen[0]?.total).toBe(1000);
      for (let i = 1; i < seen.length; i++) expect(seen[i]!.progress).toBeGreaterThan(seen[i - 1]!.progress);
    }
  });

  it('cancels promptly when the signal aborts, and the server sees the cancellation', async () => {
    // stdio: the server's stderr reaches us through the hub's debug log.
    const controller = new AbortController();
    const started = Date.now();
    const call = hub.callTool({
      server: 'notes',
      tool: 'slow_task',
      arguments: { seconds: 20 },
      signal: controller.signal,
      onProgress: () => controller.abort(),
    });
    const error = await rejection(call);
    expect(error.name).toBe('AbortError');
    expect(Date.now() - started).toBeLessThan(3_000);
    await waitFor('the stdio server to log the cancellation', () => /slow_task: cancelled/.test(logger.text()), 5_000);

    // Streamable HTTP: the server is our own child process; read its stderr directly.
    const httpController = new AbortController();
    const httpError = await rejection(
      hub.callTool({
        server: 'web',
        tool: 'slow_task',
        arguments: { seconds: 20 },
        signal: httpController.signal,
        onProgress: () => httpController.abort(),
      }),
    );
    expect(httpError.name).toBe('AbortError');
    await waitFor('the HTTP server to log the cancellation', () => web.stderr.some((l) => l.includes('slow_task: cancelled')), 5_000);

    // An already-aborted signal never reaches the server.
    const aborted = AbortSignal.abort();
    expect((await rejection(hub.callTool({ server: 'notes', tool: 'list_notes', arguments: {}, signal: aborted }))).name).toBe('AbortError');

    // The connection survived the cancellations.
    expect((await hub.callTool({ server: 'notes', tool: 'list_notes', arguments: {} })).isError).toBe(false);
  });

  it('turns a timeout into McpTransientError and keeps the connection', async () => {
    const pid = hub.serverPid('notes');
    // No onProgress, so the server sends no progress and nothing resets the timeout.
    const error = await rejection(hub.callTool({ server: 'notes', tool: 'slow_task', arguments: { seconds: 5 }, timeoutMs: 300 }));
    expect(error).toBeInstanceOf(McpTransientError);
    expect(error.message).toMatch(/timed out after 300 ms/);
    expect((await hub.callTool({ server: 'notes', tool: 'list_notes', arguments: {} })).isError).toBe(false);
    expect(hub.serverPid('notes')).toBe(pid);
  });

  it('respawns a crashed stdio server on the next call', async () => {
    await hub.callTool({ server: 'notes', tool: 'list_notes', arguments: {} });
    const pid = hub.serverPid('notes');
    expect(pid).toBeDefined();
    process.kill(pid!, 'SIGKILL');
    await waitFor('the hub to notice the crash', () => hub.serverPid('notes') === undefined);

    const after = await hub.callTool({ server: 'notes', tool: 'list_notes', arguments: {} });
    expect(after.isError).toBe(false);
    const newPid = hub.serverPid('notes');
    expect(newPid).toBeDefined();
    expect(newPid).not.toBe(pid);
    expect(processGone(pid!)).toBe(true);
    // Notes live in the data file, so they survived the crash.
    expect(notesIn(after).length).toBeGreaterThan(0);
  });

  it('fails an in-flight call with McpTransientError when its server dies, then recovers', async () => {
    const pid = hub.serverPid('notes') ?? (await hub.callTool({ server: 'notes', tool: 'list_notes', arguments: {} }), hub.serverPid('notes'));
    let killed = false;
    const error = await rejection(
      hub.callTool({
        server: 'notes',
        tool: 'slow_task',
        arguments: { seconds: 20 },
        onProgress: () => {
          if (!killed) {
            killed = true;
            process.kill(pid!, 'SIGKILL');
          }
        },
      }),
    );
    expect(error).toBeInstanceOf(McpTransientError);
    expect(error.message).toMatch(/connection closed/);
    expect((await hub.callTool({ server: 'notes', tool: 'list_notes', arguments: {} })).isError).toBe(false);
    expect(hub.serverPid('notes')).not.toBe(pid);
  });

  it('opens a new HTTP session after the server lost the old one', async () => {
    const dataFile = path.join(dataDir, 'restart.json');
    let server = await startNotesHttp(notesScript, 'http', dataFile);
    const h = newHub(makeConfig({ web: { url: server.url } }));
    try {
      await h.callTool({ server: 'web', tool: 'add_note', arguments: { text: 'before restart' } });
      const port = server.port;
      await server.stop();
      // Same port, new process: every old session id is unknown there now (HTTP 404).
      server = await startNotesHttp(notesScript, 'http', dataFile, port);
      let result: ToolOutcome | undefined;
      for (let attempt = 0; attempt < 5 && !result; attempt++) {
        try {
          result = await h.callTool({ server: 'web', tool: 'list_notes', arguments: {} });
        } catch (error) {
          // What Temporal would retry: only transient failures are acceptable here.
          expect(error).toBeInstanceOf(McpTransientError);
          await new Promise((r) => setTimeout(r, 600));
        }
      }
      expect(result?.isError).toBe(false);
      expect(notesIn(result!).map((n) => n.text)).toContain('before restart');
    } finally {
      await h.close();
      await server.stop();
    }
  });

  it('shares one connect between concurrent first uses', async () => {
    const log = new CapturingLogger();
    const h = newHub(makeConfig({ notes: stdioNotes(path.join(dataDir, 'concurrent.json')) }), log);
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) => h.callTool({ server: 'notes', tool: 'add_note', arguments: { text: `c${i}` } })),
    );
    expect(results.every((r) => !r.isError)).toBe(true);
    expect(log.lines.filter((l) => l.msg.startsWith('MCP server connected'))).toHaveLength(1);
    const stored = JSON.parse(readFileSync(path.join(dataDir, 'concurrent.json'), 'utf8')) as { notes: unknown[] };
    expect(stored.notes).toHaveLength(6);
    await h.close();
  });

  it('does not cache a failed connect: a later use retries', async () => {
    const dataFile = path.join(dataDir, 'late.json');
    const port = await unusedPort();
    const h = newHub(makeConfig({ late: { url: `http://127.0.0.1:${port}/mcp` } }));
    const [status] = await h.status();
    expect(status).toMatchObject({ server: 'late', state: 'unavailable' });
    const server = await startNotesHttp(notesScript, 'http', dataFile, port);
    try {
      await new Promise((r) => setTimeout(r, 550)); // past the fail-fast window
      const [again] = await h.status();
      expect(again).toMatchObject({ server: 'late', state: 'connected', transport: 'streamable-http', toolCount: 3 });
    } finally {
      await h.close();
      await server.stop();
    }
  });

  it('follows pagination, caches the tool list, and refreshes it on tools/list_changed', async () => {
    const h = newHub(makeConfig({ raw: { command: 'node', args: ['-e', RAW_SERVER] } }));
    const stats = async (): Promise<number> => Number((await h.callTool({ server: 'raw', tool: 'stats', arguments: {} })).text);
    const names = async (): Promise<string[]> => (await h.catalog()).tools.map((t) => t.name);

    expect(await names()).toEqual(['alpha', 'beta', 'refuse', 'malformed', 'internal', 'change', 'stats'].map((t) => `raw__${t}`));
    expect(await stats()).toBe(4); // 7 tools, 2 per page: one listing
    await names();
    await h.status();
    expect(await stats()).toBe(4); // served from the cache

    await h.callTool({ server: 'raw', tool: 'change', arguments: {} });
    let listed: string[] = [];
    // Generous: on a loaded 2-core machine the notification can take a while to arrive.
    const deadline = Date.now() + 15_000;
    while (!listed.includes('raw__delta') && Date.now() < deadline) {
      // A cached listing resolves in microtasks only: without a real pause, the loop would starve the
      // I/O that delivers the notification.
      await new Promise((resolve) => setTimeout(resolve, 20));
      listed = await names();
    }
    expect(listed).toContain('raw__delta');
    expect(await stats()).toBe(8);
    await h.close();
  });

  it('maps JSON-RPC errors and malformed results: refusals to isError, server trouble to McpTransientError', async () => {
    const h = newHub(makeConfig({ raw: { command: 'node', args: ['-e', RAW_SERVER] } }));
    const refused = await h.callTool({ server: 'raw', tool: 'refuse', arguments: {} });
    expect(refused).toEqual({ isError: true, text: 'Tool "refuse" on server "raw" failed: argument "x" is required' });

    const unknown = await h.callTool({ server: 'raw', tool: 'nope', arguments: {} });
    expect(unknown.isError).toBe(true);
    expect(unknown.text).toContain('Unknown tool: nope');

    const malformed = await h.callTool({ server: 'raw', tool: 'malformed', arguments: {} });
    expect(malformed.isError).toBe(true);
    expect(malformed.text).toContain('malformed');

    const internal = await rejection(h.callTool({ server: 'raw', tool: 'internal', arguments: {} }));
    expect(internal).toBeInstanceOf(McpTransientError);
    expect(internal.message).toContain('database unavailable');

    // None of these cost the connection.
    expect(await h.callTool({ server: 'raw', tool: 'alpha', arguments: {} })).toEqual({ isError: false, text: 'ran alpha' });
    await h.close();
  });

  it('reports stdio servers that cannot start, with a short reason and the stderr tail in the log', async () => {
    const log = new CapturingLogger();
    const h = newHub(
      makeConfig({
        exits: { command: 'node', args: ['-e', 'process.stderr.write("boom: no API key\\n"); process.exit(3)'] },
        nocmd: { command: 'definitely-not-a-command-4711' },
        nocwd: { command: 'node', cwd: '/definitely/not/a/dir' },
      }),
      log,
    );
    const statuses = Object.fromEntries((await h.status()).map((s) => [s.server, s]));
    expect(statuses['exits']).toMatchObject({ state: 'unavailable', transport: 'stdio' });
    expect(statuses['exits']?.error).toMatch(/exited before completing the MCP handshake/);
    expect(statuses['nocmd']?.error).toMatch(/ENOENT/);
    expect(statuses['nocwd']?.error).toMatch(/working directory does not exist/);
    const warn = log.lines.find((l) => l.level === 'warn' && (l.obj as { server?: string }).server === 'exits');
    expect(JSON.stringify(warn?.obj)).toContain('boom: no API key');
    await h.close();
  });

  it('a server that keeps failing the same way is warned about once; the retries in between go to debug', async () => {
    const log = new CapturingLogger();
    const h = newHub(makeConfig({ nocmd: { command: 'definitely-not-a-command-4711' } }), log);
    const about = (level: string) => log.lines.filter((l) => l.level === level && (l.obj as { server?: string }).server === 'nocmd');
    // Every status() past the fail-fast window tries to connect again, as catalog refreshes do.
    await waitFor('three failed reconnects', () => {
      void h.status();
      return about('debug').filter((l) => l.msg.startsWith('MCP server still unavailable')).length >= 3;
    }, 30_000);
    expect(about('warn').filter((l) => l.msg.startsWith('MCP server unavailable'))).toHaveLength(1);
    await h.close();
  });

  it('reconfigure() adds, changes and removes servers; unchanged ones keep their connection, in-flight calls finish', async () => {
    const h = newHub(makeConfig({ keep: stdioNotes(path.join(dataDir, 'keep.json')), edit: stdioNotes(path.join(dataDir, 'edit-1.json')) }));
    await h.connectAll();
    const keepPid = h.serverPid('keep');
    const oldEditPid = h.serverPid('edit');
    expect(keepPid).toBeDefined();
    expect(oldEditPid).toBeDefined();

    // A call in flight (the server reported progress) on the server whose settings change.
    let started!: () => void;
    const inFlight = new Promise<void>((resolve) => (started = resolve));
    const slow = h.callTool({ server: 'edit', tool: 'slow_task', arguments: { seconds: 1 }, onProgress: () => started() });
    await inFlight;
    const summary = h.reconfigure(
      makeConfig({ keep: stdioNotes(path.join(dataDir, 'keep.json')), edit: stdioNotes(path.join(dataDir, 'edit-2.json')), web: { url: web.url } }),
    );
    expect(summary).toEqual({ added: ['web'], removed: [], changed: ['edit'] });
    const finished = await slow;
    expect(finished.isError).toBe(false);
    expect(finished.text).toMatch(/slow_task finished after 1s/);
    // The old child goes once its call is done; the next use starts one with the new settings.
    await waitFor('the replaced server to exit', () => processGone(oldEditPid!));
    await h.callTool({ server: 'edit', tool: 'add_note', arguments: { text: 'after the edit' } });
    expect(h.serverPid('edit')).not.toBe(oldEditPid);
    expect(readFileSync(path.join(dataDir, 'edit-2.json'), 'utf8')).toContain('after the edit');
    expect(h.serverPid('keep')).toBe(keepPid);
    const names = (await h.catalog()).tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['keep__add_note', 'edit__add_note', 'web__add_note']));

    const editPid = h.serverPid('edit');
    expect(h.reconfigure(makeConfig({ keep: stdioNotes(path.join(dataDir, 'keep.json')) }))).toEqual({ added: [], removed: ['edit', 'web'], changed: [] });
    await waitFor('the removed server to exit', () => processGone(editPid!));
    expect(await rejection(h.callTool({ server: 'edit', tool: 'list_notes', arguments: {} }))).toBeInstanceOf(McpPermanentError);
    expect((await h.catalog()).servers.map((s) => s.server)).toEqual(['keep']);
    expect(h.serverPid('keep')).toBe(keepPid);
  });

  it('close() terminates stdio children, is idempotent, and later calls fail transiently', async () => {
    const h = newHub(
      makeConfig({
        notes: stdioNotes(path.join(dataDir, 'close.json')),
        everything: { command: 'node', args: [EVERYTHING_SERVER, 'stdio'] },
      }),
    );
    const statuses = await h.connectAll();
    expect(statuses.map((s) => s.state)).toEqual(['connected', 'connected']);
    const pids = [h.serverPid('notes'), h.serverPid('everything')];
    expect(pids.every((p) => typeof p === 'number')).toBe(true);
    await Promise.all([h.close(), h.close()]);
    await h.close();
    for (const pid of pids) expect(processGone(pid!)).toBe(true);
    expect(await rejection(h.callTool({ server: 'notes', tool: 'list_notes', arguments: {} }))).toBeInstanceOf(McpTransientError);
  });
});
