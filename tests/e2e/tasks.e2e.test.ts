/**
 * Long-running tools as MCP tasks, through whole turns: `server-everything`'s `simulate-research-query`
 * (task support `required`) runs in its own process over Streamable HTTP. The worker starts the task,
 * keeps its id and session in the activity's heartbeat details, and is SIGKILLed while the task runs;
 * the next attempt rejoins the session and waits for the same task instead of starting the research
 * again. A task call without a crash works too, and its progress reaches the user. Cancelling the turn
 * while the task runs cancels the task on the server.
 */
import path from 'node:path';
import { freePort, spawnManaged, type ManagedProcess } from '../../src/cli/processes';
import { getJson, postJson, postMessage, readSse, waitFor } from '../helpers/http';
import { heartbeatTask } from '../helpers/heartbeat';
import { ROOT, exampleRulesWith, startSystem, type TestSystem } from '../helpers/system';

const EVERYTHING = path.join(ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');
let sys: TestSystem;
let research: ManagedProcess;

beforeAll(async () => {
  const port = await freePort();
  ({ proc: research } = await spawnManaged('everything-http', process.execPath, [EVERYTHING, 'streamableHttp'], {
    env: { ...process.env, PORT: String(port) },
    readyLine: /listening on port/,
  }));
  sys = await startSystem({
    rules: exampleRulesWith({
      name: 'research-over-http',
      match: '(?i)^research (.+)$',
      steps: [{ toolCalls: [{ name: 'research__simulate-research-query', arguments: { topic: '{{match.1}}' } }] }, { text: '{{tool:research__simulate-research-query}}' }],
    }),
    extraServers: { research: { url: `http://127.0.0.1:${port}/mcp`, transport: 'streamable-http' } },
    // A worker learns that its activity was cancelled only from a heartbeat's answer, and heartbeats
    // are throttled to 80% of the timeout: the default 20 s would let the 4 s research finish first.
    host: { timeouts: { toolHeartbeatMs: 3_000 } },
  });
}, 120_000);

afterAll(async () => {
  await sys?.stop();
  await research?.stop();
});

test('a task tool runs through a turn', async () => {
  const post = await postMessage(sys.apiUrl, 'tasks', 'research tidal power');
  const events = await readSse(`${sys.apiUrl}/v1/turns/${post.body.turnId}/events`, { timeoutMs: 60_000 });
  expect(events.at(-1)?.event).toBe('done');
  const text = (await getJson(`${sys.apiUrl}/v1/turns/${post.body.turnId}`)).body.text as string;
  expect(text).toContain('# Research Report: tidal power');
});

test('a worker SIGKILLed while the task runs: the next attempt waits for the same task, the research is not started again', async () => {
  const post = await postMessage(sys.apiUrl, 'tasks-crash', 'research glacier retreat');
  const url = `${sys.apiUrl}/v1/turns/${post.body.turnId}/events`;
  await readSse(url, { stopAfter: (e) => e.event === 'tool_call_started', timeoutMs: 60_000 });
  // The task exists, and its id is in the heartbeat details Temporal keeps: the next attempt finds it there.
  await heartbeatTask(sys.client, post.body.turnId as string);
  await sys.worker.kill();
  const replacement = await sys.startWorker({ LOG_LEVEL: 'info' });
  sys.worker = replacement;
  const events = await readSse(url, { timeoutMs: 90_000 });
  expect(events.at(-1)?.event).toBe('done');
  const text = (await getJson(`${sys.apiUrl}/v1/turns/${post.body.turnId}`)).body.text as string;
  expect(text).toContain('# Research Report: glacier retreat');
  expect(replacement.output()).toContain('resuming an MCP task an earlier attempt started');
  // One task for this topic: the research ran once.
  expect(research.output().match(/Research task .* failed/g) ?? []).toEqual([]);
});

test('cancelling the turn while the task runs cancels the task on the server', async () => {
  const post = await postMessage(sys.apiUrl, 'tasks-cancel', 'research deep sea vents');
  const url = `${sys.apiUrl}/v1/turns/${post.body.turnId}/events`;
  const before = await readSse(url, { stopAfter: (e) => e.event === 'tool_call_started', timeoutMs: 60_000 });
  expect((await postJson(`${sys.apiUrl}/v1/turns/${post.body.turnId}/cancel`, {})).status).toBe(202);
  const rest = await readSse(url, { lastEventId: before.at(-1)?.id, timeoutMs: 60_000 });
  expect(rest.at(-1)?.event).toBe('cancelled');
  // Only tasks/cancel makes the task 'cancelled' in the server's store (aborting the host's wait for the
  // result does not): the research, still running, then fails its next stage update on that status.
  const line = await waitFor(async () => /Research task (\S+) failed: .*terminal status 'cancelled'/.exec(research.output()) ?? undefined, 10_000);
  expect(line[1]).toBeTruthy();
  expect((await getJson(`${sys.apiUrl}/v1/turns/${post.body.turnId}`)).body).toMatchObject({ status: 'cancelled' });
});
