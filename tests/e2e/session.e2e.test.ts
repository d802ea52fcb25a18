import type { DemoRules } from '../../src/demo-model/rules';
import { getJson, postJson, postMessage, waitFor } from '../helpers/http';
import { startSystem, type TestSystem } from '../helpers/system';

/** Sessions on real parts: turns serialize, the conversation is remembered, pruned and summarized. */
const RULES: DemoRules = {
  model: 'demo-model',
  fallback: 'no script',
  scripts: [
    { name: 'say', match: '^say (.+)$', steps: [{ text: 'you said {{match.1}}' }] },
    {
      name: 'summarize',
      match: '^Summarize the conversation below \\((\\d+) messages\\)',
      steps: [{ text: 'DEMO-SUMMARY of {{match.1}} messages' }],
    },
  ],
};

let sys: TestSystem;
beforeAll(async () => {
  sys = await startSystem({
    rules: RULES,
    servers: () => ({}),
    host: {
      sessions: { maxTokenCount: 400, summarizationThreshold: 120, retainNewestMessages: 2, maxQueuedTurns: 3, transcriptLimit: 50, maxTurnsPerRun: 4 },
    },
  });
}, 120_000);
afterAll(async () => {
  await sys?.stop();
});

async function session(id: string) {
  return (await getJson(`${sys.apiUrl}/v1/sessions/${id}/messages`)).body;
}

async function settled(id: string, messages: number) {
  return await waitFor(async () => {
    const s = await session(id);
    return s.messages?.length >= messages && !s.activeTurnId && s.queuedTurnIds.length === 0 && s.messages.every((m: { status: string }) => !['queued', 'running'].includes(m.status)) ? s : undefined;
  }, 60_000, 100);
}

const userMessagesSent = () =>
  sys.model
    .requests()
    .map((r) => (r.body as { messages: { role: string; content: string }[] }).messages)
    .filter((m) => m.at(-1)?.content.startsWith('say '));

test('a session remembers earlier turns and GET /messages returns the conversation in order', async () => {
  sys.model.resetRequests();
  const first = await postMessage(sys.apiUrl, 'memory', 'say alpha');
  expect(first.status).toBe(202);
  await settled('memory', 2);
  const beta = await postMessage(sys.apiUrl, 'memory', 'say beta');
  const s = await settled('memory', 4);
  expect(s.messages.map((m: { role: string; content: string }) => `${m.role}: ${m.content}`)).toEqual([
    'user: say alpha',
    'assistant: you said alpha',
    'user: say beta',
    'assistant: you said beta',
  ]);
  expect(s.messages.every((m: { status: string }) => m.status === 'completed')).toBe(true);
  // The second turn's LLM request carried the first exchange before the new message.
  const second = userMessagesSent().find((m) => m.at(-1)?.content === 'say beta');
  expect(second?.map((m) => `${m.role}: ${m.content}`).slice(-3)).toEqual(['user: say alpha', 'assistant: you said alpha', 'user: say beta']);
  // That memory came with the first turn's end, pushed by the worker to the API, which started the
  // second turn with it: the second turn read nothing of the first (its only local activity is the catalog's).
  const { events } = await sys.client.workflow.getHandle(beta.body.turnId as string).fetchHistory();
  const markers = (events ?? []).flatMap((e) => (e.markerRecordedEventAttributes ? [e.markerRecordedEventAttributes] : []));
  expect(markers).toHaveLength(1);
}, 60_000);

test('messages sent while a turn runs are queued and run in order; a full queue answers 409; a queued turn can be cancelled', async () => {
  // The first answer takes a while, so the next messages arrive while it runs.
  sys.model.setFaults([{ delayMs: 1_500, times: 1 }]);
  const a = await postMessage(sys.apiUrl, 'queue', 'say one');
  const b = await postMessage(sys.apiUrl, 'queue', 'say two');
  const c = await postMessage(sys.apiUrl, 'queue', 'say three');
  const d = await postMessage(sys.apiUrl, 'queue', 'say four');
  expect([a.status, b.status, c.status, d.status]).toEqual([202, 202, 202, 202]);
  expect(b.body.position).toBeGreaterThanOrEqual(1);
  // maxQueuedTurns is 3: with one running and three waiting, the next is refused.
  const e = await postMessage(sys.apiUrl, 'queue', 'say five');
  expect(e.status).toBe(409);
  expect((e.body as unknown as { error: { code: string } }).error.code).toBe('session_busy');

  // A queued turn exists right away: it can be read and cancelled before it starts.
  const queuedTurn = await getJson(`${sys.apiUrl}/v1/turns/${c.body.turnId}`);
  expect(queuedTurn.status).toBe(200);
  expect(queuedTurn.body.status).toBe('running');
  const cancel = await postJson(`${sys.apiUrl}/v1/turns/${c.body.turnId}/cancel`, {});
  expect(cancel.status).toBe(202);

  const s = await settled('queue', 8);
  expect(s.messages.map((m: { role: string; content: string; status: string }) => `${m.role}: ${m.status}: ${m.content}`)).toEqual([
    'user: completed: say one',
    'user: completed: say two',
    'user: cancelled: say three',
    'user: completed: say four',
    // In the order things happened: the queued turn was cancelled while the first one still ran.
    'assistant: cancelled: The turn was cancelled.',
    'assistant: completed: you said one',
    'assistant: completed: you said two',
    'assistant: completed: you said four',
  ]);
  const cancelled = await getJson(`${sys.apiUrl}/v1/turns/${c.body.turnId}`);
  expect(cancelled.body.status).toBe('cancelled');
  // Strictly one after another: each turn started gathering context after the previous one finished.
  const times: Array<{ start: number; end: number }> = [];
  for (const t of [a, b, d]) {
    const history = await sys.client.workflow.getHandle(t.body.turnId).fetchHistory();
    const events = history.events ?? [];
    const ms = (e: (typeof events)[number]) => Number(e.eventTime?.seconds ?? 0) * 1000 + Math.floor((e.eventTime?.nanos ?? 0) / 1e6);
    const firstActivity = events.find((e) => e.activityTaskScheduledEventAttributes);
    times.push({ start: ms(firstActivity as (typeof events)[number]), end: ms(events.at(-1) as (typeof events)[number]) });
  }
  expect(times[1]!.start).toBeGreaterThanOrEqual(times[0]!.end);
  expect(times[2]!.start).toBeGreaterThanOrEqual(times[1]!.end);
  // After the queue drained, the session accepts messages again.
  expect((await postMessage(sys.apiUrl, 'queue', 'say six')).status).toBe(202);
  await settled('queue', 10);
}, 90_000);

test('older messages are summarized, the model gets summary + newest messages within budget, with no session workflow', async () => {
  sys.model.resetRequests();
  for (let i = 1; i <= 10; i++) {
    const r = await postMessage(sys.apiUrl, 'long', `say message number ${i} ${'x'.repeat(40)}`);
    expect(r.status).toBe(202);
    await settled('long', i * 2);
  }
  const s = await session('long');
  expect(s.totalMessages).toBe(20);
  expect(s.summary).toMatch(/^DEMO-SUMMARY of \d+ messages$/);
  // The session is the chain of its turns (decision 0033): no workflow of its own.
  const sessionWorkflows = [];
  for await (const w of sys.client.workflow.list({ query: `WorkflowType = 'sessionWorkflow' AND SessionId = 'long'` })) sessionWorkflows.push(w);
  expect(sessionWorkflows).toHaveLength(0);
  // The last turn's request: the summary as a system message, then only recent messages, within budget.
  const last = userMessagesSent().find((m) => m.at(-1)?.content.startsWith('say message number 10 '));
  expect(last).toBeDefined();
  const summary = last!.find((m) => m.role === 'system' && m.content.startsWith('Summary of the earlier conversation:'));
  expect(summary?.content).toContain('DEMO-SUMMARY');
  expect(last!.some((m) => m.content.startsWith('say message number 1 '))).toBe(false);
  expect(last!.some((m) => m.content.startsWith('say message number 9 '))).toBe(true);
  const historyTokens = last!
    .slice(0, -1)
    .filter((m) => m.role !== 'system' || m.content.startsWith('Summary'))
    .reduce((n, m) => n + Math.ceil(m.content.length / 4) + 4, 0);
  expect(historyTokens).toBeLessThanOrEqual(400);

  // The summaries' tokens are the owner's, beside the session's turns, in the usage report by session
  // (one record per summary the model answered; the last may still be on its way).
  const summarized = () => sys.model.requests().filter((r) => (r.body as { messages: { content: string }[] }).messages.at(-1)?.content.startsWith('Summarize the conversation below')).length;
  const turnIds = s.messages.filter((m: { role: string }) => m.role === 'user').map((m: { turnId: string }) => m.turnId);
  expect(turnIds).toHaveLength(10);
  let turnTokens = 0;
  for (const id of turnIds) {
    const { usage } = (await getJson(`${sys.apiUrl}/v1/turns/${id as string}`)).body as { usage: { promptTokens: number; completionTokens: number } };
    turnTokens += usage.promptTokens + usage.completionTokens;
  }
  const row = await waitFor(async () => {
    const rows = (await getJson(`${sys.apiUrl}/v1/admin/usage?groupBy=session`)).body.rows as Array<{ sessionId: string; turns: number; summaries: number; totalTokens: number; userId: string }>;
    const r = rows.find((x) => x.sessionId === 'long');
    return r && r.turns === 10 && r.summaries === summarized() ? r : undefined;
  }, 15_000, 200);
  expect(row.summaries).toBeGreaterThan(0);
  expect(row.userId).toBe('u-ada');
  expect(row.totalTokens).toBeGreaterThan(turnTokens);
}, 120_000);

test("sessions are per user: another user's session with the same id is theirs alone", async () => {
  await postMessage(sys.apiUrl, 'shared-name', 'say mine');
  await settled('shared-name', 2);
  const student = { authorization: `Bearer ${await sys.token('student')}` };
  expect((await getJson(`${sys.apiUrl}/v1/sessions/shared-name/messages`, student)).status).toBe(404);
  await postMessage(sys.apiUrl, 'shared-name', 'say theirs', student);
  const theirs = await waitFor(async () => {
    const r = await getJson(`${sys.apiUrl}/v1/sessions/shared-name/messages`, student);
    return r.body.messages?.length === 2 && !r.body.activeTurnId ? r.body : undefined;
  });
  expect(theirs.messages.map((m: { content: string }) => m.content)).toEqual(['say theirs', 'you said theirs']);
  expect((await session('shared-name')).messages.map((m: { content: string }) => m.content)).toEqual(['say mine', 'you said mine']);
}, 60_000);
