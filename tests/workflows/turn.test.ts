import { Context } from '@temporalio/activity';
import { WorkflowFailedError, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { Failure, failureTypeOf } from '../../src/shared/failures';
import type { TurnInput, TurnState } from '../../src/shared/turn';
import { approveToolCallUpdate, authorizationCompletedSignal, provideInputUpdate, TURN_WORKFLOW_TYPE, turnStateQuery } from '../../src/workflows/definitions';
import type { turnWorkflow } from '../../src/workflows/turn';
import {
  callTools,
  CATALOG,
  deferred,
  eventOf,
  eventTypes,
  eventually,
  newTurnId,
  OWNER,
  policy,
  say,
  scriptedWorker,
  STRANGER,
  SYSTEM_PROMPT,
  turnInput,
  turnOptions,
  within,
  WORKER_MODES,
  workflowEnvForFile,
} from './harness';

/**
 * turnWorkflow on a real dev server with fake activities: approvals (timed out, granted), parallel
 * tool calls, cancellation and the step limit. Every scenario runs twice: on a worker with its
 * workflow cache, and on one with `maxCachedWorkflows: 0`, where every workflow task (and every
 * query) replays the turn from its history.
 */
// A deadline for a hang, not a speed goal: on a loaded machine a turn that replays every task takes its time.
jest.setTimeout(120_000);

const TIMED_OUT = 'The user did not approve this action in time; it was not performed.';

/** The line the Temporal UI shows as the workflow's current details (the SDK's metadata query). */
async function currentDetails(handle: { query<R>(name: string): Promise<R> }): Promise<string | undefined> {
  return (await handle.query<{ currentDetails?: string }>('__temporal_workflow_metadata')).currentDetails;
}

const env = workflowEnvForFile();

describe.each(WORKER_MODES)('turnWorkflow on $mode', ({ options, replays }) => {
  const { fakes, worker: running } = scriptedWorker(env, options);

  async function startTurn(input: TurnInput) {
    return await env().client.workflow.start<typeof turnWorkflow>(TURN_WORKFLOW_TYPE, {
      workflowId: input.turnId,
      taskQueue: running().taskQueue,
      args: [input],
    });
  }

  test('approval timeout: nobody decides, the call is denied without running and the model is told', async () => {
    const id = newTurnId('approval-timeout');
    fakes.script(id, {
      callLlm: async (req) => (req.step === 1 ? callTools(['c1', 'bank__transfer', { to: 'bob', amount: 5 }]) : say('I could not transfer the money.')),
    });
    const handle = await startTurn(turnInput(id, { policy: policy(300) }));
    const state = await handle.result();

    expect(state.status).toBe('completed');
    expect(state.text).toBe('I could not transfer the money.');
    expect(state.approvals).toEqual([
      { toolCallId: 'c1', name: 'bank__transfer', server: 'bank', tool: 'transfer', arguments: { to: 'bob', amount: 5 }, state: 'timed_out' },
    ]);
    expect(fakes.calls(id, 'callTool')).toHaveLength(0);
    expect(state.toolCalls).toMatchObject([{ id: 'c1', step: 1, state: 'failed', isError: true, result: TIMED_OUT }]);
    expect(eventTypes(state)).toEqual([
      'status', 'status', 'status', 'tool_call_started', 'approval_required', 'approval_decided', 'tool_call_finished', 'status', 'text', 'done',
    ]);
    expect(state.events.map((e) => e.id)).toEqual(state.events.map((_, i) => i + 1));
    expect(eventOf(state, 'approval_required').data).toEqual({
      toolCallId: 'c1', name: 'bank__transfer', server: 'bank', tool: 'transfer', arguments: { to: 'bob', amount: 5 }, step: 1,
    });
    expect(eventOf(state, 'approval_decided').data).toEqual({ toolCallId: 'c1', decision: 'timed_out' });

    // The model's second step hears the denial as the tool's result.
    const llm = fakes.calls(id, 'callLlm');
    expect(llm).toHaveLength(2);
    expect(llm[1]?.messages.at(-1)).toEqual({ role: 'tool', toolCallId: 'c1', content: `Error: ${TIMED_OUT}` });
    // Request and decision are audited, with the owner as actor.
    expect(fakes.calls(id, 'recordAudit').map((a) => [a.kind, a.outcome, a.toolCallId, a.actor.id, a.workflowId])).toEqual([
      ['approval_requested', undefined, 'c1', OWNER.id, id],
      ['approval_decision', 'timed_out', 'c1', OWNER.id, id],
    ]);
  });

  test('approval granted through the update: refused for a stranger, the tool runs once, a second decision is refused', async () => {
    const id = newTurnId('approval-granted');
    const requested = deferred();
    const toolEntered = deferred();
    const releaseTool = deferred();
    fakes.script(id, {
      callLlm: async (req) => (req.step === 1 ? callTools(['c1', 'bank__transfer', { to: 'bob', amount: 5 }]) : say('Done: 5 sent to bob.')),
      recordAudit: async (entry) => {
        if (entry.kind === 'approval_requested') requested.resolve();
      },
      callTool: async () => {
        toolEntered.resolve();
        await within(releaseTool.promise, 20_000, 'the test never released the tool call');
        return { isError: false, text: 'transferred 5 to bob' };
      },
    });
    const handle = await startTurn(turnInput(id, { policy: policy(60_000) }));
    await within(requested.promise, 20_000, 'no approval was requested');

    const waiting = await handle.query(turnStateQuery);
    expect(waiting.status).toBe('awaiting_approval');
    expect(waiting.approvals).toMatchObject([{ toolCallId: 'c1', state: 'pending' }]);
    expect(waiting.events.at(-1)?.type).toBe('approval_required');
    // The Temporal UI's "current details" say what the turn waits for, by the tool's name only.
    expect(await currentDetails(handle)).toBe('awaiting approval of bank__transfer');
    // The query's argument limits the events to those after an id.
    const last = waiting.events.length;
    expect((await handle.query(turnStateQuery, last - 1)).events.map((e) => e.id)).toEqual([last]);
    // Which worker mode this is: a caching worker keeps the waiting turn; the other evicts it after every task.
    if (replays) {
      const cached = await eventually(async () => running().worker.getStatus().numCachedWorkflows, (n) => n === 0);
      expect(cached).toBe(0);
    } else {
      expect(running().worker.getStatus().numCachedWorkflows).toBeGreaterThanOrEqual(1);
    }

    // Someone of another tenant is refused by the validator.
    const forbidden = await handle
      .executeUpdate(approveToolCallUpdate, { args: [{ toolCallId: 'c1', approve: true, approver: STRANGER }] })
      .catch((err: unknown) => err);
    expect(forbidden).toBeInstanceOf(WorkflowUpdateFailedError);
    expect(failureTypeOf(forbidden)).toBe(Failure.ApprovalForbidden);

    const decided = await handle.executeUpdate(approveToolCallUpdate, { args: [{ toolCallId: 'c1', approve: true, approver: OWNER }] });
    expect(decided).toEqual({ toolCallId: 'c1', decision: 'approved' });

    await within(toolEntered.promise, 20_000, 'the approved tool was not called');
    expect(await currentDetails(handle)).toBe('calling 1 tool: bank__transfer');
    const again = await handle
      .executeUpdate(approveToolCallUpdate, { args: [{ toolCallId: 'c1', approve: false, approver: OWNER }] })
      .catch((err: unknown) => err);
    expect(failureTypeOf(again)).toBe(Failure.ApprovalAlreadyDecided);
    releaseTool.resolve();

    const state = await handle.result();
    expect(state.status).toBe('completed');
    expect(state.text).toBe('Done: 5 sent to bob.');
    expect(await currentDetails(handle)).toBe('completed');
    const toolCalls = fakes.calls(id, 'callTool');
    expect(toolCalls).toHaveLength(1);
    expect(toolCalls[0]).toMatchObject({
      turnId: id, server: 'bank', tool: 'transfer', llmName: 'bank__transfer', arguments: { to: 'bob', amount: 5 },
      idempotencyKey: `${id}/step-1/c1`, toolCallId: 'c1', user: OWNER,
    });
    expect(state.approvals).toMatchObject([{ toolCallId: 'c1', state: 'approved', decidedBy: OWNER.id }]);
    expect(eventOf(state, 'approval_decided').data).toEqual({ toolCallId: 'c1', decision: 'approved', by: OWNER.id });
    expect(state.toolCalls).toMatchObject([{ id: 'c1', state: 'completed', isError: false, result: 'transferred 5 to bob' }]);
    expect(fakes.calls(id, 'callLlm')[1]?.messages.at(-1)).toEqual({ role: 'tool', toolCallId: 'c1', content: 'transferred 5 to bob' });
    expect(fakes.calls(id, 'recordAudit').map((a) => [a.kind, a.outcome, a.detail])).toEqual([
      ['approval_requested', undefined, undefined],
      ['approval_decision', 'approved', `decided by ${OWNER.id}`],
    ]);
  });

  test('parallel tool calls of one step: both run at once, results go back in the model order', async () => {
    const id = newTurnId('parallel');
    const entered = new Set<string>();
    const bothEntered = deferred();
    const secondDone = deferred();
    fakes.script(id, {
      callLlm: async (req) =>
        req.step === 1 ? callTools(['a', 'notes__add', { text: 'milk' }], ['b', 'clock__now', {}]) : say('Noted milk; it is noon.'),
      callTool: async (input) => {
        entered.add(input.toolCallId ?? '?');
        if (entered.size === 2) bothEntered.resolve();
        // Neither call can finish before the other started: sequential calls would fail here.
        await within(bothEntered.promise, 10_000, 'the other call of the step never started while this one ran');
        if (input.toolCallId === 'a') {
          // The first call finishes last, so the order of results cannot come from completion order.
          await within(secondDone.promise, 10_000, 'the second call never finished');
          return { isError: false, text: 'note 1 added' };
        }
        secondDone.resolve();
        return { isError: false, text: '12:00' };
      },
    });
    const state = await (await startTurn(turnInput(id))).result();

    expect(state.status).toBe('completed');
    expect(state.text).toBe('Noted milk; it is noon.');
    expect(fakes.calls(id, 'callTool').map((c) => c.toolCallId).sort()).toEqual(['a', 'b']);
    expect(state.events.find((e) => e.data.phase === 'calling_tools')?.data).toEqual({ status: 'running', phase: 'calling_tools', step: 1, count: 2 });
    // Both started before either finished.
    const types = eventTypes(state);
    expect(types.filter((t) => t === 'tool_call_started')).toHaveLength(2);
    expect(types.lastIndexOf('tool_call_started')).toBeLessThan(types.indexOf('tool_call_finished'));
    expect(state.toolCalls).toMatchObject([
      { id: 'a', name: 'notes__add', state: 'completed', result: 'note 1 added' },
      { id: 'b', name: 'clock__now', state: 'completed', result: '12:00' },
    ]);

    const second = fakes.calls(id, 'callLlm')[1];
    expect(second?.step).toBe(2);
    expect(second?.messages).toEqual([
      { role: 'system', content: SYSTEM_PROMPT },
      { role: 'user', content: 'please help' },
      {
        role: 'assistant',
        content: null,
        toolCalls: [
          { id: 'a', name: 'notes__add', arguments: JSON.stringify({ text: 'milk' }) },
          { id: 'b', name: 'clock__now', arguments: '{}' },
        ],
      },
      { role: 'tool', toolCallId: 'a', content: 'note 1 added' },
      { role: 'tool', toolCallId: 'b', content: '12:00' },
    ]);
  });

  test('cancel during a slow tool call: the turn ends cancelled, the activity is cancelled, nothing else is called', async () => {
    const id = newTurnId('cancel');
    const toolEntered = deferred();
    const toolEnded = deferred<string>();
    fakes.script(id, {
      callLlm: async () => callTools(['s1', 'slow__wait', { seconds: 20 }]),
      callTool: async () => {
        const ctx = Context.current();
        toolEntered.resolve();
        try {
          // Sleeps with heartbeats; a cancellation arrives in a heartbeat response and rejects the sleep.
          for (let i = 0; i < 200; i++) {
            ctx.heartbeat(i);
            await ctx.sleep(100);
          }
          toolEnded.resolve('finished without being cancelled');
          return { isError: false, text: 'waited' };
        } catch (err) {
          toolEnded.resolve(err instanceof CancelledFailure ? 'cancelled' : `failed: ${String(err)}`);
          throw err;
        }
      },
    });
    const handle = await startTurn(turnInput(id));
    await within(toolEntered.promise, 20_000, 'the slow tool was not called');
    await handle.cancel();

    const failure = await handle.result().catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(WorkflowFailedError);
    expect((failure as WorkflowFailedError).cause).toBeInstanceOf(CancelledFailure);
    expect((await handle.describe()).status.name).toBe('CANCELLED');
    expect(await within(toolEnded.promise, 20_000, 'the activity never saw the cancellation')).toBe('cancelled');

    // The closed turn still answers its query (the API reads a cancelled turn this way).
    const state: TurnState = await handle.query(turnStateQuery);
    expect(state.status).toBe('cancelled');
    expect(eventTypes(state)).toEqual(['status', 'status', 'status', 'tool_call_started', 'cancelled']);
    expect(state.events.at(-1)?.data).toEqual({ status: 'cancelled' });
    expect(state.toolCalls).toMatchObject([{ id: 's1', state: 'running' }]);
    expect(fakes.calls(id, 'callLlm')).toHaveLength(1);
    expect(fakes.calls(id, 'callTool')).toHaveLength(1);
  });

  test('authorization wait: a call that needs OAuth consent waits, the callback signal resumes it, and it runs once', async () => {
    const id = newTurnId('authorization');
    const asked = deferred();
    const needed = { server: 'notes', authorizationUrl: 'https://as.example/authorize?state=s1&code_challenge=c' };
    fakes.script(id, {
      callLlm: async (req) => (req.step === 1 ? callTools(['n1', 'notes__add', { text: 'hi' }]) : say('Saved.')),
      callTool: async () => {
        if (fakes.calls(id, 'callTool').length === 1) {
          asked.resolve();
          throw ApplicationFailure.create({ type: Failure.McpAuthorizationRequired, nonRetryable: true, message: 'needs consent', details: [needed] });
        }
        return { isError: false, text: 'added' };
      },
    });
    const handle = await startTurn(turnInput(id));
    await within(asked.promise, 20_000, 'the tool was not called');
    const waiting = await eventually(
      async (): Promise<TurnState> => await handle.query(turnStateQuery),
      (s) => s.events.some((e) => e.type === 'authorization_required'),
    );
    expect(eventOf(waiting, 'authorization_required').data).toEqual({ toolCallId: 'n1', name: 'notes__add', step: 1, expiresInMs: 600_000, ...needed });
    // A signal for another server does not resume it.
    await handle.signal(authorizationCompletedSignal, { server: 'bank' });
    await handle.signal(authorizationCompletedSignal, { server: 'notes' });
    const state = await handle.result();
    expect(state.text).toBe('Saved.');
    expect(fakes.calls(id, 'callTool').map((c) => c.idempotencyKey)).toEqual([expect.any(String), fakes.calls(id, 'callTool')[0]?.idempotencyKey]);
    expect(eventTypes(state)).toEqual([
      'status', 'status', 'status', 'tool_call_started', 'authorization_required', 'authorization_completed', 'tool_call_finished', 'status', 'text', 'done',
    ]);
    expect(eventOf(state, 'authorization_completed').data).toEqual({ toolCallId: 'n1', server: 'notes', outcome: 'authorized' });
  });

  test('authorization wait: cancelling the turn ends the wait', async () => {
    const id = newTurnId('authorization-cancel');
    fakes.script(id, {
      callLlm: async () => callTools(['n1', 'notes__add', { text: 'hi' }]),
      callTool: async () => {
        throw ApplicationFailure.create({ type: Failure.McpAuthorizationRequired, nonRetryable: true, message: 'needs consent', details: [{ server: 'notes', authorizationUrl: 'https://as.example/a' }] });
      },
    });
    const handle = await startTurn(turnInput(id));
    const waiting = await eventually(
      async (): Promise<TurnState> => await handle.query(turnStateQuery),
      (s) => s.events.some((e) => e.type === 'authorization_required'),
    );
    expect(eventTypes(waiting)).toContain('authorization_required');
    await handle.cancel();
    const failure = await handle.result().catch((err: unknown) => err);
    expect((failure as WorkflowFailedError).cause).toBeInstanceOf(CancelledFailure);
    expect(fakes.calls(id, 'callTool')).toHaveLength(1);
  });

  test("elicitation: the server's question waits for the owner's answer (a stranger is refused), and the call runs again with it", async () => {
    const id = newTurnId('elicitation');
    const asked = { message: 'Which account?', requestedSchema: { type: 'object', properties: { account: { type: 'string' } }, required: ['account'] } };
    fakes.script(id, {
      callLlm: async (req) => (req.step === 1 ? callTools(['n1', 'notes__add', { text: 'hi' }]) : say('Done.')),
      callTool: async (input) => {
        if (!input.elicitations?.length) {
          throw ApplicationFailure.create({ type: Failure.McpInputRequired, nonRetryable: true, message: 'asks', details: [asked] });
        }
        return { isError: false, text: `added to ${String(input.elicitations[0]?.content?.['account'])}` };
      },
    });
    const handle = await startTurn(turnInput(id));
    const waiting = await eventually(
      async (): Promise<TurnState> => await handle.query(turnStateQuery),
      (s) => s.events.some((e) => e.type === 'input_required'),
    );
    expect(eventOf(waiting, 'input_required').data).toMatchObject({ toolCallId: 'n1', server: 'notes', ...asked });
    const stranger = await handle
      .executeUpdate(provideInputUpdate, { args: [{ toolCallId: 'n1', action: 'accept', content: { account: 'theirs' }, by: { id: STRANGER.id, tenant: STRANGER.tenant } }] })
      .catch((err: unknown) => err);
    expect(failureTypeOf((stranger as WorkflowUpdateFailedError).cause)).toBe(Failure.InputForbidden);
    await handle.executeUpdate(provideInputUpdate, { args: [{ toolCallId: 'n1', action: 'accept', content: { account: 'savings' }, by: { id: OWNER.id, tenant: OWNER.tenant } }] });
    const state = await handle.result();
    expect(state.toolCalls).toMatchObject([{ id: 'n1', state: 'completed', result: 'added to savings' }]);
    const calls = fakes.calls(id, 'callTool');
    expect(calls[1]?.elicitations).toEqual([{ message: 'Which account?', action: 'accept', content: { account: 'savings' } }]);
    expect(calls[1]?.idempotencyKey).toBe(calls[0]?.idempotencyKey);
    expect(fakes.calls(id, 'recordAudit').map((a) => [a.kind, a.outcome])).toEqual([
      ['elicitation_requested', undefined],
      ['elicitation_answered', 'ok'],
    ]);
  });

  test('elicitation: cancelling the turn while it waits for an answer ends the wait; the call is not issued again', async () => {
    const id = newTurnId('elicitation-cancel');
    fakes.script(id, {
      callLlm: async () => callTools(['n1', 'notes__add', { text: 'hi' }]),
      callTool: async () => {
        throw ApplicationFailure.create({ type: Failure.McpInputRequired, nonRetryable: true, message: 'asks', details: [{ message: 'Sure?', requestedSchema: { type: 'object', properties: {} } }] });
      },
    });
    const handle = await startTurn(turnInput(id));
    await eventually(
      async (): Promise<TurnState> => await handle.query(turnStateQuery),
      (s) => s.events.some((e) => e.type === 'input_required'),
    );
    await handle.cancel();
    const failure = await handle.result().catch((err: unknown) => err);
    expect((failure as WorkflowFailedError).cause).toBeInstanceOf(CancelledFailure);
    expect(fakes.calls(id, 'callTool')).toHaveLength(1);
    // A late answer finds nothing waiting.
    const late = await handle
      .executeUpdate(provideInputUpdate, { args: [{ toolCallId: 'n1', action: 'accept', by: { id: OWNER.id, tenant: OWNER.tenant } }] })
      .catch((err: unknown) => err);
    expect(late).toBeInstanceOf(Error);
  });

  test('URL-mode question: the event carries the page; the answer goes back with its mode and URL for the re-issued call to match', async () => {
    const id = newTurnId('elicitation-url');
    const asked = { mode: 'url', message: 'Open the payment page', url: 'https://pay.example/checkout', requestedSchema: { type: 'object', properties: {} } };
    fakes.script(id, {
      callLlm: async (req) => (req.step === 1 ? callTools(['n1', 'notes__add', { text: 'hi' }]) : say('Paid.')),
      callTool: async (input) => {
        if (!input.elicitations?.length) throw ApplicationFailure.create({ type: Failure.McpInputRequired, nonRetryable: true, message: 'asks', details: [asked] });
        return { isError: false, text: `the user ${input.elicitations[0]?.action === 'accept' ? 'went to' : 'skipped'} ${String(input.elicitations[0]?.url)}` };
      },
    });
    const handle = await startTurn(turnInput(id));
    const waiting = await eventually(
      async (): Promise<TurnState> => await handle.query(turnStateQuery),
      (s) => s.events.some((e) => e.type === 'input_required'),
    );
    expect(eventOf(waiting, 'input_required').data).toMatchObject({ toolCallId: 'n1', ...asked });
    await handle.executeUpdate(provideInputUpdate, { args: [{ toolCallId: 'n1', action: 'accept', by: { id: OWNER.id, tenant: OWNER.tenant } }] });
    const state = await handle.result();
    expect(state.toolCalls).toMatchObject([{ id: 'n1', state: 'completed', result: 'the user went to https://pay.example/checkout' }]);
    expect(fakes.calls(id, 'callTool')[1]?.elicitations).toEqual([{ mode: 'url', message: 'Open the payment page', url: 'https://pay.example/checkout', action: 'accept' }]);
  });

  test('read-only tools (marked in the catalog) run as local activities; the others stay regular activities', async () => {
    const id = newTurnId('read-only-local');
    fakes.script(id, {
      listToolRefs: async () => ({
        tools: CATALOG.tools.map(({ name, server, tool }) => ({ name, server, tool, ...(tool === 'now' ? { readOnly: true as const } : {}) })),
        servers: CATALOG.servers,
      }),
      // One step each: beside a regular call a read-only one goes regular too (turn-overlap.test.ts).
      callLlm: async (req) => (req.step === 1 ? callTools(['c1', 'clock__now', {}]) : req.step === 2 ? callTools(['n1', 'notes__add', { text: 'hi' }]) : say('Done.')),
    });
    const handle = await startTurn(turnInput(id));
    const state = await handle.result();
    expect(state.toolCalls.map((c) => [c.id, c.state])).toEqual([['c1', 'completed'], ['n1', 'completed']]);
    const history = await handle.fetchHistory();
    const scheduled = (history.events ?? []).flatMap((e) => (e.activityTaskScheduledEventAttributes?.activityType?.name ? [e.activityTaskScheduledEventAttributes.activityType.name] : []));
    // Only the write (and the two model calls) went through the server as activity tasks.
    expect(scheduled.filter((n) => n === 'callTool')).toHaveLength(1);
    expect(fakes.calls(id, 'callTool').map((c) => c.tool).sort()).toEqual(['add', 'now']);
  });

  test('outcome unknown: the call is not retried; the model hears it and the user gets a notice', async () => {
    const id = newTurnId('outcome-unknown');
    fakes.script(id, {
      callLlm: async (req) => (req.step === 1 ? callTools(['n1', 'notes__add', { text: 'hi' }]) : say('I could not tell whether it was saved.')),
      callTool: async () => {
        throw ApplicationFailure.create({ type: Failure.McpOutcomeUnknown, nonRetryable: true, message: 'outcome unknown: the request was sent and the answer was lost' });
      },
    });
    const handle = await startTurn(turnInput(id));
    const state = await handle.result();
    expect(fakes.calls(id, 'callTool')).toHaveLength(1);
    expect(state.toolCalls).toMatchObject([{ id: 'n1', state: 'failed', isError: true }]);
    expect(state.toolCalls[0]?.result).toContain('outcome unknown: the request was sent and the answer was lost');
    expect(eventOf(state, 'notice').data).toMatchObject({ code: 'tool_outcome_unknown', toolCallId: 'n1', server: 'notes', tool: 'add' });
  });

  test('step limit: a model that always wants another tool gets no tools after maxSteps and the turn ends with the limit message', async () => {
    const id = newTurnId('step-limit');
    fakes.script(id, {
      callLlm: async (req) => callTools([`c${req.step}`, 'clock__now', {}]),
    });
    const state = await (await startTurn(turnInput(id, { options: turnOptions({ maxSteps: 2 }) }))).result();

    expect(state.status).toBe('completed');
    expect(state.text).toBe('I stopped after 2 tool steps without reaching an answer.');
    expect(state.steps).toBe(3);
    const llm = fakes.calls(id, 'callLlm');
    // Tools are offered by name (the worker resolves them); past the limit, none.
    expect(llm.map((r) => [r.step, r.toolNames?.length ?? 0, r.tools.length])).toEqual([
      [1, CATALOG.tools.length, 0],
      [2, CATALOG.tools.length, 0],
      [3, 0, 0],
    ]);
    expect(llm[0]?.toolNames).toEqual(CATALOG.tools.map((t) => t.name));
    expect(fakes.calls(id, 'callTool').map((c) => c.toolCallId)).toEqual(['c1', 'c2']);
    expect(state.toolCalls.map((c) => [c.id, c.step, c.state])).toEqual([
      ['c1', 1, 'completed'],
      ['c2', 2, 'completed'],
    ]);
    expect(state.events.slice(-2).map((e) => [e.type, e.data])).toEqual([
      ['text', { text: 'I stopped after 2 tool steps without reaching an answer.' }],
      ['done', { status: 'completed' }],
    ]);
  });
});
