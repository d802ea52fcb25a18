import { WithStartWorkflowOperation, WorkflowFailedError, WorkflowUpdateFailedError } from '@temporalio/client';
import { CancelledFailure } from '@temporalio/common';
import { ownerKey } from '../../src/api/gateway';
import { Failure, failureTypeOf } from '../../src/shared/failures';
import { sessionWorkflowId, turnId } from '../../src/shared/ids';
import type { SessionSettings, SessionView, SubmitMessageInput } from '../../src/shared/session';
import type { UserContext } from '../../src/shared/user';
import {
  SESSION_WORKFLOW_TYPE,
  SessionIdKey,
  sessionStateQuery,
  submitMessageUpdate,
  TenantIdKey,
  turnStateQuery,
  UserIdKey,
} from '../../src/workflows/definitions';
import type { sessionWorkflow } from '../../src/workflows/session';
import {
  deferred,
  eventually,
  FakeActivities,
  OWNER,
  policy,
  type RunningWorker,
  say,
  startWorker,
  startWorkflowEnv,
  SYSTEM_PROMPT,
  turnOptions,
  within,
  type WorkflowEnv,
} from './harness';

/**
 * sessionWorkflow on a real dev server with fake activities: messages are submitted the way the API
 * does (update-with-start), turns run one at a time as child workflows, a queued turn gets the
 * finished exchanges as its history, and a queued turn can be cancelled before its go.
 *
 * On a caching worker only. With `maxCachedWorkflows: 0` these scenarios pass too, but a queued
 * turn's first task after its `beginTurn` (replayed, then the catalog's local activity) trips a Core
 * SDK error ("There should not be any outgoing commands or messages when preparing a completion
 * response if the activation was only an eviction. This is an SDK bug.") and waits out the 10 s
 * workflow task timeout before its retry succeeds; with the catalog as a normal activity it does not.
 * Replay without a cache is covered by tests/workflows/turn.test.ts.
 */
jest.setTimeout(30_000);

const SETTINGS: SessionSettings = {
  history: { maxTokenCount: 8_000, summarizationThreshold: 6_000, retainNewestMessages: 10 },
  maxQueuedTurns: 4,
  transcriptLimit: 50,
  maxTurnsPerRun: 50,
};

let env: WorkflowEnv;
beforeAll(async () => {
  env = await startWorkflowEnv();
}, 120_000);
afterAll(async () => {
  await env?.stop();
});

let sessions = 0;

describe('sessionWorkflow on a caching worker', () => {
  const fakes = new FakeActivities();
  /** Session workflow ids this describe started. */
  const started: string[] = [];
  let worker: RunningWorker;
  beforeAll(async () => {
    worker = await startWorker(env, fakes.activities);
  });
  afterAll(async () => {
    // Sessions live on between turns; end them so the worker drains at once.
    for (const id of started) await env.client.workflow.getHandle(id).terminate('test over').catch(() => undefined);
    await worker?.stop();
  });

  function newSession(): string {
    sessions += 1;
    return `wf${sessions}${Date.now().toString(36)}`;
  }

  /** What the API's gateway does for POST /v1/sessions/:id/messages. */
  async function submit(sessionId: string, id: string, text: string, user: UserContext = OWNER) {
    const workflowId = sessionWorkflowId(ownerKey(OWNER), sessionId);
    if (!started.includes(workflowId)) started.push(workflowId);
    const message: SubmitMessageInput = { turnId: id, text, user, policy: policy(60_000), options: turnOptions() };
    return await env.client.workflow.executeUpdateWithStart(submitMessageUpdate, {
      args: [message],
      startWorkflowOperation: new WithStartWorkflowOperation<typeof sessionWorkflow>(SESSION_WORKFLOW_TYPE, {
        workflowId,
        taskQueue: worker.taskQueue,
        args: [{ sessionId, owner: { id: OWNER.id, tenant: OWNER.tenant }, settings: SETTINGS }],
        workflowIdConflictPolicy: 'USE_EXISTING',
        typedSearchAttributes: [
          { key: SessionIdKey, value: sessionId },
          { key: UserIdKey, value: OWNER.id },
          { key: TenantIdKey, value: OWNER.tenant },
        ],
      }),
    });
  }

  function session(sessionId: string) {
    return env.client.workflow.getHandle<typeof sessionWorkflow>(sessionWorkflowId(ownerKey(OWNER), sessionId));
  }

  async function settled(sessionId: string, messages: number): Promise<SessionView> {
    return await eventually(
      () => session(sessionId).query(sessionStateQuery),
      (v) => v.messages.length === messages && v.activeTurnId === undefined && v.queuedTurnIds.length === 0,
    );
  }

  test('a message sent while a turn runs waits for it, then gets the finished exchange as its history', async () => {
    const sid = newSession();
    const first = turnId(sid, 'one');
    const second = turnId(sid, 'two');
    const firstCalled = deferred();
    const releaseFirst = deferred();
    fakes.script(first, {
      callLlm: async () => {
        firstCalled.resolve();
        await within(releaseFirst.promise, 20_000, 'the test never released the first turn');
        return say('first answer');
      },
    });
    fakes.script(second, { callLlm: async () => say('second answer') });

    expect(await submit(sid, first, 'first question')).toEqual({ turnId: first, created: true, position: 0 });
    await within(firstCalled.promise, 20_000, 'the first turn never called the model');
    expect(await submit(sid, second, 'second question')).toEqual({ turnId: second, created: true, position: 1 });
    // Submitting the same turn again is recognized, not a second turn.
    expect(await submit(sid, second, 'second question')).toEqual({ turnId: second, created: false, position: 1 });

    const busy = await session(sid).query(sessionStateQuery);
    expect(busy).toMatchObject({ activeTurnId: first, queuedTurnIds: [second] });
    // The queued turn exists (its id answers queries) and waits for its go.
    const queued = await eventually(
      () => env.client.workflow.getHandle(second).query(turnStateQuery).catch(() => undefined),
      (s) => (s?.events.length ?? 0) > 0,
    );
    expect(queued?.events.map((e) => e.data)).toEqual([{ status: 'running', phase: 'queued' }]);
    expect(fakes.calls(second, 'callLlm')).toHaveLength(0);

    releaseFirst.resolve();
    const state = await env.client.workflow.getHandle(second).result();
    expect(state.text).toBe('second answer');
    expect(fakes.calls(second, 'callLlm')[0]?.messages).toEqual([
      { role: 'system', content: SYSTEM_PROMPT },
      { role: 'user', content: 'first question' },
      { role: 'assistant', content: 'first answer' },
      { role: 'user', content: 'second question' },
    ]);

    const view = await settled(sid, 4);
    expect(view.turnsCompleted).toBe(2);
    expect(view.messages.map((m) => [m.index, m.role, m.turnId, m.content, m.status])).toEqual([
      [0, 'user', first, 'first question', 'completed'],
      [1, 'user', second, 'second question', 'completed'],
      [2, 'assistant', first, 'first answer', 'completed'],
      [3, 'assistant', second, 'second answer', 'completed'],
    ]);
  });

  test('a queued turn cancelled before its go ends cancelled without calling the model; the session carries on', async () => {
    const sid = newSession();
    const running = turnId(sid, 'run');
    const dropped = turnId(sid, 'drop');
    const runningCalled = deferred();
    const releaseRunning = deferred();
    fakes.script(running, {
      callLlm: async () => {
        runningCalled.resolve();
        await within(releaseRunning.promise, 20_000, 'the test never released the running turn');
        return say('ran');
      },
    });
    fakes.script(dropped, { callLlm: async () => say('should not happen') });

    await submit(sid, running, 'run this');
    await within(runningCalled.promise, 20_000, 'the running turn never called the model');
    expect(await submit(sid, dropped, 'never mind')).toMatchObject({ created: true, position: 1 });
    const handle = env.client.workflow.getHandle(dropped);
    await handle.cancel();
    const failure = await handle.result().catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(WorkflowFailedError);
    expect((failure as WorkflowFailedError).cause).toBeInstanceOf(CancelledFailure);

    releaseRunning.resolve();
    const view = await settled(sid, 4);
    expect(fakes.calls(dropped, 'callLlm')).toHaveLength(0);
    expect(view.turnsCompleted).toBe(1);
    expect(view.messages.map((m) => [m.role, m.turnId, m.content, m.status])).toEqual([
      ['user', running, 'run this', 'completed'],
      ['user', dropped, 'never mind', 'cancelled'],
      ['assistant', running, 'ran', 'completed'],
      ['assistant', dropped, 'The turn was cancelled.', 'cancelled'],
    ]);
  });

  test("someone else's message is refused by the update's validator", async () => {
    const sid = newSession();
    fakes.script(turnId(sid, 'mine'), { callLlm: async () => say('hi') });
    await submit(sid, turnId(sid, 'mine'), 'hello');
    const intruder: UserContext = { ...OWNER, id: 'u-intruder' };
    const refused = await submit(sid, turnId(sid, 'theirs'), 'let me in', intruder).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(WorkflowUpdateFailedError);
    expect(failureTypeOf(refused)).toBe(Failure.SessionForbidden);
    const view = await settled(sid, 2);
    expect(view.messages.map((m) => m.turnId)).toEqual([turnId(sid, 'mine'), turnId(sid, 'mine')]);
  });
});
