/**
 * Fixtures for the school servers' tests: a private build of the servers, real server processes
 * (stdio through the SDK client transport, Streamable HTTP as a child process), and call helpers
 * that send the `_meta` keys the host sends.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { RequestOptions } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { CallToolResult, Progress } from '@modelcontextprotocol/sdk/types.js';
import { IDEMPOTENCY_KEY_META_KEY, TRACE_META_KEY, USER_CONTEXT_META_KEY } from '../../src/shared/meta';
import { compileExamples, waitForExit } from '../helpers/compile-examples';

export const REPO_ROOT = path.resolve(__dirname, '../..');

export type SchoolServerName = 'admin' | 'payments' | 'comms' | 'student' | 'teacher';
export const SERVER_NAMES: readonly SchoolServerName[] = ['admin', 'payments', 'comms', 'student', 'teacher'];

// ------------------------------------------------------------------ build

/** Compiles the school servers (see compileExamples) and returns each one's script. */
export async function buildSchoolServers(): Promise<Record<SchoolServerName, string>> {
  const scripts = await compileExamples(
    SERVER_NAMES.map((n) => `examples/servers/school/${n}-server.ts`),
    'school-servers',
  );
  return Object.fromEntries(SERVER_NAMES.map((n, i) => [n, scripts[i] as string])) as Record<SchoolServerName, string>;
}

// ------------------------------------------------------------------ temp data

export function tempDir(prefix = 'school-test-'): { dir: string; file: (name?: string) => string; remove: () => void } {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  return {
    dir,
    file: (name = 'school.json') => path.join(dir, name),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

// ------------------------------------------------------------------ processes

export interface Connected {
  client: Client;
  stderr: string[];
  pid: number;
  close(): Promise<void>;
}

function collectLines(into: string[]): (chunk: Buffer) => void {
  let partial = '';
  return (chunk) => {
    partial += chunk.toString();
    const lines = partial.split('\n');
    partial = lines.pop() ?? '';
    into.push(...lines.filter(Boolean));
  };
}

/** Spawns `script --stdio --data FILE` through the SDK's stdio client transport and connects. */
export async function connectStdio(script: string, dataFile: string, env: Record<string, string> = {}): Promise<Connected> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [script, '--stdio', '--data', dataFile],
    env: { ...getDefaultEnvironment(), ...env },
    cwd: REPO_ROOT,
    stderr: 'pipe',
  });
  const stderr: string[] = [];
  transport.stderr?.on('data', collectLines(stderr));
  const client = new Client({ name: 'school-test', version: '0.0.0' });
  try {
    await client.connect(transport);
  } catch (error) {
    await transport.close().catch(() => undefined);
    throw new Error(`${path.basename(script)} did not start: ${(error as Error).message}\n${stderr.join('\n')}`);
  }
  const pid = transport.pid;
  if (pid === null) throw new Error('no pid for the stdio server');
  return {
    client,
    stderr,
    pid,
    close: async () => {
      await client.close().catch(() => undefined);
      await waitForPidExit(pid, 5_000);
    },
  };
}

function processGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return false;
  } catch {
    return true;
  }
}

export async function waitForPidExit(pid: number, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!processGone(pid)) {
    if (Date.now() > deadline) {
      process.kill(pid, 'SIGKILL');
      await waitFor(`pid ${pid} to exit`, () => processGone(pid), 5_000);
      return;
    }
    await new Promise((r) => setTimeout(r, 25));
  }
}

export interface HttpServer {
  child: ChildProcess;
  url: string;
  stderr: string[];
  stop(): Promise<void>;
}

/** Starts `script --http --port 0 --data FILE [args]` and waits for its `<NAME>_SERVER_URL=` line. */
export function startHttpServer(script: string, urlVariable: string, dataFile: string, env: Record<string, string> = {}, args: readonly string[] = []): Promise<HttpServer> {
  const child = spawn(process.execPath, [script, '--http', '--port', '0', '--data', dataFile, ...args], {
    cwd: REPO_ROOT,
    env: { ...getDefaultEnvironment(), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const stderr: string[] = [];
  child.stderr?.on('data', collectLines(stderr));
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
      reject(new Error(`${path.basename(script)} (http) did not start: ${stderr.join('\n')}`));
    }, 30_000);
    const pattern = new RegExp(`${urlVariable}=(\\S+)`);
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = pattern.exec(out);
      if (match?.[1]) {
        clearTimeout(timer);
        resolve({ child, url: match[1], stderr, stop });
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${path.basename(script)} (http) exited with ${code}: ${stderr.join('\n')}`));
    });
  });
}

export async function connectHttp(url: string): Promise<Client> {
  const client = new Client({ name: 'school-test', version: '0.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return client;
}

// ------------------------------------------------------------------ calls

export interface UserContext {
  id?: string;
  role?: string;
  tenant?: string;
  scopes?: string[];
}

export interface CallOptions {
  /** The idempotency key; default: a fresh one per call (as the host does per tool call). */
  key?: string | null;
  user?: UserContext;
  onprogress?: (progress: Progress) => void;
  signal?: AbortSignal;
  timeoutMs?: number;
}

export async function callTool(client: Client, name: string, args: Record<string, unknown>, opts: CallOptions = {}): Promise<CallToolResult> {
  const meta: Record<string, unknown> = { [TRACE_META_KEY]: `test-${name}` };
  const key = opts.key === undefined ? `test/${randomUUID()}` : opts.key;
  if (key !== null) meta[IDEMPOTENCY_KEY_META_KEY] = key;
  if (opts.user) meta[USER_CONTEXT_META_KEY] = opts.user;
  const requestOptions: RequestOptions = { timeout: opts.timeoutMs ?? 30_000 };
  if (opts.onprogress) requestOptions.onprogress = opts.onprogress;
  if (opts.signal) requestOptions.signal = opts.signal;
  return (await client.callTool({ name, arguments: args, _meta: meta }, undefined, requestOptions)) as CallToolResult;
}

export function textOf(result: CallToolResult): string {
  return result.content.map((c) => (c.type === 'text' ? c.text : '')).join('');
}

/** The JSON body of a successful result; fails the test with the server's message otherwise. */
export function bodyOf<T = Record<string, unknown>>(result: CallToolResult): T {
  if (result.isError) throw new Error(`tool refused: ${textOf(result)}`);
  return JSON.parse(textOf(result)) as T;
}

export async function readJsonResource<T = unknown>(client: Client, uri: string, user?: UserContext): Promise<T> {
  const result = await client.readResource({ uri, ...(user ? { _meta: { [USER_CONTEXT_META_KEY]: user } } : {}) });
  const first = result.contents[0];
  if (!first || !('text' in first)) throw new Error(`resource ${uri} has no text`);
  return JSON.parse(first.text) as T;
}

export async function waitFor(what: string, predicate: () => boolean, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
