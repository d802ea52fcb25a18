import { readFileSync } from 'node:fs';
import path from 'node:path';
import { freePort } from '../../src/cli/processes';
import { loadPolicyFile } from '../../src/config/policy';
import type { DemoRules } from '../../src/demo-model/rules';
import { getJson, postJson, postMessage, readSse, waitFor } from '../helpers/http';
import { EXAMPLE_RULES, ROOT, startSystem, type TestSystem } from '../helpers/system';

/**
 * Prometheus metrics on real processes: the worker's own endpoint and the API's token-guarded
 * /metrics, scraped after scripted turns (one that works, ones that fail, a tool error, approvals
 * decided and cancelled); the counters moved as they should. And the log lines about a turn.
 */
const METRICS_TOKEN = 'metrics-token-for-the-test-0123';
let sys: TestSystem;
let workerMetrics: string;

beforeAll(async () => {
  const port = await freePort();
  workerMetrics = `http://127.0.0.1:${port}/metrics`;
  // Sums need a person's approval here; one script sends echo arguments its schema refuses.
  const policy = loadPolicyFile(path.join(ROOT, 'examples/policy.json'));
  const rules = JSON.parse(readFileSync(EXAMPLE_RULES, 'utf8')) as DemoRules;
  const badEcho = { name: 'bad-echo', match: '(?i)^break the echo', steps: [{ toolCalls: [{ name: 'everything__echo', arguments: { nope: 1 } }] }, { text: 'It said: {{result.0}}' }] };
  sys = await startSystem({
    workerEnv: { WORKER_METRICS_PORT: String(port), LOG_LEVEL: 'info' },
    metricsToken: METRICS_TOKEN,
    policy: { ...policy, approval: { tools: ['everything/get-sum'], timeoutMs: 120_000, approverRoles: ['admin'] } },
    rules: { ...rules, scripts: [badEcho, ...(rules.scripts ?? [])] },
    captureApiLog: true,
  });
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

  // `done` is pushed as the turn's last workflow task runs (docs/decisions/0015): the SDK counts the
  // workflow completed once that task's completion has been reported, a moment later.
  const worker = await waitFor(async () => {
    const text = await (await fetch(workerMetrics)).text();
    return sample(text, 'temporal_workflow_completed', { workflow_type: 'turnWorkflow' }) ? text : undefined;
  }, 10_000);
  expect(sample(worker, 'dmh_tool_call_seconds_count', { server: 'everything', tool: 'echo', outcome: 'ok' })).toBe(1);
  expect(sample(worker, 'dmh_llm_call_seconds_count', { outcome: 'ok' })).toBe(2);
  // The MCP request itself, as the OpenTelemetry MCP conventions' mcp.client.operation.duration.
  const request = { mcp_method_name: 'tools/call', server: 'everything', target: 'echo', error_type: '', network_transport: 'pipe', mcp_protocol_version: '2025-11-25' };
  expect(sample(worker, 'mcp_client_operation_duration_seconds_count', request)).toBe(1);
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

const scrape = async () => await (await fetch(workerMetrics)).text();
/** How much a sample grew since `before` (absent counts as 0). */
const grew = (before: string, after: string, name: string, labels: Record<string, string>) => (sample(after, name, labels) ?? 0) - (sample(before, name, labels) ?? 0);

test("the worker's own health beside its metrics: live, and ready once on Temporal with its servers connected", async () => {
  const base = workerMetrics.replace(/\/metrics$/, '');
  const live = await fetch(`${base}/healthz/live`);
  expect(live.status).toBe(200);
  expect(await live.json()).toMatchObject({ status: 'live' });
  // The system waited for the worker's first turn-ready state; its servers connect right after start.
  const ready = await waitFor(async () => {
    const res = await fetch(`${base}/healthz/ready`);
    return res.status === 200 ? ((await res.json()) as Record<string, unknown>) : undefined;
  }, 30_000, 100);
  expect(ready).toMatchObject({ ready: true, status: 'ready', phase: 'ready', temporal: 'RUNNING' });
});

test('failed turns count by outcome, and their LLM errors by class', async () => {
  const before = await scrape();
  // A server error on every attempt (the test's retry policy makes three): the turn fails.
  sys.model.setFaults([{ status: 500, times: 3 }]);
  const down = await postMessage(sys.apiUrl, 'fail-500', 'echo never answered');
  const downEvents = await readSse(`${sys.apiUrl}${down.body.eventsUrl as string}`, { timeoutMs: 60_000 });
  expect(downEvents.at(-1)?.event).toBe('error');
  // Refused outright: one attempt, no retry.
  sys.model.setFaults([{ status: 401 }]);
  const refused = await postMessage(sys.apiUrl, 'fail-401', 'echo refused');
  expect((await readSse(`${sys.apiUrl}${refused.body.eventsUrl as string}`, { timeoutMs: 60_000 })).at(-1)?.event).toBe('error');
  sys.model.setFaults([]);

  const after = await waitFor(async () => {
    const text = await scrape();
    return grew(before, text, 'dmh_turn_seconds_count', { outcome: 'failed' }) === 2 ? text : undefined;
  }, 10_000);
  expect(grew(before, after, 'dmh_llm_errors_total', { class: 'server_error' })).toBe(3);
  expect(grew(before, after, 'dmh_llm_call_seconds_count', { outcome: 'retryable_error' })).toBe(3);
  expect(grew(before, after, 'dmh_llm_errors_total', { class: 'auth' })).toBe(1);
  expect(grew(before, after, 'dmh_llm_call_seconds_count', { outcome: 'rejected' })).toBe(1);
  expect(grew(before, after, 'dmh_turn_seconds_count', { outcome: 'completed' })).toBe(0);
});

test('a tool call the server could not run counts as an error of that server and tool, by class', async () => {
  const before = await scrape();
  const post = await postMessage(sys.apiUrl, 'tool-error', 'break the echo');
  expect((await readSse(`${sys.apiUrl}${post.body.eventsUrl as string}`, { timeoutMs: 60_000 })).at(-1)?.event).toBe('done');
  const after = await scrape();
  expect(grew(before, after, 'dmh_tool_errors_total', { server: 'everything', tool: 'echo', class: 'invalid_arguments' })).toBe(1);
  expect(grew(before, after, 'dmh_tool_call_seconds_count', { server: 'everything', tool: 'echo', outcome: 'tool_error' })).toBe(1);
});

test('approvals pending: up while a turn waits for a person, down once decided or cancelled; a cancelled turn counts as such', async () => {
  const before = await scrape();
  const pending = async (want: number) =>
    await waitFor(async () => {
      const text = await scrape();
      return sample(text, 'dmh_approvals_pending', {}) === want ? text : undefined;
    }, 15_000);
  const waitingCall = async (post: Awaited<ReturnType<typeof postMessage>>) => {
    const events = await readSse(`${sys.apiUrl}${post.body.eventsUrl as string}`, { timeoutMs: 60_000, stopAfter: (e) => e.event === 'approval_required' });
    return events.at(-1)?.data.toolCallId as string;
  };
  expect(sample(before, 'dmh_approvals_pending', {})).toBe(0);

  const approved = await postMessage(sys.apiUrl, 'approval', 'add 2 and 3');
  const callId = await waitingCall(approved);
  await pending(1);
  expect((await postJson(`${sys.apiUrl}/v1/turns/${approved.body.turnId}/approvals/${callId}`, { approve: true })).status).toBe(200);
  expect((await readSse(`${sys.apiUrl}${approved.body.eventsUrl as string}`, { timeoutMs: 60_000 })).at(-1)?.event).toBe('done');
  await pending(0);

  const cancelled = await postMessage(sys.apiUrl, 'approval-cancel', 'add 4 and 5');
  await waitingCall(cancelled);
  await pending(1);
  expect((await postJson(`${sys.apiUrl}/v1/turns/${cancelled.body.turnId}/cancel`, {})).status).toBe(202);
  expect((await readSse(`${sys.apiUrl}${cancelled.body.eventsUrl as string}`, { timeoutMs: 60_000 })).at(-1)?.event).toBe('cancelled');
  const after = await pending(0);
  expect(grew(before, after, 'dmh_approvals_decided_total', { decision: 'approved' })).toBe(1);
  expect(grew(before, after, 'dmh_approvals_decided_total', { decision: 'cancelled' })).toBe(1);
  const cancelledTurns = await waitFor(async () => {
    const n = grew(before, await scrape(), 'dmh_turn_seconds_count', { outcome: 'cancelled' });
    return n > 0 ? n : undefined;
  }, 10_000);
  expect(cancelledTurns).toBe(1);
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
  for (let i = 0; i < 50 && !parsed.some((l) => l.msg === 'turn finished' && l.turnId === post.body.turnId); i++) {
    await new Promise((r) => setTimeout(r, 100));
    parsed = read();
  }
  const call = parsed.find((l) => l.msg === 'tool call' && l.turnId === post.body.turnId);
  // The turn's start and end (the workflow's own log lines) at info, each with the turn's ids.
  const ids = { turnId: post.body.turnId, sessionId: 'logs', userId: 'u-ada' };
  expect(parsed.find((l) => l.msg === 'turn started' && l.workflowId === post.body.turnId)).toMatchObject({ level: 30, ...ids });
  const finished = parsed.find((l) => l.msg === 'turn finished' && l.turnId === post.body.turnId);
  expect(finished).toMatchObject({ level: 30, ...ids, outcome: 'completed', llmSteps: 2, toolCalls: 1 });
  expect(finished?.ms).toEqual(expect.any(Number));
  expect(finished?.historyEvents).toEqual(expect.any(Number));
  // A failed model call of an earlier test names its turn and user too (the activity's log context), and its class.
  expect(parsed.find((l) => String(l.msg).startsWith('LLM call failed') && l.sessionId === 'fail-500')).toMatchObject({
    level: 40,
    turnId: expect.stringMatching(/^turn-fail-500-/),
    userId: 'u-ada',
    errorClass: 'server_error',
  });
  expect(call).toMatchObject({ level: 30, name: 'worker', sessionId: 'logs', userId: 'u-ada', server: 'everything', tool: 'echo', attempt: 1, outcome: 'ok' });
  expect(call?.ms).toEqual(expect.any(Number));
  // The SDK's own messages come through the same logger.
  expect(parsed.some((l) => l.component === 'temporal')).toBe(true);
  expect(sys.worker.output()).not.toContain('a-private-value');

  // The API's lines about the turn: the POST that created it and the stream that followed it.
  const completed = await waitFor(async () => {
    const lines = sys.apiLog().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);
    const found = lines.filter((l) => l.msg === 'request completed' && l.turnId === post.body.turnId);
    return found.length >= 2 ? found : undefined;
  }, 5_000);
  for (const l of completed) expect(l).toMatchObject(ids);
});
