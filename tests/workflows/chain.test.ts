/**
 * The chain of turns (docs/decisions/0033) on a real dev server with fake activities and the real
 * session link: each turn takes its memory from the turn before it, waits for one that still runs
 * (its end arrives as the worker's signal, not a timer), passes over a cancelled or missing one, and
 * hands on the memory after it (summarized past the threshold).
 */
import { ApplicationFailure } from '@temporalio/common';
import { ownerKey } from '../../src/api/gateway';
import { legacySessionIds, readLegacySession } from '../../src/legacy-sessions';
import { sessionWorkflowId } from '../../src/shared/ids';
import type { ChainInput, HistoryOptions, SessionMemory } from '../../src/shared/session';
import type { ChatMessage, TurnMemory, TurnResult } from '../../src/shared/turn';
import { SESSION_MEMORY_WORKFLOW_TYPE, TURN_WORKFLOW_TYPE, turnStateQuery } from '../../src/workflows/definitions';
import {
  deferred,
  eventually,
  FakeActivities,
  newTurnId,
  OWNER,
  type RunningWorker,
  say,
  startChainWorker,
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
let handedOn: Map<string, TurnMemory[]>;
beforeAll(async () => {
  env = await startWorkflowEnv();
  ({ fakes, worker, handedOn } = await startChainWorker(env));
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

test('each ended turn hands on its memory once; a turn given it reads nothing of the turns before, one given another turn\'s reads as before', async () => {
  const [one, two, three] = [newTurnId('h1'), newTurnId('h2'), newTurnId('h3')];
  fakes.script(one, { callLlm: async () => say('first answer') });
  fakes.script(two, { callLlm: async () => say('second answer') });
  fakes.script(three, { callLlm: async () => say('third answer') });

  // The session's first turn (the API says so): nothing to read, no local activity but the catalog's.
  await start(one, 'first question', chain([], { first: true }));
  const first = await result(one);
  expect(historySent(one)).toEqual([{ role: 'user', content: 'first question' }]);
  expect(fakes.calls(one, 'predecessorMemory')).toHaveLength(0);
  const firstMarkers = (await env.client.workflow.getHandle(one).fetchHistory()).events?.filter((e) => e.markerRecordedEventAttributes) ?? [];
  expect(firstMarkers).toHaveLength(1);
  // Handed on with the turn's end, exactly what its result carries.
  expect(handedOn.get(one)).toEqual([first.memory]);

  const memory = first.memory as TurnMemory;
  await start(two, 'second question', chain([one], { handedOn: { turnId: one, memory } }));
  const second = await result(two);
  expect(historySent(two)).toEqual([...exchange('first question', 'first answer'), { role: 'user', content: 'second question' }]);
  expect(fakes.calls(two, 'predecessorMemory')).toHaveLength(0);
  expect(handedOn.get(two)).toEqual([second.memory]);
  // Nothing about the turn before in its history: no local activity but the catalog's.
  const markers = (await env.client.workflow.getHandle(two).fetchHistory()).events?.filter((e) => e.markerRecordedEventAttributes) ?? [];
  expect(markers).toHaveLength(1);

  // A memory handed on by a turn that is not the nearest before is not taken: the turn reads as before.
  await start(three, 'third question', chain([two, one], { handedOn: { turnId: one, memory } }));
  await result(three);
  expect(fakes.calls(three, 'predecessorMemory')).toHaveLength(1);
  expect(historySent(three)).toEqual([
    ...exchange('first question', 'first answer'),
    ...exchange('second question', 'second answer'),
    { role: 'user', content: 'third question' },
  ]);
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
  // Handed on once summarized (after the stream's done), not before.
  expect(handedOn.get(two)).toEqual([second.memory]);

  await start(three, 'third question', chain([two, one], { history: small }));
  await result(three);
  expect(historySent(three)).toEqual([
    { role: 'system', content: 'Summary of the earlier conversation:\nthey asked an older question' },
    ...exchange('second question', long),
    { role: 'user', content: 'third question' },
  ]);
});

/**
 * A session begun in a session workflow (decision 0016), migrated (decision 0041): the closed carrier
 * under that workflow's id holds its memory and transcript, and the session's first turn of the chain
 * begins with that memory. (Before step 2 removed the session workflow, tests/workflows/session-migration.test.ts
 * ran the migration itself on live session workflows; the carrier is now started directly, as the migration did.)
 */
test("a migrated session's carrier holds its memory and transcript, and its next turn of the chain begins with that memory", async () => {
  const sessionId = `migrated${Date.now().toString(36)}`;
  const workflowId = sessionWorkflowId(ownerKey(OWNER), sessionId);
  const oldTurn = newTurnId('old');
  const at = new Date().toISOString();
  const carried: SessionMemory = {
    view: {
      sessionId,
      owner: { id: OWNER.id, tenant: OWNER.tenant },
      summary: 'they met before',
      messages: [
        { index: 0, role: 'user', content: 'the old question', turnId: oldTurn, at, status: 'completed' },
        { index: 1, role: 'assistant', content: 'the old answer', turnId: oldTurn, at, status: 'completed' },
      ],
      totalMessages: 2,
      turnsCompleted: 1,
      queuedTurnIds: [],
      run: 1,
    },
    memory: { summary: 'they met before', messages: exchange('the old question', 'the old answer') },
  };
  await env.client.workflow.start(SESSION_MEMORY_WORKFLOW_TYPE, { workflowId, taskQueue: worker.taskQueue, args: [carried] });
  // The API's view and the chain read the same: the carrier's result.
  expect(await readLegacySession(env.client, workflowId)).toEqual(carried);
  const latest = await env.client.workflow.getHandle(workflowId).describe();
  expect([latest.type, latest.status.name]).toEqual([SESSION_MEMORY_WORKFLOW_TYPE, 'COMPLETED']);
  // The API lists such ids by visibility (once per process) to know which new sessions reach back:
  // the carrier, once visible; not an id with nothing under it.
  const lookup = legacySessionIds(env.client);
  expect(await eventually(() => legacySessionIds(env.client)(workflowId), (found) => found, 60_000)).toBe(true);
  expect(await lookup(sessionWorkflowId(ownerKey(OWNER), `${sessionId}none`))).toBe(false);

  // The session's first turn of the chain: no turn before it holds a memory, the carrier does.
  const next = newTurnId('next');
  fakes.script(next, { callLlm: async () => say('the new answer') });
  await start(next, 'the new question', chain([], { legacySession: workflowId }));
  const ended = await result(next);
  expect(fakes.calls(next, 'callLlm')[0]?.messages).toEqual([
    { role: 'system', content: SYSTEM_PROMPT },
    { role: 'system', content: 'Summary of the earlier conversation:\nthey met before' },
    ...exchange('the old question', 'the old answer'),
    { role: 'user', content: 'the new question' },
  ]);
  expect(ended.memory).toEqual({ summary: 'they met before', messages: [...exchange('the old question', 'the old answer'), ...exchange('the new question', 'the new answer')] });

  // No workflow under an id: no memory; a turn workflow under it (anything but a carrier): refused, saying why.
  expect(await readLegacySession(env.client, sessionWorkflowId(ownerKey(OWNER), `${sessionId}none`))).toBeUndefined();
  await expect(readLegacySession(env.client, next)).rejects.toThrow(/not a migrated session: run the session migration of decision 0041/);
});
