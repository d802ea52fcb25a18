import type { TurnInput } from '../../src/shared/turn';
import { TURN_WORKFLOW_TYPE } from '../../src/workflows/definitions';
import type { turnWorkflow } from '../../src/workflows/turn';
import { patchIds, spanOf, toolSpans } from '../helpers/tool-spans';
import { callTools, CATALOG, newTurnId, policy, say, scriptedWorker, turnInput, WORKER_MODES, workflowEnvForFile } from './harness';

/**
 * The calls of one step overlap whatever their kind (decision 0021): a read-only tool, which would
 * run as a local activity, must not hold back a regular call beside it. Proved from the turn's own
 * history, on a caching worker and on one that replays every workflow task.
 */
jest.setTimeout(30_000);

/** How long the read-only tool takes: the regular call beside it must be done well before. */
const READ_ONLY_MS = 1_500;

const env = workflowEnvForFile();

/** The test catalog with clock/now marked read-only, as the worker marks it. */
const listToolRefs = async () => ({
  tools: CATALOG.tools.map(({ name, server, tool }) => ({ name, server, tool, ...(tool === 'now' ? { readOnly: true as const } : {}) })),
  servers: CATALOG.servers,
});

describe.each(WORKER_MODES)('tool calls of one step on $mode', ({ options }) => {
  const { fakes, worker } = scriptedWorker(env, options);

  async function startTurn(input: TurnInput) {
    return await env().client.workflow.start<typeof turnWorkflow>(TURN_WORKFLOW_TYPE, { workflowId: input.turnId, taskQueue: worker().taskQueue, args: [input] });
  }

  /** clock/now takes READ_ONLY_MS; every other tool answers at once. */
  const slowReadOnly: Partial<typeof fakes.defaults> = {
    listToolRefs,
    callTool: async (input) => {
      if (input.tool === 'now') await new Promise((r) => setTimeout(r, READ_ONLY_MS));
      return { isError: false, text: `${input.server}/${input.tool} ok` };
    },
  };

  test('a regular call beside a slow read-only one starts at once and ends while the read-only call still runs', async () => {
    const id = newTurnId('overlap');
    fakes.script(id, { ...slowReadOnly, callLlm: async (req) => (req.step === 1 ? callTools(['c1', 'clock__now', {}], ['n1', 'notes__add', { text: 'hi' }]) : say('Done.')) });
    const handle = await startTurn(turnInput(id));
    const state = await handle.result();
    expect(state.toolCalls.map((c) => [c.id, c.state])).toEqual([['c1', 'completed'], ['n1', 'completed']]);

    const history = await handle.fetchHistory();
    const spans = toolSpans(history);
    const readOnly = spanOf(spans, 'clock: now');
    const regular = spanOf(spans, 'notes: add');
    // The write was over before the read finished: they ran side by side, not one after the other.
    expect(regular.finishedMs).toBeLessThan(readOnly.finishedMs);
    expect(regular.scheduledMs).toBeLessThan(readOnly.finishedMs);
    // Both went out as activity tasks in one workflow task completion; the patch that chose it is folded (decision 0017).
    expect([readOnly.kind, regular.kind]).toEqual(['activity', 'activity']);
    expect(readOnly.workflowTaskCompletedEventId).toBe(regular.workflowTaskCompletedEventId);
    expect(patchIds(history)).toEqual([]);
  });

  test('read-only calls with no regular call beside them stay local activities', async () => {
    const id = newTurnId('local-only');
    fakes.script(id, {
      listToolRefs,
      callLlm: async (req) => (req.step === 1 ? callTools(['c1', 'clock__now', {}], ['c2', 'clock__now', {}]) : say('Done.')),
    });
    const handle = await startTurn(turnInput(id));
    expect((await handle.result()).toolCalls.map((c) => c.state)).toEqual(['completed', 'completed']);
    const history = await handle.fetchHistory();
    expect(toolSpans(history).map((s) => [s.summary, s.kind])).toEqual([
      ['clock: now', 'local'],
      ['clock: now', 'local'],
    ]);
    expect(patchIds(history)).toEqual([]);
  });

  test('beside a regular call that waits for approval, the read-only call stays local', async () => {
    const id = newTurnId('local-beside-approval');
    fakes.script(id, {
      listToolRefs,
      callLlm: async (req) => (req.step === 1 ? callTools(['c1', 'clock__now', {}], ['b1', 'bank__transfer', { to: 'bob', amount: 5 }]) : say('Done.')),
    });
    // Nobody decides: the transfer times out unapproved, and never runs.
    const handle = await startTurn(turnInput(id, { policy: policy(300) }));
    const state = await handle.result();
    expect(state.toolCalls.map((c) => [c.id, c.state])).toEqual([['c1', 'completed'], ['b1', 'failed']]);
    expect(toolSpans(await handle.fetchHistory()).map((s) => [s.summary, s.kind])).toEqual([['clock: now', 'local']]);
  });
});
