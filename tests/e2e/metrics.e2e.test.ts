import { freePort } from '../../src/cli/processes';
import { getJson, postMessage, readSse } from '../helpers/http';
import { startSystem, type TestSystem } from '../helpers/system';

/**
 * Prometheus metrics on real processes: the worker's own endpoint and the API's token-guarded
 * /metrics, scraped after a scripted turn with one tool call; the counters moved as they should.
 */
const METRICS_TOKEN = 'metrics-token-for-the-test-0123';
let sys: TestSystem;
let workerMetrics: string;

beforeAll(async () => {
  const port = await freePort();
  workerMetrics = `http://127.0.0.1:${port}/metrics`;
  sys = await startSystem({ workerEnv: { WORKER_METRICS_PORT: String(port), LOG_LEVEL: 'info' }, metricsToken: METRICS_TOKEN });
}, 120_000);
afterAll(async () => {
  await sys?.stop();
});

/** The value of one sample line, e.g. `name{a="b"} 3`, or undefined when absent. */
function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split('\n')) {
    if (line.startsWith(`${name} `) && want.length === 0) return Number(line.slice(name.length + 1));
    if (!line.startsWith(`${name}{`)) continue;
    const labelText = line.slice(name.length + 1, line.indexOf('}'));
    if (want.every((l) => labelText.split(',').includes(l))) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return undefined;
}

test('after one turn with a tool call, the worker and the API report it', async () => {
  const before = await (await fetch(workerMetrics)).text();
  expect(sample(before, 'dmh_tool_call_seconds_count', { server: 'everything', tool: 'echo', outcome: 'ok' })).toBeUndefined();

  const post = await postMessage(sys.apiUrl, 'metrics', 'echo hi there');
  const events = await readSse(`${sys.apiUrl}${post.body.eventsUrl as string}`, { timeoutMs: 60_000 });
  expect(events.at(-1)?.event).toBe('done');

  const worker = await (await fetch(workerMetrics)).text();
  expect(sample(worker, 'dmh_tool_call_seconds_count', { server: 'everything', tool: 'echo', outcome: 'ok' })).toBe(1);
  expect(sample(worker, 'dmh_llm_call_seconds_count', { outcome: 'ok' })).toBe(2);
  expect(sample(worker, 'dmh_mcp_circuit_state', { server: 'everything' })).toBe(0);
  // The turn's end, from the workflow's sink: its outcome, duration and history length.
  expect(sample(worker, 'dmh_turn_seconds_count', { outcome: 'completed' })).toBe(1);
  expect(sample(worker, 'dmh_turn_history_events_count', {})).toBe(1);
  expect(sample(worker, 'dmh_turn_history_events_sum', {})).toBeGreaterThan(5);
  expect(worker).toContain('dmh_worker_process_cpu_seconds_total');
  // The Temporal SDK's own metrics, from its runtime, in the same answer.
  expect(sample(worker, 'temporal_workflow_completed', { workflow_type: 'turnWorkflow' })).toBeGreaterThanOrEqual(1);
  expect(worker).toMatch(/^temporal_activity_execution_latency\w*\{/m);
  // Tokens, as the model reported them: in the worker's counters and in the turn's view, the same totals.
  const prompt = sample(worker, 'dmh_llm_tokens_total', { kind: 'prompt' }) ?? 0;
  const completion = sample(worker, 'dmh_llm_tokens_total', { kind: 'completion' }) ?? 0;
  expect(prompt).toBeGreaterThan(0);
  expect(completion).toBeGreaterThan(0);
  const view = (await getJson(`${sys.apiUrl}/v1/turns/${post.body.turnId}`)).body;
  expect(view.usage).toEqual({ promptTokens: prompt, completionTokens: completion, samplingTokens: 0 });

  expect((await fetch(`${sys.apiUrl}/metrics`)).status).toBe(401);
  const api = await (await fetch(`${sys.apiUrl}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text();
  expect(sample(api, 'dmh_http_request_duration_seconds_count', { method: 'POST', route: '/v1/sessions/:sessionId/messages', status: '202' })).toBe(1);
  expect(sample(api, 'dmh_http_request_duration_seconds_count', { method: 'GET', route: '/v1/turns/:turnId/events', status: '200' })).toBe(1);
  expect(sample(api, 'dmh_turns_submitted_total', { kind: 'message' })).toBe(1);
  expect(sample(api, 'dmh_live_turns', {})).toEqual(expect.any(Number));
  expect(sample(api, 'dmh_live_subscribers', {})).toBe(0);
  // Ids stay out of the labels.
  expect(api).not.toContain(post.body.turnId);
});

test("the worker's log is one stream of JSON lines; each tool call is a line with the turn's ids, never its arguments", async () => {
  const post = await postMessage(sys.apiUrl, 'logs', 'echo a-private-value');
  const events = await readSse(`${sys.apiUrl}${post.body.eventsUrl as string}`, { timeoutMs: 60_000 });
  expect(events.at(-1)?.event).toBe('done');
  const read = () =>
    sys.worker
      .output()
      .split('\n')
      .filter((l) => l.trim() !== '' && l !== 'WORKER_READY')
      .map((l) => {
        try {
          return JSON.parse(l) as Record<string, unknown>;
        } catch {
          throw new Error(`not a JSON log line: ${l}`);
        }
      });
  // Workflow log lines reach the worker's logger through the SDK's sinks, after their workflow task:
  // on a loaded machine they may trail the turn's end by a moment.
  let parsed = read();
  for (let i = 0; i < 50 && !parsed.some((l) => l.msg === 'turn started' && l.workflowId === post.body.turnId); i++) {
    await new Promise((r) => setTimeout(r, 100));
    parsed = read();
  }
  const call = parsed.find((l) => l.msg === 'tool call' && l.turnId === post.body.turnId);
  // The turn's start (the workflow's own log line, with its id) and end, at info.
  expect(parsed.find((l) => l.msg === 'turn started' && l.workflowId === post.body.turnId)).toMatchObject({ level: 30, sessionId: 'logs', userId: 'u-ada' });
  expect(parsed.find((l) => l.msg === 'turn finished' && l.turnId === post.body.turnId)).toMatchObject({ level: 30, sessionId: 'logs', outcome: 'completed', llmSteps: 2, toolCalls: 1 });
  expect(call).toMatchObject({ level: 30, name: 'worker', sessionId: 'logs', userId: 'u-ada', server: 'everything', tool: 'echo', attempt: 1, outcome: 'ok' });
  expect(call?.ms).toEqual(expect.any(Number));
  // The SDK's own messages come through the same logger.
  expect(parsed.some((l) => l.component === 'temporal')).toBe(true);
  expect(sys.worker.output()).not.toContain('a-private-value');
});
