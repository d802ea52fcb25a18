/**
 * MCP tasks on 2026-07-28 (the tasks extension, decision 0038) through whole turns on real processes,
 * as tests/e2e/tasks.e2e.test.ts proves them on 2025-11-25: a 2026 server (protocol `auto`) that makes
 * its `research` tool a task (tests/helpers/modern-tasks-server.ts, in this process, so the test ends
 * each task itself). The turn gets the result through the task; a worker SIGKILLed once the task's id
 * is in the activity's heartbeat details is replaced, and the next worker waits for the same task (the
 * tool is not called again); cancelling the turn cancels the task on the server.
 */
import { heartbeatTask } from '../helpers/heartbeat';
import { getJson, postJson, postMessage, readSse, waitFor } from '../helpers/http';
import { finish, startTasksServer } from '../helpers/modern-tasks-server';
import { exampleRulesWith, startSystem, type TestSystem } from '../helpers/system';

let lab: Awaited<ReturnType<typeof startTasksServer>>;
let sys: TestSystem;

beforeAll(async () => {
  lab = await startTasksServer();
  sys = await startSystem({
    rules: exampleRulesWith({
      name: 'research-2026',
      match: '(?i)^look into (.+)$',
      steps: [{ toolCalls: [{ name: 'lab__research', arguments: { topic: '{{match.1}}' } }] }, { text: '{{tool:lab__research}}' }],
    }),
    extraServers: { lab: { url: lab.url, description: 'A 2026-07-28 server offering the tasks extension (protocol: auto)' } },
    // Heartbeats are throttled to 80% of the timeout: a short one lets the task's id reach Temporal soon.
    host: { timeouts: { toolHeartbeatMs: 3_000 } },
  });
}, 120_000);

afterAll(async () => {
  await sys?.stop();
  await lab?.close();
});

/** The task a topic's call made on the server, once it exists. */
const taskOf = (topic: string) => waitFor(async () => [...lab.state.tasks.values()].find((t) => t.text === `Report on ${topic}.`), 60_000);

test('a tool the 2026 server runs as a task: the turn gets its result through the task', async () => {
  const post = await postMessage(sys.apiUrl, 'tasks-2026', 'look into tidal power');
  const task = await taskOf('tidal power');
  finish(lab.state, task.taskId);
  const events = await readSse(`${sys.apiUrl}/v1/turns/${post.body.turnId}/events`, { timeoutMs: 60_000 });
  expect(events.at(-1)?.event).toBe('done');
  expect((await getJson(`${sys.apiUrl}/v1/turns/${post.body.turnId}`)).body.text).toContain('Report on tidal power.');
  expect(lab.state.calls.filter((c) => c.tool === 'research')).toEqual([{ tool: 'research', declared: true }]);
});

test('a worker SIGKILLed while the task runs: the next worker waits for the same task, the tool is not called again', async () => {
  const calls = lab.state.calls.length;
  const post = await postMessage(sys.apiUrl, 'tasks-2026-crash', 'look into glacier retreat');
  const task = await taskOf('glacier retreat');
  expect(await heartbeatTask(sys.client, post.body.turnId as string)).toBe(task.taskId);
  await sys.worker.kill();
  const gets = lab.state.gets;
  const replacement = await sys.startWorker({ LOG_LEVEL: 'info' });
  sys.worker = replacement;
  // The next attempt asks the server about the task; only then does the research end.
  await waitFor(async () => (lab.state.gets > gets ? true : undefined), 60_000);
  finish(lab.state, task.taskId);
  const events = await readSse(`${sys.apiUrl}/v1/turns/${post.body.turnId}/events`, { timeoutMs: 90_000 });
  expect(events.at(-1)?.event).toBe('done');
  expect((await getJson(`${sys.apiUrl}/v1/turns/${post.body.turnId}`)).body.text).toContain('Report on glacier retreat.');
  expect(replacement.output()).toContain('resuming an MCP task an earlier attempt started');
  expect(lab.state.calls.length).toBe(calls + 1);
});

test('cancelling the turn while the task runs cancels the task on the server', async () => {
  const post = await postMessage(sys.apiUrl, 'tasks-2026-cancel', 'look into deep sea vents');
  const url = `${sys.apiUrl}/v1/turns/${post.body.turnId}/events`;
  const task = await taskOf('deep sea vents');
  expect((await postJson(`${sys.apiUrl}/v1/turns/${post.body.turnId}/cancel`, {})).status).toBe(202);
  const events = await readSse(url, { timeoutMs: 60_000 });
  expect(events.at(-1)?.event).toBe('cancelled');
  await waitFor(async () => (lab.state.cancels.includes(task.taskId) ? true : undefined), 30_000);
  expect(lab.state.tasks.get(task.taskId)?.status).toBe('cancelled');
});
