import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import pino from 'pino';
import { createActivities } from '../../src/activities';
import { parseMcpConfig } from '../../src/mcp/config';
import { McpServerHub } from '../../src/mcp/pool';
import type { ToolOutcome } from '../../src/shared/tool-types';
import { NOTES_SERVER, requireBuild } from '../helpers/system';
import { waitFor } from '../helpers/http';
import { toolActivities } from '../helpers/tool-activities';

/** The tool-call activity with the real hub and our notes server over stdio. */
let dir: string;
let hub: McpServerHub;
let acts: ReturnType<typeof createActivities>;

beforeAll(() => {
  requireBuild();
  dir = mkdtempSync(path.join(tmpdir(), 'dmh-acts-'));
  const config = parseMcpConfig(
    {
      mcpServers: {
        notes: { command: process.execPath, args: [NOTES_SERVER, '--stdio', '--data', path.join(dir, 'notes.json')] },
        offline: { url: 'http://127.0.0.1:9/mcp' },
      },
    },
    {},
    dir,
  );
  ({ hub, acts } = toolActivities(config));
});

afterAll(async () => {
  await hub.close();
  rmSync(dir, { recursive: true, force: true });
});

const input = (tool: string, args: Record<string, unknown>, key = `k-${Math.random()}`) => ({
  turnId: 'turn-t-1',
  server: 'notes',
  tool,
  llmName: `notes__${tool}`,
  arguments: args,
  idempotencyKey: key,
});

function stored(): { notes: Array<{ text: string }> } {
  return JSON.parse(readFileSync(path.join(dir, 'notes.json'), 'utf8')) as { notes: Array<{ text: string }> };
}

test('the idempotency key reaches the server in _meta: a repeated key adds one note', async () => {
  const env = new MockActivityEnvironment();
  const first = (await env.run(acts.callTool, input('add_note', { text: 'once' }, 'same-key'))) as ToolOutcome;
  const again = (await env.run(acts.callTool, input('add_note', { text: 'once' }, 'same-key'))) as ToolOutcome;
  expect(first.isError).toBe(false);
  expect(again.text).toBe(first.text);
  expect(stored().notes.filter((n) => n.text === 'once')).toHaveLength(1);
});

test('arguments are validated against the inputSchema before the call', async () => {
  const before = stored().notes.length;
  const out = (await new MockActivityEnvironment().run(acts.callTool, input('add_note', { text: 7 }))) as ToolOutcome;
  expect(out.isError).toBe(true);
  expect(out.text).toMatch(/^Invalid arguments for notes__add_note: .*text/);
  expect(stored().notes.length).toBe(before);
});

test('progress notifications become heartbeats', async () => {
  const env = new MockActivityEnvironment();
  const beats: unknown[] = [];
  env.on('heartbeat', (d: unknown) => beats.push(d));
  const out = (await env.run(acts.callTool, input('slow_task', { seconds: 1 }))) as ToolOutcome;
  expect(out.isError).toBe(false);
  expect(beats.some((b) => typeof b === 'object' && b !== null && 'progress' in b)).toBe(true);
});

test('cancelling the activity cancels the MCP request promptly', async () => {
  const env = new MockActivityEnvironment();
  const beats: unknown[] = [];
  env.on('heartbeat', (d: unknown) => beats.push(d));
  const p = env.run(acts.callTool, input('slow_task', { seconds: 20 })).catch((e: unknown) => e);
  // Cancelled once the server works on it (its progress came back as a heartbeat): the request is in flight.
  await waitFor(async () => (beats.some((b) => typeof b === 'object' && b !== null && 'progress' in b) ? true : undefined), 30_000, 10);
  const cancelled = Date.now();
  env.cancel();
  expect(await p).toBeInstanceOf(CancelledFailure);
  // Well before the task's 20 s.
  expect(Date.now() - cancelled).toBeLessThan(5_000);
});

test('a call the turn cancelled is said at debug, never as a failed call', async () => {
  const lines: Array<{ level: number; msg: string }> = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line) as { level: number; msg: string }) });
  const { acts: logged } = toolActivities(parseMcpConfig({ mcpServers: {} }, {}, dir), { hub, logger });
  const env = new MockActivityEnvironment();
  const beats: unknown[] = [];
  env.on('heartbeat', (d: unknown) => beats.push(d));
  const p = env.run(logged.callTool, input('slow_task', { seconds: 20 })).catch((e: unknown) => e);
  await waitFor(async () => (beats.some((b) => typeof b === 'object' && b !== null && 'progress' in b) ? true : undefined), 30_000, 10);
  env.cancel();
  expect(await p).toBeInstanceOf(CancelledFailure);
  const stopped = lines.filter((l) => l.msg.startsWith('tool call stopped') || l.msg.startsWith('tool call failed'));
  expect(stopped.map((l) => [l.level, l.msg.split(':')[0]])).toEqual([[20, 'tool call stopped']]);
});

test('an unreachable server is a retryable failure, not a tool result', async () => {
  const err = await new MockActivityEnvironment()
    .run(acts.callTool, { ...input('anything', {}), server: 'offline', llmName: 'offline__anything' })
    .catch((e: unknown) => e);
  expect(err).toBeInstanceOf(ApplicationFailure);
  expect((err as ApplicationFailure).nonRetryable).toBe(false);
  expect((err as ApplicationFailure).type).toBe('McpServerUnavailable');
});

test('a tool that vanished from a live server is a tool result for the model', async () => {
  const out = (await new MockActivityEnvironment().run(acts.callTool, input('no_such_tool', {}))) as ToolOutcome;
  expect(out).toEqual({ isError: true, text: 'Tool no_such_tool no longer exists on server notes.' });
});

test('context gathering reads resources and reports failures without throwing', async () => {
  const out = await new MockActivityEnvironment().run(acts.gatherContext, {
    resources: [
      { server: 'notes', uri: 'notes://all' },
      { server: 'offline', uri: 'x://y' },
    ],
    prompts: [],
  });
  const ctx = out as Awaited<ReturnType<typeof acts.gatherContext>>;
  expect(ctx.pieces).toHaveLength(1);
  expect(ctx.pieces[0]?.text).toContain('once');
  expect(ctx.failures).toEqual([{ server: 'offline', ref: 'x://y', error: expect.any(String) }]);
});

test('with maxToolResultChars, the activity returns what the model will see: the text cut with its note, no oversized structured content', async () => {
  const config = parseMcpConfig({ mcpServers: { notes: { command: process.execPath, args: [NOTES_SERVER, '--stdio', '--data', path.join(dir, 'notes.json')] } } }, {}, dir);
  const bounded = toolActivities(config, { maxToolResultChars: () => 120 });
  try {
    const env = new MockActivityEnvironment();
    const long = `long-${'n'.repeat(500)}`;
    const added = (await env.run(bounded.acts.callTool, input('add_note', { text: long }))) as ToolOutcome;
    expect(added.isError).toBe(false);
    expect(added.text.length).toBeLessThanOrEqual(120);
    expect(added.text).toMatch(/^Saved note [0-9a-f-]{36}: long-n+\n\[truncated: \d+ more characters\]$/);
    // The server got and kept the whole note; only what travels back is bounded.
    expect(stored().notes.some((n) => n.text === long)).toBe(true);
    const listed = (await env.run(bounded.acts.callTool, input('list_notes', {}))) as ToolOutcome;
    expect(listed.structuredContent).toBeUndefined();
    const whole = (await env.run(acts.callTool, input('list_notes', {}))) as ToolOutcome;
    expect(JSON.stringify(whole.structuredContent)).toContain(long);
  } finally {
    await bounded.hub.close();
  }
});

test("a call beats while a fresh worker's catalog is still coming, keeping what the attempt before recorded", async () => {
  // The catalog answers only once two heartbeats have left: without them this attempt would have
  // timed out before it began (a worker still connecting its servers).
  const beats: unknown[] = [];
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const slow = Object.create(hub) as McpServerHub;
  slow.catalog = async (...args: Parameters<McpServerHub['catalog']>) => {
    await gate;
    return await hub.catalog(...args);
  };
  const { acts: slowActs } = toolActivities(parseMcpConfig({ mcpServers: {} }, {}, dir), { hub: slow });
  const env = new MockActivityEnvironment({ attempt: 2, heartbeatTimeoutMs: 3_000, heartbeatDetails: { sent: true, worker: 'gone@elsewhere' } });
  env.on('heartbeat', (d: unknown) => {
    beats.push(d);
    if (beats.length === 2) release();
  });
  // Listing notes may run again (it is read-only): the call goes on and answers.
  const out = (await env.run(slowActs.callTool, input('list_notes', {}))) as ToolOutcome;
  expect(out.isError).toBe(false);
  const first = beats[0] as { sent?: boolean; worker?: string };
  expect(first.sent).toBe(true);
  expect(first.worker).not.toBe('gone@elsewhere');
});
