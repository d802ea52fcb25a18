/**
 * The chain of turns (docs/decisions/0033) on a real dev server with fake activities and the real
 * session link: each turn takes its memory from the turn before it, waits for one that still runs
 * (its end arrives as the worker's signal, not a timer), passes over a cancelled or missing one, and
 * hands on the memory after it (summarized past the threshold).
 */
import { ApplicationFailure } from '@temporalio/common';
import { NOOP_METRICS_SINKS, tracingWorkerOptions } from '../../src/cli/workflow-bundle';
import { createSessionLink, sessionSinks } from '../../src/session-link';
import type { ChainInput, HistoryOptions } from '../../src/shared/session';
import type { ChatMessage, TurnResult } from '../../src/shared/turn';
import { ownerKey } from '../../src/api/gateway';
import { legacySessions } from './legacy-session';
import { sessionWorkflowId } from '../../src/shared/ids';
import { TURN_WORKFLOW_TYPE, turnStateQuery } from '../../src/workflows/definitions';
import {
  deferred,
  eventually,
  FakeActivities,
  newTurnId,
  OWNER,
  type RunningWorker,
  say,
  startWorker,
  startWorkflowEnv,
  SYSTEM_PROMPT,
  turnInput,
  within,
  type WorkflowEnv,
} from './harness';

// A deadline for a hang, not a speed goal.
jest.setTimeout(120_000);

const HISTORY: HistoryOptions = { maxTokenCount: 8_000, summarizationThreshold: 6_000, retainNewestMessages: 10 };
/** Longer than any wait of these tests: a turn that begins found out by the signal, not by its check. */
const NO_CHECK_MS = 600_000;

let env: WorkflowEnv;
let fakes: FakeActivities;
let worker: RunningWorker;
beforeAll(async () => {
  env = await startWorkflowEnv();
  fakes = new FakeActivities(createSessionLink(env.client));
  worker = await startWorker(env, fakes.activities, {
    sinks: {
      ...tracingWorkerOptions().sinks,
      ...NOOP_METRICS_SINKS,
      ...sessionSinks(createSessionLink(env.client), (_id, turnId, err) => console.error(`telling the follower of ${turnId} failed: ${String(err)}`)),
    },
  });
}, 120_000);
afterAll(async () => {
  await worker?.stop();
  await env?.stop();
});

function chain(after: string[], more: Partial<ChainInput> = {}): ChainInput {
  return { after, history: HISTORY, checkMs: NO_CHECK_MS, ...more };
}

async function start(turnId: string, text: string, c: ChainInput) {
  return await env.client.workflow.start(TURN_WORKFLOW_TYPE, {
    workflowId: turnId,
    taskQueue: worker.taskQueue,
    args: [turnInput(turnId, { userText: text, chain: c })],
  });
}

const result = async (turnId: string): Promise<TurnResult> => (await env.client.workflow.getHandle(turnId).result()) as TurnResult;

/** The messages the turn's first model call got, without the system prompt. */
function historySent(turnId: string): ChatMessage[] {
  const first = fakes.calls(turnId, 'callLlm')[0];
  if (!first) throw new Error(`${turnId} never called the model`);
  expect(first.messages[0]).toEqual({ role: 'system', content: SYSTEM_PROMPT });
  return first.messages.slice(1);
}

/** Waits until the turn shows it waits for the one before it. */
async function queued(turnId: string): Promise<void> {
  const state = await eventually(
    () => env.client.workflow.getHandle(turnId).query(turnStateQuery).catch(() => undefined),
    (s) => (s?.events ?? []).some((e) => e.data['phase'] === 'queued'),
    60_000,
  );
  expect(state?.events.map((e) => e.data['phase'])).toContain('queued');
}

/** A turn whose model call waits until the test releases it. */
function blocked(turnId: string, answer: string) {
  const called = deferred();
  const release = deferred();
  fakes.script(turnId, {
    callLlm: async () => {
      called.resolve();
      await within(release.promise, 60_000, `the test never released ${turnId}`);
      return say(answer);
    },
  });
  return { called: called.promise, release: () => release.resolve() };
}

const exchange = (q: string, a: string): ChatMessage[] => [
  { role: 'user', content: q },
  { role: 'assistant', content: a },
];

test('turns of a chain run one after the other, each with the exchanges before it; the wait ends on the signal', async () => {
  const [one, two, three] = [newTurnId('c1'), newTurnId('c2'), newTurnId('c3')];
  const first = blocked(one, 'first answer');
  fakes.script(two, { callLlm: async () => say('second answer') });
  fakes.script(three, { callLlm: async () => say('third answer') });

  await start(one, 'first question', chain([]));
  await within(first.called, 60_000, 'the first turn never called the model');
  await start(two, 'second question', chain([one]));
  await queued(two);
  expect(fakes.calls(two, 'callLlm')).toHaveLength(0);

  first.release();
  expect((await result(one)).memory).toEqual({ messages: exchange('first question', 'first answer') });
  const second = await result(two);
  expect(second.text).toBe('second answer');
  expect(historySent(two)).toEqual([...exchange('first question', 'first answer'), { role: 'user', content: 'second question' }]);
  // One look at the turn before (running); its end came as the signal, with the memory.
  expect(fakes.calls(two, 'predecessorMemory')).toHaveLength(1);
  expect(second.memory?.messages).toHaveLength(4);

  await start(three, 'third question', chain([two, one]));
  await result(three);
  expect(historySent(three)).toEqual([
    ...exchange('first question', 'first answer'),
    ...exchange('second question', 'second answer'),
    { role: 'user', content: 'third question' },
  ]);
  // The turn before had ended: no wait, no queued phase.
  const events = (await env.client.workflow.getHandle(three).query(turnStateQuery)).events;
  expect(events.map((e) => e.data['phase'])).not.toContain('queued');
});

test('a turn cancelled while it waited is passed over: the next one gets the memory of the turn before it', async () => {
  const [one, two, three] = [newTurnId('x1'), newTurnId('x2'), newTurnId('x3')];
  const first = blocked(one, 'kept answer');
  fakes.script(three, { callLlm: async () => say('after the cancel') });

  await start(one, 'kept question', chain([]));
  await within(first.called, 60_000, 'the first turn never called the model');
  const cancelled = await start(two, 'cancelled question', chain([one]));
  await queued(two);
  await start(three, 'third question', chain([two, one]));
  await queued(three);

  await cancelled.cancel();
  await expect(cancelled.result()).rejects.toThrow();
  first.release();
  await result(three);
  expect(historySent(three)).toEqual([...exchange('kept question', 'kept answer'), { role: 'user', content: 'third question' }]);
  expect(fakes.calls(two, 'callLlm')).toHaveLength(0);
});

test('a failed turn hands on the memory it began with; a missing one is passed over after its looks', async () => {
  const [one, two, three] = [newTurnId('f1'), newTurnId('f2'), newTurnId('f3')];
  fakes.script(one, { callLlm: async () => say('first answer') });
  fakes.script(two, {
    callLlm: async () => {
      throw ApplicationFailure.nonRetryable('the model refused', 'LlmRequestRejected');
    },
  });
  fakes.script(three, { callLlm: async () => say('third answer') });

  await start(one, 'first question', chain([]));
  await result(one);
  await start(two, 'failing question', chain([one]));
  await expect(result(two)).rejects.toThrow();

  const never = newTurnId('never');
  await start(three, 'third question', chain([never, two, one], { missingCheckMs: 100 }));
  await result(three);
  expect(historySent(three)).toEqual([...exchange('first question', 'first answer'), { role: 'user', content: 'third question' }]);
  // Looked for three times a pause apart, then passed over; the failed turn's memory came from its failure.
  const looks = fakes.calls(three, 'predecessorMemory');
  expect(looks.length).toBe(5);
  expect(looks.at(-1)).toEqual({ after: [never, two, one], skip: [never] });
});

test('the memory is summarized once it outgrows the threshold', async () => {
  const [one, two, three] = [newTurnId('s1'), newTurnId('s2'), newTurnId('s3')];
  const small: HistoryOptions = { maxTokenCount: 8_000, summarizationThreshold: 40, retainNewestMessages: 2 };
  const long = 'an answer long enough to pass the small threshold of this test, and then some more words';
  fakes.script(one, { callLlm: async () => say('older answer') });
  fakes.script(two, {
    callLlm: async () => say(long),
    summarizeConversation: async () => ({ summary: 'they asked an older question' }),
  });
  fakes.script(three, { callLlm: async () => say('third answer') });

  await start(one, 'older question', chain([], { history: small }));
  const first = await result(one);
  expect(first.memory).toEqual({ messages: exchange('older question', 'older answer') });
  expect(fakes.calls(one, 'summarizeConversation')).toHaveLength(0);

  await start(two, 'second question', chain([one], { history: small }));
  const second = await result(two);
  const [asked] = fakes.calls(two, 'summarizeConversation');
  expect(asked).toMatchObject({ messages: exchange('older question', 'older answer') });
  expect(second.memory).toEqual({ summary: 'they asked an older question', messages: exchange('second question', long) });

  await start(three, 'third question', chain([two, one], { history: small }));
  await result(three);
  expect(historySent(three)).toEqual([
    { role: 'system', content: 'Summary of the earlier conversation:\nthey asked an older question' },
    ...exchange('second question', long),
    { role: 'user', content: 'third question' },
  ]);
});

test('a session begun in a session workflow (decision 0016) goes on as a chain with that memory', async () => {
  const sessionId = `legacy${Date.now().toString(36)}`;
  const gateway = legacySessions(env.client, worker.taskQueue, { history: HISTORY, maxQueuedTurns: 4, transcriptLimit: 50, maxTurnsPerRun: 50 });
  const legacyTurn = newTurnId('legacy');
  fakes.script(legacyTurn, { callLlm: async () => say('legacy answer') });
  expect(await gateway.submitMessage({ turnId: legacyTurn, sessionId, text: 'legacy question', user: OWNER })).toMatchObject({ kind: 'accepted', created: true });
  const legacySession = sessionWorkflowId(ownerKey(OWNER), sessionId);
  // The session workflow recorded the answer (its memory for the next message).
  await eventually(
    () => gateway.getSession(OWNER, sessionId),
    (v) => v?.turnsCompleted === 1,
    60_000,
  );

  const next = newTurnId('after-legacy');
  fakes.script(next, { callLlm: async () => say('chain answer') });
  await start(next, 'chain question', chain([legacyTurn], { legacySession }));
  const ended = await result(next);
  expect(historySent(next)).toEqual([...exchange('legacy question', 'legacy answer'), { role: 'user', content: 'chain question' }]);
  expect(ended.memory?.messages).toEqual([...exchange('legacy question', 'legacy answer'), ...exchange('chain question', 'chain answer')]);
  await env.client.workflow.getHandle(legacySession).terminate('test over');
});
