import { readFileSync } from 'node:fs';
import type { DemoRules } from '../../src/demo-model/rules';
import { EXAMPLE_RULES, startSystem, type TestSystem } from '../helpers/system';
import { bearer, getJson, postJson, postMessage, readSse, waitFor } from '../helpers/http';

const LLM_KEY = 'sk-test-e2e-never-shown-0123456789';

/**
 * One host turn end to end, on real parts: HTTP API → Temporal dev server → worker process → demo
 * model over HTTP (real `openai` client) → two real MCP servers over stdio (ours and the published
 * server-everything, started with node) → results → answer on the SSE stream.
 */
const exampleRules = JSON.parse(readFileSync(EXAMPLE_RULES, 'utf8')) as DemoRules & { scripts: unknown[] };
const rules: DemoRules = {
  ...exampleRules,
  scripts: [
    {
      name: 'ghost',
      match: '(?i)^call the ghost tool',
      steps: [{ toolCalls: [{ name: 'ghost__vanish', arguments: {} }] }, { text: 'ghost said: {{result.0}}' }],
    },
    {
      name: 'bad-args',
      match: '(?i)^add a bad note',
      steps: [
        {
          toolCalls: [
            { name: 'notes__add_note', arguments: { text: 42 } },
            { name: 'notes__add_note', rawArguments: '{"text": ' },
          ],
        },
        { text: 'first: {{result.0}} | second: {{result.1}}' },
      ],
    },
    {
      name: 'loop',
      match: '(?i)^loop forever',
      steps: Array.from({ length: 10 }, () => ({ toolCalls: [{ name: 'notes__list_notes', arguments: {} }] })),
    },
    ...(exampleRules.scripts as NonNullable<DemoRules['scripts']>),
  ],
};

let sys: TestSystem;

beforeAll(async () => {
  sys = await startSystem({
    rules,
    // A URL server nobody listens on: it must be reported unavailable without hurting the others.
    extraServers: { offline: { url: 'http://127.0.0.1:9/mcp' } },
    host: { maxSteps: 3 },
    // A key the model endpoint below "leaks" into an error message: it must never reach a client.
    workerEnv: { LLM_API_KEY: LLM_KEY },
  });
}, 120_000);

afterAll(async () => {
  await sys?.stop();
});

function notes(): Array<{ text: string }> {
  try {
    const raw = JSON.parse(readFileSync(sys.notesFile, 'utf8')) as unknown;
    return (Array.isArray(raw) ? raw : ((raw as { notes?: unknown[] }).notes ?? [])) as Array<{ text: string }>;
  } catch {
    return [];
  }
}

test('a turn calls a tool on each of two MCP servers and the answer reaches the SSE stream', async () => {
  const post = await postMessage(sys.apiUrl, 'e2e-main', 'remember that durable turns work');
  expect(post.status).toBe(202);
  expect(post.body.turnId).toMatch(/^turn-e2e-main-/);
  expect(post.body.eventsUrl).toBe(`/v1/turns/${post.body.turnId}/events`);

  const all = await readSse(`${sys.apiUrl}${post.body.eventsUrl as string}`, { timeoutMs: 60_000 });
  // Live text deltas (no id) come in between; the durable events are the ones with ids.
  expect(all.some((e) => e.event === 'text_delta' && e.id === undefined)).toBe(true);
  const events = all.filter((e) => e.id !== undefined);
  const types = events.map((e) => e.event);
  expect(types[0]).toBe('status');
  expect(types.filter((t) => t === 'tool_call_started')).toHaveLength(2);
  expect(types.filter((t) => t === 'tool_call_finished')).toHaveLength(2);
  expect(types.slice(-2)).toEqual(['text', 'done']);
  // Event ids are dense and increasing: what Last-Event-ID resumption relies on.
  expect(events.map((e) => Number(e.id))).toEqual(events.map((_, i) => i + 1));

  const started = events.filter((e) => e.event === 'tool_call_started').map((e) => e.data.name).sort();
  expect(started).toEqual(['everything__echo', 'notes__add_note']);
  const text = events.find((e) => e.event === 'text')?.data.text as string;
  expect(text).toContain('Done. The notes server said');
  expect(text).toContain('saved: durable turns work');

  const turn = await getJson(`${sys.apiUrl}/v1/turns/${post.body.turnId}`);
  expect(turn.status).toBe(200);
  expect(turn.body.status).toBe('completed');
  expect(turn.body.text).toBe(text);
  expect(turn.body.toolCalls).toHaveLength(2);
  expect(turn.body.toolCalls.every((c: { state: string }) => c.state === 'completed')).toBe(true);

  // The side effect happened, once.
  expect(notes().filter((n) => n.text === 'durable turns work')).toHaveLength(1);

  // The model saw the tools of both servers and the context resource.
  const llmCalls = sys.model.requests().filter((r) => r.path.endsWith('/chat/completions'));
  const firstBody = llmCalls[0]?.body as { tools: Array<{ function: { name: string } }>; messages: Array<{ content: string }> };
  const toolNames = firstBody.tools.map((t) => t.function.name);
  expect(toolNames).toEqual(expect.arrayContaining(['notes__add_note', 'notes__list_notes', 'everything__echo']));
  expect(toolNames.some((n) => n.startsWith('offline__'))).toBe(false);
});

test('the tool call carries an idempotency key in _meta, so a repeated key changes nothing', async () => {
  const post = await postMessage(sys.apiUrl, 'e2e-meta', 'remember that keys are stable');
  await readSse(`${sys.apiUrl}${post.body.eventsUrl as string}`, { timeoutMs: 60_000 });
  expect(notes().filter((n) => n.text === 'keys are stable')).toHaveLength(1);
  const store = JSON.parse(readFileSync(sys.notesFile, 'utf8')) as { idempotency: Record<string, { text: string }> };
  const keys = Object.entries(store.idempotency).filter(([, n]) => n.text === 'keys are stable').map(([k]) => k);
  expect(keys).toHaveLength(1);
  expect(keys[0]).toMatch(new RegExp(`^${post.body.turnId}/step-1/call_`));
});

test('SSE resumes with Last-Event-ID without loss or duplicates', async () => {
  const post = await postMessage(sys.apiUrl, 'e2e-resume', 'echo resume me');
  const url = `${sys.apiUrl}${post.body.eventsUrl as string}`;
  const firstPart = await readSse(url, { stopAfter: (e) => e.event === 'tool_call_started', timeoutMs: 60_000 });
  const lastId = firstPart.at(-1)?.id as string;
  const rest = await readSse(url, { lastEventId: lastId, timeoutMs: 60_000 });
  const all = [...firstPart, ...rest].filter((e) => e.id !== undefined);
  expect(all.map((e) => Number(e.id))).toEqual(all.map((_, i) => i + 1));
  expect(rest.at(-1)?.event).toBe('done');
  // A reader who saw everything gets nothing more than the opening event (no id), and the stream ends.
  const none = await readSse(url, { lastEventId: String(all.length), timeoutMs: 10_000 });
  expect(none.map((e) => [e.event, e.id, e.data.status])).toEqual([['turn', undefined, 'completed']]);
});

test('unknown tools, invalid and malformed arguments go back to the model as tool results', async () => {
  const ghost = await postMessage(sys.apiUrl, 'e2e-errors', 'call the ghost tool');
  const ghostEvents = await readSse(`${sys.apiUrl}${ghost.body.eventsUrl as string}`, { timeoutMs: 60_000 });
  expect(ghostEvents.at(-1)?.event).toBe('done');
  expect(ghostEvents.find((e) => e.event === 'text')?.data.text).toMatch(/ghost said: Error: Unknown tool "ghost__vanish"/);

  const bad = await postMessage(sys.apiUrl, 'e2e-errors', 'add a bad note');
  const badEvents = await readSse(`${sys.apiUrl}${bad.body.eventsUrl as string}`, { timeoutMs: 60_000 });
  const text = badEvents.find((e) => e.event === 'text')?.data.text as string;
  expect(text).toMatch(/first: Error: Invalid arguments for notes__add_note: .*text/);
  expect(text).toMatch(/second: Error: Tool arguments are not valid JSON/);
  const turn = await getJson(`${sys.apiUrl}/v1/turns/${bad.body.turnId}`);
  expect(turn.body.status).toBe('completed');
  expect(turn.body.toolCalls.map((c: { state: string }) => c.state)).toEqual(['failed', 'failed']);
  expect(notes().some((n) => typeof n.text !== 'string')).toBe(false);
});

test('the step limit ends a looping model with a text answer', async () => {
  const post = await postMessage(sys.apiUrl, 'e2e-loop', 'loop forever');
  const events = await readSse(`${sys.apiUrl}${post.body.eventsUrl as string}`, { timeoutMs: 60_000 });
  expect(events.at(-1)?.event).toBe('done');
  const turn = await getJson(`${sys.apiUrl}/v1/turns/${post.body.turnId}`);
  expect(turn.body.steps).toBe(4);
  expect(turn.body.toolCalls).toHaveLength(3);
  // Past the limit the model was offered no tools.
  const last = sys.model.requests().filter((r) => r.path.endsWith('/chat/completions')).at(-1)?.body as { tools?: unknown[] };
  expect(last.tools ?? []).toHaveLength(0);
});

test('GET /v1/tools and /healthz report both servers, and the unreachable one as unavailable', async () => {
  const tools = await getJson(`${sys.apiUrl}/v1/tools`);
  expect(tools.status).toBe(200);
  const names = tools.body.tools.map((t: { name: string }) => t.name);
  expect(names).toEqual(expect.arrayContaining(['notes__add_note', 'everything__echo', 'everything__get-sum']));
  for (const n of names) expect(n).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);

  // From the worker's reports, starting no workflow: no catalog workflow starts after this point.
  const since = new Date().toISOString();
  const catalogRuns = async () =>
    (await sys.client.workflow.count(`TaskQueue="${sys.taskQueue}" AND WorkflowType="catalogWorkflow" AND StartTime > "${since}"`)).count;
  const health = await waitFor(async () => {
    const h = await getJson(`${sys.apiUrl}/healthz`);
    return h.body.mcp.servers.length === 3 ? h : undefined;
  });
  expect(health.status).toBe(200);
  expect(health.body.temporal.ok).toBe(true);
  expect(health.body.status).toBe('degraded');
  expect(health.body.workers).toHaveLength(1);
  for (let i = 0; i < 5; i++) expect((await getJson(`${sys.apiUrl}/healthz`)).status).toBe(200);
  await new Promise((r) => setTimeout(r, 1_000)); // visibility lags a little behind starts
  expect(await catalogRuns()).toBe(0);
  const byName = Object.fromEntries(health.body.mcp.servers.map((s: { server: string; state: string }) => [s.server, s.state]));
  expect(byName).toEqual({ notes: 'connected', everything: 'connected', offline: 'unavailable' });

  const servers = await getJson(`${sys.apiUrl}/v1/servers`);
  expect(servers.body.servers).toHaveLength(3);
});

test('an LLM that rejects the request fails the turn with a clear message; the service stays up', async () => {
  sys.model.setFaults([{ status: 401, message: 'invalid api key', times: 1 }]);
  const post = await postMessage(sys.apiUrl, 'e2e-llm', 'hello');
  const events = await readSse(`${sys.apiUrl}${post.body.eventsUrl as string}`, { timeoutMs: 60_000 });
  expect(events.at(-1)?.event).toBe('error');
  const turn = await getJson(`${sys.apiUrl}/v1/turns/${post.body.turnId}`);
  expect(turn.body.status).toBe('failed');
  expect(turn.body.error.code).toBe('llm_rejected');
  expect(turn.body.error.message).toMatch(/rejected the request: HTTP 401/);

  // Transient failures are retried by Temporal and the turn completes.
  // retry-after: 0 once ended the retries (a zero nextRetryDelay): keep it as a regression case.
  // The first failure waits, so the stream below is open before it happens.
  sys.model.setFaults([{ status: 503, message: `overloaded (key ${LLM_KEY})`, delayMs: 600, times: 1 }, { status: 429, retryAfter: 0, times: 1 }]);
  const retried = await postMessage(sys.apiUrl, 'e2e-llm', 'hello');
  const retriedEvents = await readSse(`${sys.apiUrl}${retried.body.eventsUrl as string}`, { timeoutMs: 60_000 });
  expect(retriedEvents.at(-1)?.event).toBe('done');
  // Each retry was announced while it waited, before the answer: the stream is never silent.
  const notices = retriedEvents.filter((e) => e.event === 'notice' && e.data.code === 'llm_retry');
  expect(notices.map((n) => n.data.attempt)).toEqual([1, 2]);
  expect(notices.every((n) => n.id === undefined)).toBe(true);
  expect(retriedEvents.indexOf(notices[1] as (typeof retriedEvents)[number])).toBeLessThan(retriedEvents.findIndex((e) => e.event === 'text'));
  const origin = new URL(sys.model.url).origin;
  expect(notices[0]?.data.message).toMatch(new RegExp(`^The model call failed: HTTP 503 from ${origin}/v1: overloaded \\(key \\[redacted\\]\\)\\. Retrying in under a second \\(attempt 2 of 3\\)\\.$`));
  expect(notices[1]?.data.message).toMatch(/HTTP 429 .*\(attempt 3 of 3\)\.$/);
  expect(JSON.stringify(retriedEvents)).not.toContain(LLM_KEY);

  // An endpoint that keeps dropping connections: retries run out, the user is told.
  sys.model.setFaults([{ hangup: true, times: 10 }]);
  const down = await postMessage(sys.apiUrl, 'e2e-llm', 'hello');
  await readSse(`${sys.apiUrl}${down.body.eventsUrl as string}`, { timeoutMs: 60_000 });
  const downTurn = await getJson(`${sys.apiUrl}/v1/turns/${down.body.turnId}`);
  expect(downTurn.body.status).toBe('failed');
  expect(downTurn.body.error.code).toBe('llm_unavailable');
  // It says which endpoint failed (where to look), never the key.
  expect(downTurn.body.error.message).toContain(`cannot reach the model endpoint ${new URL(sys.model.url).origin}`);
  sys.model.setFaults([]);

  const health = await getJson(`${sys.apiUrl}/healthz`);
  expect(health.body.temporal.ok).toBe(true);
});

test('an Idempotency-Key makes a retried POST return the same turn', async () => {
  const a = await postMessage(sys.apiUrl, 'e2e-idem', 'echo once', { 'idempotency-key': 'client-retry-1' });
  const b = await postMessage(sys.apiUrl, 'e2e-idem', 'echo once', { 'idempotency-key': 'client-retry-1' });
  expect(a.status).toBe(202);
  expect(b.status).toBe(200);
  expect(b.body.turnId).toBe(a.body.turnId);
  await waitFor(async () => {
    const t = await getJson(`${sys.apiUrl}/v1/turns/${a.body.turnId}`);
    return t.body.status === 'completed' ? true : undefined;
  });
});

test('a tool call run through a turn, without the model: same checks, its result is the answer, the session records it', async () => {
  const requestsBefore = sys.model.requests().length;
  const post = await postJson(`${sys.apiUrl}/v1/sessions/e2e-direct/tool-calls`, { server: 'notes', tool: 'add_note', arguments: { text: 'added by hand' } });
  expect(post.status).toBe(202);
  const events = await readSse(`${sys.apiUrl}${post.body.eventsUrl as string}`, { timeoutMs: 60_000 });
  // (This system has an offline server: its `server_unavailable` notice comes too.)
  const flow = events.filter((e) => e.event !== 'notice');
  expect(flow.map((e) => e.event)).toEqual(['turn', 'status', 'status', 'tool_call_started', 'tool_call_finished', 'text', 'done']);
  expect(flow[3]?.data).toMatchObject({ name: 'notes__add_note', server: 'notes', tool: 'add_note', arguments: { text: 'added by hand' } });
  const turn = await getJson(`${sys.apiUrl}/v1/turns/${post.body.turnId as string}`);
  expect(turn.body).toMatchObject({ status: 'completed', steps: 0, toolCalls: [{ name: 'notes__add_note', state: 'completed', isError: false }] });
  expect(turn.body.text).toMatch(/added by hand/);
  expect(readFileSync(sys.notesFile, 'utf8')).toContain('added by hand');
  // No model was asked.
  expect(sys.model.requests().length).toBe(requestsBefore);
  // Audited like any tool call, with the caller and the idempotency of the turn.
  const audit = readFileSync(sys.auditFile, 'utf8');
  expect(audit).toContain(post.body.turnId as string);
  const session = await getJson(`${sys.apiUrl}/v1/sessions/e2e-direct/messages`);
  expect(session.body.messages.map((m: { role: string; content: string }) => [m.role, m.content.slice(0, 30)])).toEqual([
    ['user', 'Run notes/add_note {"text":"ad'],
    ['assistant', (turn.body.text as string).slice(0, 30)],
  ]);

  // Arguments are checked against the tool's schema by the turn, as for the model.
  const bad = await postJson(`${sys.apiUrl}/v1/sessions/e2e-direct/tool-calls`, { server: 'notes', tool: 'add_note', arguments: {} });
  await readSse(`${sys.apiUrl}${bad.body.eventsUrl as string}`, { timeoutMs: 60_000 });
  const badTurn = await getJson(`${sys.apiUrl}/v1/turns/${bad.body.turnId as string}`);
  expect(badTurn.body.text).toMatch(/^Error: Invalid arguments for notes__add_note/);

  // What is not configured is refused at once; what the caller may not use is denied by the turn.
  expect((await postJson(`${sys.apiUrl}/v1/sessions/e2e-direct/tool-calls`, { server: 'notes', tool: 'nope' })).body.error.code).toBe('unknown_tool');
  expect((await postJson(`${sys.apiUrl}/v1/sessions/e2e-direct/tool-calls`, { server: 'ghost', tool: 'x' })).status).toBe(400);
  expect((await postJson(`${sys.apiUrl}/v1/sessions/e2e-direct/tool-calls`, { server: 'notes' })).body.error.code).toBe('invalid_request');
  const guest = bearer(await sys.token({ sub: 'u-guest', role: 'guest', tenant: 'demo' }));
  const denied = await postJson(`${sys.apiUrl}/v1/sessions/e2e-direct/tool-calls`, { server: 'notes', tool: 'add_note', arguments: { text: 'sneaky' } }, guest);
  expect(denied.status).toBe(202);
  await readSse(`${sys.apiUrl}${denied.body.eventsUrl as string}`, { timeoutMs: 60_000, headers: guest });
  const deniedTurn = await getJson(`${sys.apiUrl}/v1/turns/${denied.body.turnId as string}`, guest);
  expect(deniedTurn.body.text).toMatch(/^Error: Denied by policy/);
  expect(readFileSync(sys.notesFile, 'utf8')).not.toContain('sneaky');
  expect(readFileSync(sys.auditFile, 'utf8')).toMatch(/"kind":"denial"[^\n]*u-guest|u-guest[^\n]*"kind":"denial"/);
});
