/**
 * The migration of sessions of decision 0016's protocol (decision 0041) on a real dev server: idle
 * session workflows give way to closed carriers under their ids, a busy one is left for a later run,
 * one stopped between its termination and its carrier is finished on the next run, a second run
 * does nothing new, and a migrated session's next turn of the chain begins with the old memory.
 */
import { NOOP_METRICS_SINKS, tracingWorkerOptions } from '../../src/cli/workflow-bundle';
import { ownerKey } from '../../src/api/gateway';
import { readLegacySession } from '../../src/legacy-sessions';
import { createSessionLink, sessionSinks } from '../../src/session-link';
import { MIGRATION_REASON, migrateSessions } from '../../src/session-migration';
import { sessionWorkflowId } from '../../src/shared/ids';
import type { ChainInput, SessionSettings } from '../../src/shared/session';
import type { ChatMessage, TurnResult } from '../../src/shared/turn';
import { SESSION_MEMORY_WORKFLOW_TYPE, SESSION_WORKFLOW_TYPE, TURN_WORKFLOW_TYPE } from '../../src/workflows/definitions';
import { deferred, eventually, FakeActivities, newTurnId, OWNER, type RunningWorker, say, startWorker, startWorkflowEnv, SYSTEM_PROMPT, turnInput, within, type WorkflowEnv } from './harness';
import { legacySessions } from './legacy-session';

// A deadline for a hang, not a speed goal.
jest.setTimeout(180_000);

const SETTINGS: SessionSettings = {
  history: { maxTokenCount: 8_000, summarizationThreshold: 6_000, retainNewestMessages: 10 },
  maxQueuedTurns: 4,
  transcriptLimit: 50,
  maxTurnsPerRun: 50,
};

let env: WorkflowEnv;
let fakes: FakeActivities;
let worker: RunningWorker;
beforeAll(async () => {
  env = await startWorkflowEnv();
  fakes = new FakeActivities(createSessionLink(env.client));
  worker = await startWorker(env, fakes.activities, {
    sinks: { ...tracingWorkerOptions().sinks, ...NOOP_METRICS_SINKS, ...sessionSinks(createSessionLink(env.client), () => undefined) },
  });
}, 120_000);
afterAll(async () => {
  await worker?.stop();
  await env?.stop();
});

const exchange = (q: string, a: string): ChatMessage[] => [
  { role: 'user', content: q },
  { role: 'assistant', content: a },
];

test('idle sessions move into carriers, busy ones on a later run; the next turn of a migrated session begins with its memory', async () => {
  const gateway = legacySessions(env.client, worker.taskQueue, SETTINGS);
  const stamp = Date.now().toString(36);
  const [idle, busy, stopped] = ['idle', 'busy', 'stopped'].map((s) => `${s}${stamp}`) as [string, string, string];
  const workflowOf = (sessionId: string) => sessionWorkflowId(ownerKey(OWNER), sessionId);
  const view = (sessionId: string) => gateway.getSession(OWNER, sessionId);

  // Two sessions with an exchange each; one whose turn runs still.
  const idleTurn = newTurnId('idle');
  fakes.script(idleTurn, { callLlm: async () => say('the old answer') });
  await gateway.submitMessage({ turnId: idleTurn, sessionId: idle, text: 'the old question', user: OWNER });
  const stoppedTurn = newTurnId('stopped');
  fakes.script(stoppedTurn, { callLlm: async () => say('stopped answer') });
  await gateway.submitMessage({ turnId: stoppedTurn, sessionId: stopped, text: 'stopped question', user: OWNER });
  const busyTurn = newTurnId('busy');
  const called = deferred();
  const release = deferred();
  fakes.script(busyTurn, {
    callLlm: async () => {
      called.resolve();
      await within(release.promise, 120_000, 'the test never released the busy turn');
      return say('busy answer');
    },
  });
  await gateway.submitMessage({ turnId: busyTurn, sessionId: busy, text: 'busy question', user: OWNER });
  await within(called.promise, 60_000, 'the busy turn never called the model');
  for (const sid of [idle, stopped]) await eventually(() => view(sid), (v) => v?.turnsCompleted === 1 && v.activeTurnId === undefined, 60_000);
  // A migration that stopped between a session's termination and its carrier's start.
  await env.client.workflow.getHandle(workflowOf(stopped)).terminate(MIGRATION_REASON);
  // Visibility lists what was started a moment ago.
  await eventually(
    async () => {
      let n = 0;
      for await (const _ of env.client.workflow.list({ query: `WorkflowType = '${SESSION_WORKFLOW_TYPE}'` })) n += 1;
      return n;
    },
    (n) => n === 3,
    60_000,
  );

  expect(await migrateSessions(env.client, worker.taskQueue)).toEqual({ migrated: [workflowOf(idle), workflowOf(stopped)].sort(), busy: [workflowOf(busy)], failed: [] });
  for (const sid of [idle, stopped]) {
    const handle = env.client.workflow.getHandle(workflowOf(sid));
    await handle.result();
    const latest = await handle.describe();
    expect([latest.type, latest.status.name]).toEqual([SESSION_MEMORY_WORKFLOW_TYPE, 'COMPLETED']);
  }
  const carried = await readLegacySession(env.client, workflowOf(idle));
  expect(carried?.memory).toEqual({ messages: exchange('the old question', 'the old answer') });
  expect(carried?.view.messages.map((m) => [m.role, m.turnId, m.content, m.status])).toEqual([
    ['user', idleTurn, 'the old question', 'completed'],
    ['assistant', idleTurn, 'the old answer', 'completed'],
  ]);

  // The session goes on as a chain: its first turn reads the carrier (the turn before holds no memory).
  const next = newTurnId('next');
  fakes.script(next, { callLlm: async () => say('the new answer') });
  const chain: ChainInput = { after: [idleTurn], history: SETTINGS.history, legacySession: workflowOf(idle) };
  await env.client.workflow.start(TURN_WORKFLOW_TYPE, { workflowId: next, taskQueue: worker.taskQueue, args: [turnInput(next, { userText: 'the new question', chain })] });
  const ended = (await env.client.workflow.getHandle(next).result()) as TurnResult;
  expect(fakes.calls(next, 'callLlm')[0]?.messages).toEqual([{ role: 'system', content: SYSTEM_PROMPT }, ...exchange('the old question', 'the old answer'), { role: 'user', content: 'the new question' }]);
  expect(ended.memory?.messages).toEqual([...exchange('the old question', 'the old answer'), ...exchange('the new question', 'the new answer')]);

  // Again: nothing new while the busy session is busy; once idle, it moves; then nothing is left.
  expect(await migrateSessions(env.client, worker.taskQueue)).toEqual({ migrated: [], busy: [workflowOf(busy)], failed: [] });
  release.resolve();
  await eventually(() => view(busy), (v) => v?.turnsCompleted === 1 && v.activeTurnId === undefined, 60_000);
  expect(await migrateSessions(env.client, worker.taskQueue)).toEqual({ migrated: [workflowOf(busy)], busy: [], failed: [] });
  expect((await readLegacySession(env.client, workflowOf(busy)))?.memory).toEqual({ messages: exchange('busy question', 'busy answer') });
  expect(await migrateSessions(env.client, worker.taskQueue)).toEqual({ migrated: [], busy: [], failed: [] });
});
