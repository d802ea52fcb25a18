/**
 * Sampling through whole turns: `server-everything`'s `trigger-sampling-request` asks the host's
 * model for a completion during a tool call. The policy lets `everything` sample (examples/policy.json);
 * the request reaches the demo model through the worker's LLM client, comes back to the server, and is
 * audited. A policy without `sampling` refuses the request, and the model hears why.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { loadPolicyFile } from '../../src/config/policy';
import { getJson, postJson, postMessage, readSse, setDefaultToken, waitFor } from '../helpers/http';
import { ROOT, startSystem, type TestSystem } from '../helpers/system';

let sys: TestSystem;

beforeAll(async () => {
  sys = await startSystem();
}, 120_000);

afterAll(async () => {
  await sys?.stop();
});

test("a server's sampling request is answered by the host's model within the policy, and audited", async () => {
  const post = await postMessage(sys.apiUrl, 'sampling', 'sample a haiku about autumn leaves');
  const events = await readSse(`${sys.apiUrl}/v1/turns/${post.body.turnId}/events`, { timeoutMs: 60_000 });
  expect(events.at(-1)?.event).toBe('done');
  const turn = (await getJson(`${sys.apiUrl}/v1/turns/${post.body.turnId}`)).body;
  expect(turn.text).toContain('Quiet autumn leaves / a durable turn waits on / the host answers it');
  expect(turn.text).toContain('"model": "demo-model"');
  // The server's sampling is counted in the turn's usage, apart from the turn's own model calls.
  expect(turn.usage.samplingTokens).toBeGreaterThan(0);
  expect(turn.usage.promptTokens).toBeGreaterThan(0);
  const audit = readFileSync(sys.auditFile, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { kind: string; outcome?: string; workflowId?: string });
  expect(audit.filter((a) => a.kind === 'sampling' && a.workflowId === post.body.turnId).map((a) => a.outcome)).toEqual(['ok']);
});

test('without a sampling rule in the policy, the request is refused and the model hears why', async () => {
  const { sampling: _dropped, ...policy } = loadPolicyFile(path.join(ROOT, 'examples/policy.json'));
  const strict = await startSystem({ policy });
  try {
    const post = await postMessage(strict.apiUrl, 'sampling', 'sample a haiku about winter');
    const events = await readSse(`${strict.apiUrl}/v1/turns/${post.body.turnId}/events`, { timeoutMs: 60_000 });
    expect(events.at(-1)?.event).toBe('done');
    const finished = events.find((e) => e.event === 'tool_call_finished')?.data;
    expect(finished?.isError).toBe(true);
    expect(String(finished?.result)).toContain('does not let this server use its model');
  } finally {
    await strict.stop();
  }
});

test("a worker SIGKILLed while the server's sampling request waits on the model: the call runs again and completes", async () => {
  // The system started by the test before this one made its own token the default.
  setDefaultToken(await sys.token('admin'));
  // The turn's first model call goes through untouched; the server's sampling request is held 15 s,
  // far longer than it takes to see it and kill the worker, however busy the machine.
  sys.model.setFaults([{ chunkDelayMs: 0, times: 1 }, { delayMs: 15_000, times: 1 }]);
  const before = sys.model.requests().length;
  const post = await postMessage(sys.apiUrl, 'sampling-kill', 'sample a haiku about thunder');
  const url = `${sys.apiUrl}/v1/turns/${post.body.turnId}/events`;
  await readSse(url, { stopAfter: (e) => e.event === 'tool_call_started', timeoutMs: 60_000 });
  // The sampling request (the turn's second model request) has reached the model and is held there.
  await waitFor(async () => (sys.model.requests().length >= before + 2 ? true : undefined), 60_000, 25);
  await sys.worker.kill();
  sys.worker = await sys.startWorker();
  const events = await readSse(url, { timeoutMs: 90_000 });
  expect(events.at(-1)?.event).toBe('done');
  const turn = (await getJson(`${sys.apiUrl}/v1/turns/${post.body.turnId}`)).body;
  expect(turn.text).toContain('Quiet thunder / a durable turn waits on / the host answers it');
  sys.model.setFaults([]);
});

test("with approval in the policy, the user sees what the server asks of the model and allows it, or not; both audited", async () => {
  const policy = loadPolicyFile(path.join(ROOT, 'examples/policy.json'));
  const asking = await startSystem({ policy: { ...policy, sampling: { ...(policy.sampling as NonNullable<typeof policy.sampling>), approval: true } } });
  try {
    const run = async (topic: string, action: 'accept' | 'decline') => {
      const post = await postMessage(asking.apiUrl, `sampling-approval-${action}`, `sample a haiku about ${topic}`);
      const url = `${asking.apiUrl}/v1/turns/${post.body.turnId}/events`;
      const seen = await readSse(url, { stopAfter: (e) => e.event === 'input_required', timeoutMs: 60_000 });
      const asked = seen.at(-1)?.data;
      expect(asked).toMatchObject({ mode: 'sampling', server: 'everything', requestedSchema: { type: 'object', properties: {} } });
      expect(String(asked?.message)).toMatch(new RegExp(`^everything asks to use the model \\(up to \\d+ tokens\\) for: .*a haiku about ${topic}`));
      // Nothing reached the model for the server yet: only the turn's own first call.
      expect(asking.model.requests().filter((r) => JSON.stringify(r).includes(`context: a haiku about ${topic}`))).toHaveLength(0);
      const answer = await postJson(`${asking.apiUrl}/v1/turns/${post.body.turnId}/inputs/${String(asked?.toolCallId)}`, { action });
      expect(answer.status).toBe(200);
      expect((await readSse(url, { timeoutMs: 60_000 })).at(-1)?.event).toBe('done');
      return post.body.turnId as string;
    };
    const allowed = await run('rain', 'accept');
    expect((await getJson(`${asking.apiUrl}/v1/turns/${allowed}`)).body.text).toContain('Quiet rain / a durable turn waits on / the host answers it');
    const refused = await run('snow', 'decline');
    const finished = (await getJson(`${asking.apiUrl}/v1/turns/${refused}`)).body.toolCalls[0];
    expect(finished.isError).toBe(true);
    expect(String(finished.result)).toContain('the user did not allow this request (decline)');

    const audit = readFileSync(asking.auditFile, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { kind: string; outcome?: string; workflowId?: string; detail?: string });
    const of = (turnId: string) => audit.filter((a) => a.workflowId === turnId && (a.kind === 'sampling' || a.kind.startsWith('elicitation_'))).map((a) => `${a.kind}:${a.outcome ?? ''}`);
    expect(of(allowed)).toEqual(['elicitation_requested:', 'elicitation_answered:ok', 'sampling:ok']);
    expect(of(refused)).toEqual(['elicitation_requested:', 'elicitation_answered:declined', 'sampling:denied']);
  } finally {
    await asking.stop();
  }
});
