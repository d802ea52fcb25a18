import path from 'node:path';
import { Context } from '@temporalio/activity';
import type { TurnState } from '../../src/shared/turn';
import { inputAnswerQuery, inputAskedSignal, inputTakenUpdate, provideInputUpdate, TURN_WORKFLOW_TYPE, turnStateQuery } from '../../src/workflows/definitions';
import type { turnWorkflow } from '../../src/workflows/turn';
import { writeHistory } from '../tools/history-capture';
import { callTools, deferred, eventually, newTurnId, OWNER, say, scriptedWorker, turnInput, WORKER_MODES, workflowEnvForFile } from './harness';

/**
 * A held question asked twice while it is being opened (src/workflows/inputs.ts). A worker that dies
 * after its call's activity asked, and before the turn's task that shows the question was recorded,
 * leaves the next attempt asking the same question while the turn, replayed elsewhere, is still
 * auditing the first: it must be shown and audited once, and answered once. Seen in the e2e suite as
 * a second `input_required` for the one question. Both worker modes, as turn.test.ts.
 */
jest.setTimeout(120_000);

const env = workflowEnvForFile();

describe.each(WORKER_MODES)('on $mode', ({ options }) => {
  const { fakes, worker } = scriptedWorker(env, options);

  test('the same question asked again while its audit runs is shown, audited and answered once', async () => {
    const id = newTurnId('asked-twice');
    const asked = { message: 'Which size?', requestedSchema: { type: 'object', properties: { size: { type: 'string' } }, required: ['size'] } };
    const auditing = deferred();
    const audited = deferred();
    /** Each audit as its (local) activity: a worker that replays every task may run the one it holds open again, under the same id. */
    const audits: string[] = [];
    fakes.script(id, {
      callLlm: async (req) => (req.step === 1 ? callTools(['m1', 'notes__add', { text: 'pie' }]) : say('Done.')),
      recordAudit: async (entry) => {
        audits.push(`${entry.kind} ${entry.outcome ?? ''} #${Context.current().info.activityId}`);
        if (entry.kind !== 'elicitation_requested') return;
        auditing.resolve();
        await audited.promise;
      },
      callTool: async (input) => {
        // It beats while it waits, as the real call does: on a loaded machine, with every task replayed,
        // the wait for the owner's answer can outlast the heartbeat timeout (15 s here).
        const ctx = Context.current();
        const beats = setInterval(() => ctx.heartbeat(), 1_000);
        try {
          return await askTwiceAndWait(input);
        } finally {
          clearInterval(beats);
        }
      },
    });
    async function askTwiceAndWait(input: { toolCallId?: string }) {
      const turn = env().client.workflow.getHandle(Context.current().info.workflowExecution?.workflowId ?? '');
      const toolCallId = input.toolCallId ?? '';
      await turn.signal(inputAskedSignal, { toolCallId, question: asked });
      // The second ask lands while the turn audits the first (what the next attempt does after a worker died).
      await auditing.promise;
      await turn.signal(inputAskedSignal, { toolCallId, question: asked });
      const seen = await eventually(
        async () => (await turn.fetchHistory()).events?.filter((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'inputAsked').length ?? 0,
        (n) => n >= 2,
      );
      expect(seen).toBe(2);
      audited.resolve();
      const held = await eventually(
        async () => await turn.query(inputAnswerQuery, { toolCallId }),
        (h) => h?.answer != null,
        60_000,
      );
      if (!held?.answer) throw new Error('no answer came');
      const answer = await turn.executeUpdate(inputTakenUpdate, { args: [{ toolCallId }] });
      return { isError: false, text: `ordered a ${String(answer.content?.['size'])} pie` };
    }
    const handle = await env().client.workflow.start<typeof turnWorkflow>(TURN_WORKFLOW_TYPE, { workflowId: id, taskQueue: worker().taskQueue, args: [turnInput(id)] });
    await eventually(
      async (): Promise<TurnState> => await handle.query(turnStateQuery),
      (s) => s.events.some((e) => e.type === 'input_required'),
      60_000,
    );
    await handle.executeUpdate(provideInputUpdate, { args: [{ toolCallId: 'm1', action: 'accept', content: { size: 'small' }, by: { id: OWNER.id, tenant: OWNER.tenant } }] });
    const state = await handle.result();
    expect(state.toolCalls).toMatchObject([{ id: 'm1', state: 'completed', result: 'ordered a small pie' }]);
    expect(state.events.filter((e) => e.type === 'input_required')).toHaveLength(1);
    expect(state.events.filter((e) => e.type === 'input_provided')).toHaveLength(1);
    // Audited once each: one audit activity per event. On a loaded machine the audit the test holds open
    // can outlast the workflow task's heartbeat, and a worker without a cache then runs that same local
    // activity again (same activity id): one audit attempted twice, not a second audit.
    expect([...new Set(audits)].map((a) => a.replace(/ #.*$/, ''))).toEqual(['elicitation_requested ', 'elicitation_answered ok']);
    // The replay suite's history of this race (tests/histories/), written when asked for.
    if (process.env.CAPTURE_HISTORIES === '1' && options.maxCachedWorkflows === undefined) {
      writeHistory(path.join(__dirname, '../histories/turn-elicitation-asked-twice.json'), id, await handle.fetchHistory());
    }
  });
});
