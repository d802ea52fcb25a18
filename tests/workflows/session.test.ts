import { Context } from '@temporalio/activity';
import { WithStartWorkflowOperation, WorkflowFailedError, WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { CancelledFailure } from '@temporalio/common';
import { ownerKey } from '../../src/api/gateway';
import { legacySessions } from './legacy-session';
import { createSessionLink, sessionSinks } from '../../src/session-link';
import { NOOP_METRICS_SINKS, tracingWorkerOptions } from '../../src/cli/workflow-bundle';
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
  type RunningWorker,
  say,
  startWorker,
  startWorkflowEnv,
  SYSTEM_PROMPT,
  within,
  type WorkflowEnv,
} from './harness';

/**
 * sessionWorkflow on a real dev server with fake activities: messages are submitted the way the API
 * does (update-with-start, then the turn's start), turns run one at a time, a queued turn gets the
 * finished exchanges as its history, and a queued turn can be cancelled before its go.
 *
 * On a caching worker only. With `maxCachedWorkflows: 0` these scenarios pass too, but a queued
 * turn's first task after its `beginTurn` (replayed, then the catalog's local activity) trips a Core
 * SDK error ("There should not be any outgoing commands or messages when preparing a completion
 * response if the activation was only an eviction. This is an SDK bug.") and waits out the 10 s
 * workflow task timeout before its retry succeeds; with the catalog as a normal activity it does not.
 * Replay without a cache is covered by tests/workflows/turn.test.ts.
 */
// A deadline for a hang, not a speed goal: on a loaded machine a turn that replays every task takes its time.
jest.setTimeout(120_000);

const SETTINGS: SessionSettings = {
  history: { maxTokenCount: 8_000, summarizationThreshold: 6_000, retainNewestMessages: 10 },
  maxQueuedTurns: 4,
  transcriptLimit: 50,
  maxTurnsPerRun: 50,
  // Turns the API started and then lost (terminated, never started) are looked for soon.
  turnCheckMs: 1_000,
};

let env: WorkflowEnv;
beforeAll(async () => {
  env = await startWorkflowEnv();
}, 120_000);
afterAll(async () => {
  await env?.stop();
});

let sessions = 0;

/** The API's side of the session workflow's protocol, submitting to workers on `taskQueue`. */
function gatewayOn(taskQueue: string, sessionSettings: SessionSettings) {
  return legacySessions(env.client, taskQueue, sessionSettings);
}

/** The worker's sinks as the real worker has them for sessions: a turn's end reaches its session. */
function linkedSinks() {
  return {
    ...tracingWorkerOptions().sinks,
    ...NOOP_METRICS_SINKS,
    ...sessionSinks(createSessionLink(env.client), (_id, turnId, err) => console.error(`announcing ${turnId} failed: ${String(err)}`)),
  };
}

/** A message becomes a turn as the API does it: registered with the session, then started beside it. */
describe('sessionWorkflow on a caching worker', () => {
  let fakes = new FakeActivities();
  /** Session workflow ids this describe started. */
  const started: string[] = [];
  let worker: RunningWorker;
  let gateway: ReturnType<typeof gatewayOn>;
  beforeAll(async () => {
    fakes = new FakeActivities(createSessionLink(env.client));
    worker = await startWorker(env, fakes.activities, { sinks: linkedSinks() });
    gateway = gatewayOn(worker.taskQueue, SETTINGS);
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
    if (user === OWNER) {
      const outcome = await gateway.submitMessage({ turnId: id, sessionId, text, user });
      if (outcome.kind === 'busy') return outcome;
      return { turnId: id, created: outcome.created, position: outcome.position };
    }
    // Another user's message goes to the owner's session directly: the gateway would never send it.
    const message: SubmitMessageInput = { turnId: id, text, user, startedTurn: true };
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
    expect(await submit(sid, second, 'second question')).toMatchObject({ turnId: second, created: false, position: 1 });

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

/**
 * What only the API-started protocol has to get right: a message the session refuses starts no turn,
 * a turn that ends without announcing it (terminated) or never starts does not block the session,
 * and a turn queued at registration gets its memory from the session when its turn comes.
 */
describe('turns the API starts beside their session', () => {
  let fakes: FakeActivities;
  const sessionIds: string[] = [];
  let worker: RunningWorker;
  let gateway: ReturnType<typeof gatewayOn>;
  beforeAll(async () => {
    fakes = new FakeActivities(createSessionLink(env.client));
    worker = await startWorker(env, fakes.activities, { sinks: linkedSinks() });
    gateway = gatewayOn(worker.taskQueue, { ...SETTINGS, maxQueuedTurns: 1 });
  });
  afterAll(async () => {
    for (const id of sessionIds) await env.client.workflow.getHandle(id).terminate('test over').catch(() => undefined);
    await worker?.stop();
  });

  function newSession(): string {
    sessions += 1;
    const sid = `api${sessions}${Date.now().toString(36)}`;
    sessionIds.push(sessionWorkflowId(ownerKey(OWNER), sid));
    return sid;
  }
  const view = (sid: string) => env.client.workflow.getHandle(sessionWorkflowId(ownerKey(OWNER), sid)).query(sessionStateQuery);

  test('a message refused as busy starts no turn; the queued ones still run in order', async () => {
    const sid = newSession();
    const [first, second, third] = [turnId(sid, 'a'), turnId(sid, 'b'), turnId(sid, 'c')];
    const release = deferred();
    const firstCalled = deferred();
    fakes.script(first, {
      callLlm: async () => {
        firstCalled.resolve();
        await within(release.promise, 20_000, 'the test never released the first turn');
        return say('one');
      },
    });
    fakes.script(second, { callLlm: async () => say('two') });
    fakes.script(third, { callLlm: async () => say('three') });

    expect(await gateway.submitMessage({ turnId: first, sessionId: sid, text: 'first', user: OWNER })).toEqual({ kind: 'accepted', created: true, position: 0 });
    await within(firstCalled.promise, 20_000, 'the first turn never called the model');
    expect(await gateway.submitMessage({ turnId: second, sessionId: sid, text: 'second', user: OWNER })).toEqual({ kind: 'accepted', created: true, position: 1 });
    expect(await gateway.submitMessage({ turnId: third, sessionId: sid, text: 'third', user: OWNER })).toEqual({ kind: 'busy' });
    // The refused message never got a turn.
    await expect(env.client.workflow.getHandle(third).describe()).rejects.toBeInstanceOf(WorkflowNotFoundError);

    release.resolve();
    expect((await env.client.workflow.getHandle(second).result()).text).toBe('two');
    // The second turn got the first exchange as its memory, from the session.
    expect(fakes.calls(second, 'callLlm')[0]?.messages.slice(1)).toEqual([
      { role: 'user', content: 'first' },
      { role: 'assistant', content: 'one' },
      { role: 'user', content: 'second' },
    ]);
    const done = await eventually(() => view(sid), (v) => v.messages.length === 4 && v.activeTurnId === undefined);
    expect(done.messages.map((m) => [m.role, m.turnId, m.status])).toEqual([
      ['user', first, 'completed'],
      ['user', second, 'completed'],
      ['assistant', first, 'completed'],
      ['assistant', second, 'completed'],
    ]);
    expect(fakes.calls(third, 'callLlm')).toHaveLength(0);
  });

  test('a turn terminated while it runs does not block its session: the session checks on it and carries on', async () => {
    const sid = newSession();
    const [stuck, next] = [turnId(sid, 'stuck'), turnId(sid, 'next')];
    const stuckCalled = deferred();
    fakes.script(stuck, {
      callLlm: async () => {
        stuckCalled.resolve();
        // Never answers: the turn is terminated meanwhile. The worker's shutdown cancels the call.
        const signal = Context.current().cancellationSignal;
        return await new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(new Error('cancelled'))));
      },
    });
    fakes.script(next, { callLlm: async () => say('after the stuck one') });
    await gateway.submitMessage({ turnId: stuck, sessionId: sid, text: 'hang', user: OWNER });
    await within(stuckCalled.promise, 20_000, 'the stuck turn never called the model');
    await gateway.submitMessage({ turnId: next, sessionId: sid, text: 'then this', user: OWNER });
    await env.client.workflow.getHandle(stuck).terminate('an operator ended it');

    expect((await env.client.workflow.getHandle(next).result()).text).toBe('after the stuck one');
    const done = await eventually(() => view(sid), (v) => v.messages.length === 4 && v.activeTurnId === undefined);
    expect(done.messages.filter((m) => m.role === 'assistant').map((m) => [m.turnId, m.status, m.content])).toEqual([
      [stuck, 'failed', 'The turn was terminated.'],
      [next, 'completed', 'after the stuck one'],
    ]);
    expect(fakes.calls(sessionIds.at(-1) as string, 'turnOutcome')).toEqual([stuck]);
  });

  test("a turn whose end never reached its session (the worker's signal lost) is read from Temporal", async () => {
    // A worker whose sinks drop the announcement: as if the worker died right after the turn's last task.
    const mute = new FakeActivities(createSessionLink(env.client));
    const muteWorker = await startWorker(env, mute.activities, { sinks: { ...tracingWorkerOptions().sinks, ...NOOP_METRICS_SINKS } });
    try {
      const muteGateway = gatewayOn(muteWorker.taskQueue, SETTINGS);
      const sid = newSession();
      const [first, second] = [turnId(sid, 'quiet'), turnId(sid, 'after')];
      mute.script(first, { callLlm: async () => say('nobody heard') });
      mute.script(second, { callLlm: async () => say('still in order') });
      await muteGateway.submitMessage({ turnId: first, sessionId: sid, text: 'one', user: OWNER });
      expect((await env.client.workflow.getHandle(first).result()).text).toBe('nobody heard');
      await muteGateway.submitMessage({ turnId: second, sessionId: sid, text: 'two', user: OWNER });
      const done = await eventually(() => view(sid), (v) => v.messages.length === 4 && v.activeTurnId === undefined);
      expect(done.messages.filter((m) => m.role === 'assistant').map((m) => [m.turnId, m.status, m.content])).toEqual([
        [first, 'completed', 'nobody heard'],
        [second, 'completed', 'still in order'],
      ]);
      // The second turn began with the first exchange, read from the first turn's result.
      expect(mute.calls(second, 'callLlm')[0]?.messages.slice(1, 3)).toEqual([
        { role: 'user', content: 'one' },
        { role: 'assistant', content: 'nobody heard' },
      ]);
      expect(mute.calls(sessionWorkflowId(ownerKey(OWNER), sid), 'turnOutcome')).toEqual([first, second]);
    } finally {
      await muteWorker.stop();
    }
  });

  test('a retried message whose first request died before its turn started gets its turn from the retry', async () => {
    const sid = newSession();
    const orphan = turnId(sid, 'orphan');
    fakes.script(orphan, { callLlm: async () => say('started by the retry') });
    // The first request registered the message and died before starting the turn.
    await env.client.workflow.executeUpdateWithStart(submitMessageUpdate, {
      args: [{ turnId: orphan, text: 'once more', user: OWNER, startedTurn: true }],
      startWorkflowOperation: new WithStartWorkflowOperation<typeof sessionWorkflow>(SESSION_WORKFLOW_TYPE, {
        workflowId: sessionWorkflowId(ownerKey(OWNER), sid),
        taskQueue: worker.taskQueue,
        args: [{ sessionId: sid, owner: { id: OWNER.id, tenant: OWNER.tenant }, settings: { ...SETTINGS, turnCheckMs: 30_000 } }],
        workflowIdConflictPolicy: 'USE_EXISTING',
      }),
    });
    // The client retries with the same Idempotency-Key: the same turn id.
    expect(await gateway.submitMessage({ turnId: orphan, sessionId: sid, text: 'once more', user: OWNER })).toEqual({ kind: 'accepted', created: false, position: 0 });
    expect((await env.client.workflow.getHandle(orphan).result()).text).toBe('started by the retry');
    const done = await eventually(() => view(sid), (v) => v.messages.length === 2 && v.activeTurnId === undefined);
    expect(done.messages.map((m) => [m.role, m.status])).toEqual([
      ['user', 'completed'],
      ['assistant', 'completed'],
    ]);
  });

  test('a registration whose turn never started is found missing and answered as failed', async () => {
    const sid = newSession();
    const ghost = turnId(sid, 'ghost');
    // What an API that died between the two calls leaves behind: the registration only.
    await env.client.workflow.executeUpdateWithStart(submitMessageUpdate, {
      args: [{ turnId: ghost, text: 'lost', user: OWNER, startedTurn: true }],
      startWorkflowOperation: new WithStartWorkflowOperation<typeof sessionWorkflow>(SESSION_WORKFLOW_TYPE, {
        workflowId: sessionWorkflowId(ownerKey(OWNER), sid),
        taskQueue: worker.taskQueue,
        args: [{ sessionId: sid, owner: { id: OWNER.id, tenant: OWNER.tenant }, settings: SETTINGS }],
        workflowIdConflictPolicy: 'USE_EXISTING',
      }),
    });
    const done = await eventually(() => view(sid), (v) => v.messages.length === 2 && v.activeTurnId === undefined);
    expect(done.messages.map((m) => [m.role, m.status, m.content])).toEqual([
      ['user', 'failed', 'lost'],
      ['assistant', 'failed', 'The turn could not be started.'],
    ]);
  });
});
