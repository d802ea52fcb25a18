/**
 * Elicitation as durable human input, through whole turns: `server-everything`'s
 * `trigger-elicitation-request` asks the user a form during a tool call. The turn shows the question
 * (`input_required`), the worker is SIGKILLed while it waits, a wrong answer is refused against the
 * schema, the owner's answer makes the call run again with it (defaults filled in by the SDK), and the
 * question and answer are audited. Answered while the call is alive, the answer goes to the server in
 * the same call (issue 22 §2). A policy that does not let the server ask gets `decline` at once.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { loadPolicyFile } from '../../src/config/policy';
import { getJson, postJson, postMessage, readSse, setDefaultToken } from '../helpers/http';
import { ROOT, startSystem, type TestSystem } from '../helpers/system';

let sys: TestSystem;

/** The example rules ask with "ask me for my details" (script `ask-me`). */
async function system(policyPatch: Record<string, unknown> = {}): Promise<TestSystem> {
  const policy = { ...loadPolicyFile(path.join(ROOT, 'examples/policy.json')), ...policyPatch };
  return await startSystem({ policy });
}

beforeAll(async () => {
  sys = await system();
}, 120_000);

afterAll(async () => {
  await sys?.stop();
});

test("a server's question pauses the turn across a worker SIGKILL; a wrong answer is refused; the owner's answer runs the call again", async () => {
  const post = await postMessage(sys.apiUrl, 'elicit', 'ask me for my details');
  expect(post.status).toBe(202);
  const events = `${sys.apiUrl}/v1/turns/${post.body.turnId}/events`;
  const seen = await readSse(events, { stopAfter: (e) => e.event === 'input_required', timeoutMs: 60_000 });
  const asked = seen.find((e) => e.event === 'input_required')?.data;
  expect(asked).toMatchObject({ server: 'everything', name: 'everything__trigger-elicitation-request', message: 'Please provide inputs for the following fields:' });
  expect((asked?.requestedSchema as { required: string[] }).required).toEqual(['name']);
  const answerUrl = `${sys.apiUrl}/v1/turns/${post.body.turnId}/inputs/${String(asked?.toolCallId)}`;

  await sys.worker.kill();
  sys.worker = await sys.startWorker();

  const wrong = await postJson(answerUrl, { action: 'accept', content: { name: 'Ada Lovelace', integer: 500 } });
  expect(wrong.status).toBe(400);
  expect(wrong.body.error).toMatchObject({ code: 'invalid_input' });
  expect(wrong.body.error.message).toContain('/integer');
  const missing = await postJson(answerUrl, { action: 'accept', content: {} });
  expect(missing.body.error.message).toContain('missing required property "name"');

  const ok = await postJson(answerUrl, { action: 'accept', content: { name: 'Ada Lovelace', integer: 7 } });
  expect(ok.status).toBe(200);
  expect(ok.body).toEqual({ turnId: post.body.turnId, toolCallId: asked?.toolCallId, action: 'accept' });
  expect((await postJson(answerUrl, { action: 'decline' })).status).toBe(404);

  const all = await readSse(events, { timeoutMs: 90_000 });
  expect(all.at(-1)?.event).toBe('done');
  expect(all.find((e) => e.event === 'input_provided')?.data).toMatchObject({ action: 'accept' });
  const text = (await getJson(`${sys.apiUrl}/v1/turns/${post.body.turnId}`)).body.text as string;
  expect(text).toContain('- Name: Ada Lovelace');
  expect(text).toContain('- Favorite Integer: 7');
  // The SDK filled in what the answer left out, from the schema's defaults.
  expect(text).toContain('It was a dark and stormy night.');

  const audit = readFileSync(sys.auditFile, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { kind: string; outcome?: string; toolCallId?: string });
  const mine = audit.filter((a) => a.toolCallId === asked?.toolCallId);
  expect(mine.map((a) => a.kind)).toEqual(expect.arrayContaining(['elicitation_requested', 'elicitation_answered']));
  expect(mine.find((a) => a.kind === 'elicitation_answered')?.outcome).toBe('ok');
});

test('a decline goes back to the server as a decline; the question is no warning in the log', async () => {
  const logged = sys.worker.output().length;
  const post = await postMessage(sys.apiUrl, 'elicit-decline', 'ask me for my details');
  const events = `${sys.apiUrl}/v1/turns/${post.body.turnId}/events`;
  const seen = await readSse(events, { stopAfter: (e) => e.event === 'input_required', timeoutMs: 60_000 });
  const id = String(seen.find((e) => e.event === 'input_required')?.data.toolCallId);
  expect((await postJson(`${sys.apiUrl}/v1/turns/${post.body.turnId}/inputs/${id}`, { action: 'decline' })).status).toBe(200);
  expect((await readSse(events, { timeoutMs: 60_000 })).at(-1)?.event).toBe('done');
  expect((await getJson(`${sys.apiUrl}/v1/turns/${post.body.turnId}`)).body.text).toContain('User declined to provide the requested information');
  // Issue 27 §4: the call the question stopped is an expected outcome, said at debug (the worker here
  // logs warnings and above), never as a failed or cancelled call.
  const warned = sys.worker.output().slice(logged).split('\n');
  expect(warned.filter((l) => /Activity failed|was cancelled|tool call failed/.test(l))).toEqual([]);
});

test('answered while the call still holds the question: the answer reaches the server in the same call (one activity, one attempt, no re-issue)', async () => {
  const post = await postMessage(sys.apiUrl, 'elicit-held', 'ask me for my details');
  const events = `${sys.apiUrl}/v1/turns/${post.body.turnId}/events`;
  const seen = await readSse(events, { stopAfter: (e) => e.event === 'input_required', timeoutMs: 60_000 });
  const asked = seen.find((e) => e.event === 'input_required')?.data;
  const ok = await postJson(`${sys.apiUrl}/v1/turns/${post.body.turnId}/inputs/${String(asked?.toolCallId)}`, { action: 'accept', content: { name: 'Grace Hopper', integer: 3 } });
  expect(ok.status).toBe(200);
  const all = await readSse(events, { timeoutMs: 90_000 });
  expect(all.at(-1)?.event).toBe('done');
  // Said once each, the answer before the call's end.
  expect(all.filter((e) => e.event === 'input_required')).toHaveLength(1);
  expect(all.filter((e) => e.event === 'input_provided').map((e) => e.data)).toEqual([expect.objectContaining({ action: 'accept' })]);
  const order = all.map((e) => e.event);
  expect(order.indexOf('input_provided')).toBeLessThan(order.indexOf('tool_call_finished'));
  expect((await getJson(`${sys.apiUrl}/v1/turns/${post.body.turnId}`)).body.text).toContain('- Name: Grace Hopper');

  const history = await sys.client.workflow.getHandle(String(post.body.turnId)).fetchHistory();
  const calls = (history.events ?? []).filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'callTool');
  expect(calls).toHaveLength(1);
  const started = (history.events ?? []).filter((e) => e.activityTaskStartedEventAttributes);
  expect(started.every((e) => (e.activityTaskStartedEventAttributes?.attempt ?? 1) === 1)).toBe(true);
  expect((history.events ?? []).some((e) => e.activityTaskFailedEventAttributes)).toBe(false);
  // The activity's hold: the question told to the turn (a signal), the answer taken (an update).
  expect((history.events ?? []).some((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'inputAsked')).toBe(true);
  expect((history.events ?? []).some((e) => e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name === 'inputTaken')).toBe(true);
});

/** On a system of its own with `policyPatch`, the eliciting tool's question is declined without the user being asked. */
async function expectDeclinedUnasked(policyPatch: Record<string, unknown>): Promise<void> {
  const strict = await system(policyPatch);
  try {
    const post = await postMessage(strict.apiUrl, 'elicit', 'ask me for my details');
    const all = await readSse(`${strict.apiUrl}/v1/turns/${post.body.turnId}/events`, { timeoutMs: 60_000 });
    expect(all.some((e) => e.event === 'input_required')).toBe(false);
    expect((await getJson(`${strict.apiUrl}/v1/turns/${post.body.turnId}`)).body.text).toContain('User declined');
  } finally {
    await strict.stop();
    // Its start made its own token the default: the shared system's again for the tests after this one.
    setDefaultToken(await sys.token('admin'));
  }
}

test('a server the policy does not let ask gets a decline without the user being asked', async () => {
  await expectDeclinedUnasked({ elicitation: { servers: ['notes'] } });
});

describe('URL mode (server-everything trigger-url-elicitation)', () => {
  /** Answers every URL question of the turn with `accept` until it ends; returns the URLs asked, in order. */
  async function openEveryPage(turnId: string): Promise<string[]> {
    const events = `${sys.apiUrl}/v1/turns/${turnId}/events`;
    const urls: string[] = [];
    for (let after: string | undefined; ; ) {
      const seen = await readSse(events, { ...(after ? { lastEventId: after } : {}), stopAfter: (e) => e.event === 'input_required' || e.event === 'done', timeoutMs: 60_000 });
      const last = seen.at(-1);
      if (!last || last.event === 'done') return urls;
      expect(last.event).toBe('input_required');
      after = last.id;
      expect(last.data).toMatchObject({ mode: 'url', server: 'everything', requestedSchema: { type: 'object', properties: {} } });
      urls.push(String(last.data.url));
      const ok = await postJson(`${sys.apiUrl}/v1/turns/${turnId}/inputs/${String(last.data.toolCallId)}`, { action: 'accept' });
      expect(ok.status).toBe(200);
    }
  }

  test('a page the server sends the user to is shown with its URL; once they have been there, the call runs again and completes', async () => {
    const post = await postMessage(sys.apiUrl, 'url-request', 'send me to https://pay.example/checkout');
    expect(await openEveryPage(post.body.turnId)).toEqual(['https://pay.example/checkout']);
    const turn = (await getJson(`${sys.apiUrl}/v1/turns/${post.body.turnId}`)).body;
    expect(turn.status).toBe('completed');
    expect(turn.text).toContain('User completed the URL elicitation flow');
    expect(turn.text).toContain('URL: https://pay.example/checkout');
  });

  test('a tools/call answered with -32042 (URL elicitation required) asks for its page, then the call runs again', async () => {
    const post = await postMessage(sys.apiUrl, 'url-error', 'first send me anywhere, then to https://pay.example/after');
    // The prerequisite page from the error, then the tool's own page on the retried call.
    expect(await openEveryPage(post.body.turnId)).toEqual(['https://modelcontextprotocol.io', 'https://pay.example/after']);
    const turn = (await getJson(`${sys.apiUrl}/v1/turns/${post.body.turnId}`)).body;
    expect(turn.text).toContain('User completed the URL elicitation flow');
    expect(turn.text).toContain('URL: https://pay.example/after');
  });
});

test("a policy that lets the server ask only some roles: another role's call gets a decline without being asked", async () => {
  // The default user is an admin; only teachers may be asked.
  await expectDeclinedUnasked({ elicitation: { servers: ['*'], roles: ['teacher'] } });
});
