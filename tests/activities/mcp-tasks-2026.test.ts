/**
 * MCP tasks on the 2026-07-28 wire (the tasks extension, decision 0038), through the tool activity on
 * the real hub, against a 2026-07-28 server that makes its `research` tool a task
 * (tests/helpers/modern-tasks-server.ts). What tests/e2e/tasks.e2e.test.ts proves on 2025-11-25:
 * the call returns the result through the task; the task's id is kept in the heartbeat details, and
 * an attempt after the worker is gone waits for the same task (no second call); cancelling the
 * activity (the turn) cancels the task on the server. A question inside a task takes the user's path.
 * The test finishes each task itself, so nothing waits on time.
 */
import { CancelledFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import pino from 'pino';
import { parseMcpConfig, type McpConfig } from '../../src/mcp/config';
import { ElicitationSession, elicitFromCaller } from '../../src/mcp/elicitation';
import { McpServerHub } from '../../src/mcp/pool';
import { callerContext } from '../../src/mcp/user-token';
import type { ToolTaskRef } from '../../src/mcp/types';
import { waitFor } from '../helpers/http';
import { finish, startTasksServer } from '../helpers/modern-tasks-server';
import { toolActivities } from '../helpers/tool-activities';

let server: Awaited<ReturnType<typeof startTasksServer>>;
let config: McpConfig;
const hubs: McpServerHub[] = [];

beforeEach(async () => {
  server = await startTasksServer();
  config = parseMcpConfig({ mcpServers: { tasks: { url: server.url, protocol: '2026-07-28', timeouts: { callMs: 10_000 } } } }, {}, process.cwd());
});

afterEach(async () => {
  await Promise.all(hubs.splice(0).map((h) => h.close()));
  await server.close();
});

/** A worker: its own hub and activities. */
function worker(): ReturnType<typeof toolActivities> {
  const w = toolActivities(config);
  hubs.push(w.hub);
  return w;
}

const call = (tool: string, args: Record<string, unknown>) => ({
  turnId: 'turn-t-1',
  server: 'tasks',
  tool,
  llmName: `tasks__${tool}`,
  arguments: args,
  idempotencyKey: `turn-t-1/step-1/${tool}`,
});

type Beat = { task?: ToolTaskRef; sent?: boolean };

/** Runs the activity in `env`, recording its heartbeats; resolves once the server has made a task. */
async function startCall(env: MockActivityEnvironment, acts: ReturnType<typeof toolActivities>['acts'], tool: string, args: Record<string, unknown>) {
  const beats: Beat[] = [];
  env.on('heartbeat', (d: unknown) => beats.push(d as Beat));
  const run = env.run(acts.callTool, call(tool, args)).then(
    (outcome): { outcome?: unknown; error?: unknown } => ({ outcome }),
    (error: unknown): { outcome?: unknown; error?: unknown } => ({ error }),
  );
  let settled: { outcome?: unknown; error?: unknown } | undefined;
  void run.then((r) => (settled = r));
  const taskId = await waitFor(async () => {
    if (settled) throw new Error(`the call ended before its task was reported: ${JSON.stringify(settled.outcome) ?? String(settled.error)}`);
    return beats.find((b) => b.task)?.task?.taskId;
  }, 20_000, 20);
  return { run, beats, taskId };
}

test('a tool the server runs as a task: the call returns its result through the task; a plain answer stays plain', async () => {
  const { acts } = worker();
  const env = new MockActivityEnvironment();
  const { run, beats, taskId } = await startCall(env, acts, 'research', { topic: 'tidal power' });
  expect(server.state.tasks.get(taskId)?.status).toBe('working');
  finish(server.state, taskId);
  const { outcome, error } = await run;
  expect(error).toBeUndefined();
  expect(outcome).toMatchObject({ isError: false, text: 'Report on tidal power.' });
  // Sent first (it might have been answered at once), then its task, for a later attempt to find
  // (beats before the send carry only the worker).
  expect(beats.find((b) => b.sent !== undefined || b.task !== undefined)).toMatchObject({ sent: true });
  expect(beats).toContainEqual(expect.objectContaining({ task: { taskId } }));
  expect(server.state.calls).toEqual([{ tool: 'research', declared: true }]);
  expect(server.state.gets).toBeGreaterThan(0);

  // A tool the server answers at once: a plain result, no task; its progress reaches the activity.
  const greetEnv = new MockActivityEnvironment();
  const greetBeats: { progress?: unknown }[] = [];
  greetEnv.on('heartbeat', (d: unknown) => greetBeats.push(d as { progress?: unknown }));
  const greet = await greetEnv.run(acts.callTool, call('greet', { name: 'Ada' }));
  expect(greet).toMatchObject({ isError: false, text: 'Hello, Ada.' });
  expect(greetBeats).toContainEqual(expect.objectContaining({ progress: { progress: 1, total: 1, message: 'working' } }));
  expect(server.state.tasks.size).toBe(1);
});

test('the worker gone while the task runs: the next attempt waits for the same task, the tool is not called again', async () => {
  const first = worker();
  const { run, beats, taskId } = await startCall(new MockActivityEnvironment(), first.acts, 'research', { topic: 'glacier retreat' });
  // The worker's connections go away; its attempt ends without a result (and without cancelling the
  // task), retryable: the task is there to wait for (a SIGKILLed worker's attempt just times out).
  await first.hub.close();
  expect((await run).error).toMatchObject({ type: 'McpTransientError', nonRetryable: false });
  expect(server.state.tasks.get(taskId)?.status).toBe('working');
  expect(server.state.cancels).toEqual([]);

  // The next attempt, on another worker, starts from the last heartbeat's details.
  const second = worker();
  const env = new MockActivityEnvironment({ attempt: 2, heartbeatDetails: beats.at(-1) });
  const gets = server.state.gets;
  const resumed = env.run(second.acts.callTool, call('research', { topic: 'glacier retreat' }));
  await waitFor(async () => (server.state.gets > gets ? true : undefined), 20_000, 20);
  finish(server.state, taskId);
  expect(await resumed).toMatchObject({ isError: false, text: 'Report on glacier retreat.' });
  expect(server.state.calls).toHaveLength(1);
  expect(server.state.tasks.size).toBe(1);
});

test('cancelling the activity (the turn) while the task runs cancels the task on the server', async () => {
  const { acts } = worker();
  const env = new MockActivityEnvironment();
  const { run, taskId } = await startCall(env, acts, 'research', { topic: 'deep sea vents' });
  env.cancel();
  const { error } = await run;
  expect(error).toBeInstanceOf(CancelledFailure);
  expect(server.state.cancels).toEqual([taskId]);
  expect(server.state.tasks.get(taskId)?.status).toBe('cancelled');
});

test('a question inside a task: unanswered, the call stops to ask the user (and the task is cancelled); answered, the task goes on with it', async () => {
  const hub = new McpServerHub(config, { elicit: elicitFromCaller, logger: pino({ level: 'silent' }) });
  hubs.push(hub);
  const ask = (session: ElicitationSession) =>
    callerContext.run({ principal: 't:u', turnId: 'turn-t-2', elicitation: session }, () =>
      hub.callTool({ server: 'tasks', tool: 'approve', arguments: { what: 'the budget' }, signal: session.signal }),
    );

  const first = new ElicitationSession();
  await expect(ask(first)).rejects.toMatchObject({ name: 'AbortError' });
  expect(first.asked).toMatchObject({ message: 'Approve the budget?' });
  const [asked] = [...server.state.tasks.values()];
  expect(asked?.status).toBe('cancelled');

  const second = new ElicitationSession([{ message: 'Approve the budget?', action: 'accept', content: { ok: true } }]);
  expect((await ask(second)).text).toBe('Approval of the budget: approved.');
  expect(second.asked).toBeUndefined();
  const answered = [...server.state.tasks.values()].find((t) => t.status === 'completed');
  expect(answered?.answers).toEqual({ approval: { action: 'accept', content: { ok: true } } });
});
