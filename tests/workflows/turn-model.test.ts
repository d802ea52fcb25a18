import { NOOP_METRICS_SINKS, tracingWorkerOptions } from '../../src/cli/workflow-bundle';
import type { TurnInput } from '../../src/shared/turn';
import { type TurnAccounting, TURN_WORKFLOW_TYPE } from '../../src/workflows/definitions';
import type { turnWorkflow } from '../../src/workflows/turn';
import { callTools, FakeActivities, newTurnId, type RunningWorker, say, startWorker, startWorkflowEnv, turnInput, turnOptions, type WorkflowEnv } from './harness';

/**
 * The model a turn's options name (the API's choice for the caller's role, docs/decisions/0042) goes
 * with every LLM step, and the turn's events say which provider and model answered each step: the
 * `calling_tools` status of a step that called tools, the `text` event of the answer. On a worker
 * without a workflow cache, so every task replays the turn from its history.
 */
jest.setTimeout(120_000);

let env: WorkflowEnv;
let worker: RunningWorker;
const fakes = new FakeActivities();
/** What each turn told the worker's accounting sink when it ended, by workflow id. */
const accounted = new Map<string, TurnAccounting | undefined>();
beforeAll(async () => {
  env = await startWorkflowEnv();
  const metrics = {
    ...NOOP_METRICS_SINKS.metrics,
    turnFinished: { fn: (info: { workflowId: string }, _o: unknown, _s: unknown, _t: unknown, a?: TurnAccounting) => void accounted.set(info.workflowId, a) },
  };
  worker = await startWorker(env, fakes.activities, { maxCachedWorkflows: 0, sinks: { ...tracingWorkerOptions().sinks, ...NOOP_METRICS_SINKS, metrics } });
}, 120_000);
afterAll(async () => {
  await worker?.stop();
  await env?.stop();
});

async function run(input: TurnInput) {
  const handle = await env.client.workflow.start<typeof turnWorkflow>(TURN_WORKFLOW_TYPE, { workflowId: input.turnId, taskQueue: worker.taskQueue, args: [input] });
  return await handle.result();
}

test("every LLM step asks the options' model; the events name the provider and model that answered each step", async () => {
  const id = newTurnId('model-by-role');
  fakes.script(id, {
    // As the activity answers: the named model's provider and id (the worker's default without a name).
    callLlm: async (req) => ({
      ...(req.step === 1 ? callTools(['c1', 'clock__now', {}]) : say('It is now.')),
      ...(req.model === 'claude' ? { provider: 'anthropic', model: 'claude-sonnet-4-5' } : { provider: 'openai', model: 'default-model' }),
    }),
  });
  const state = await run(turnInput(id, { options: turnOptions({ model: 'claude' }) }));
  expect(state.status).toBe('completed');
  expect(fakes.calls(id, 'callLlm').map((r) => [r.step, r.model])).toEqual([
    [1, 'claude'],
    [2, 'claude'],
  ]);
  const tools = state.events.find((e) => e.type === 'status' && e.data.phase === 'calling_tools');
  expect(tools?.data).toEqual({ status: 'running', phase: 'calling_tools', step: 1, count: 1, provider: 'anthropic', model: 'claude-sonnet-4-5' });
  expect(state.events.find((e) => e.type === 'text')?.data).toEqual({ text: 'It is now.', provider: 'anthropic', model: 'claude-sonnet-4-5' });
  // The worker's accounting (the audit's turn_usage line) hears which models answered, once each.
  expect(accounted.get(id)?.models).toEqual(['claude-sonnet-4-5']);
});

test('options without a model: the requests name none; an answer that names no provider adds nothing to the events', async () => {
  const id = newTurnId('default-model');
  fakes.script(id, { callLlm: async () => say('Hello.') });
  const state = await run(turnInput(id));
  expect(fakes.calls(id, 'callLlm').map((r) => 'model' in r)).toEqual([false]);
  expect(state.events.find((e) => e.type === 'text')?.data).toEqual({ text: 'Hello.' });
  expect(accounted.get(id)).toBeDefined();
  expect(accounted.get(id)).not.toHaveProperty('models');
});
