import { createApprovalBook } from '../../src/core/approvals';
import { createTurnRecord, RECORD_RESULT_CHARS, whoAnswered } from '../../src/core/turn-record';
import { Failure } from '../../src/shared/failures';
import type { Policy } from '../../src/shared/policy';
import type { UserContext } from '../../src/shared/user';

let tick = 0;
const clock = () => `2026-01-01T00:00:${String(tick++).padStart(2, '0')}.000Z`;
const owner: UserContext = { id: 'ada', role: 'teacher', tenant: 'demo', scopes: [] };
const policy: Policy = { roles: {}, toolScopes: {}, approval: { tools: ['*/*'], timeoutMs: 1_000, approverRoles: ['admin'] } };

function newRecord() {
  tick = 0;
  return createTurnRecord({ turnId: 'turn-s-1', sessionId: 's', owner: { id: 'ada', tenant: 'demo' } }, clock);
}

describe('turn record', () => {
  it('numbers events densely from 1 and stamps them with the given clock', () => {
    const r = newRecord();
    r.emit('status', { phase: 'gathering_context' });
    r.emit('status', { phase: 'calling_llm', step: 1 });
    expect(r.state.events.map((e) => [e.id, e.at])).toEqual([
      [1, '2026-01-01T00:00:00.000Z'],
      [2, '2026-01-01T00:00:01.000Z'],
    ]);
  });

  it('views only the events after the one named', () => {
    const r = newRecord();
    for (let i = 0; i < 3; i++) r.emit('notice', { i });
    expect(r.view(2).events.map((e) => e.id)).toEqual([3]);
    expect(r.view().events).toHaveLength(3);
    expect(r.state.events).toHaveLength(3);
  });

  it('records a tool call from start to its truncated result', () => {
    const r = newRecord();
    const call = r.startToolCall({ id: 'c1', step: 1, name: 'notes__add', server: 'notes', tool: 'add', arguments: { text: 'x' } });
    expect(r.state.toolCalls[0]).toMatchObject({ id: 'c1', state: 'running' });
    r.finishToolCall(call, { isError: true, text: 'y'.repeat(RECORD_RESULT_CHARS + 10) });
    expect(r.state.toolCalls[0]).toMatchObject({ state: 'failed', isError: true });
    expect(r.state.toolCalls[0]?.result?.length).toBeLessThan(RECORD_RESULT_CHARS + 100);
    expect(r.state.events.map((e) => e.type)).toEqual(['tool_call_started', 'tool_call_finished']);
    expect(r.state.events[1]?.data).toMatchObject({ toolCallId: 'c1', name: 'notes__add', isError: true });
  });

  it('ends completed with text and done, failed with error, cancelled with its pending approvals rejected', () => {
    const done = newRecord();
    done.complete('hi');
    expect(done.state).toMatchObject({ status: 'completed', text: 'hi' });
    expect(done.state.events.map((e) => e.type)).toEqual(['text', 'done']);
    expect(done.state.events[0]?.data).toEqual({ text: 'hi' });
    // The answer names the provider and model that gave it, when its LLM step said.
    const answered = newRecord();
    answered.complete('hi', whoAnswered({ provider: 'gemini', model: 'gemini-2.5-flash' }));
    expect(answered.state.events[0]?.data).toEqual({ text: 'hi', provider: 'gemini', model: 'gemini-2.5-flash' });
    expect(whoAnswered({})).toEqual({});

    const failed = newRecord();
    failed.fail({ code: 'llm_unavailable', message: 'down' });
    expect(failed.state).toMatchObject({ status: 'failed', error: { code: 'llm_unavailable' } });
    expect(failed.state.events.at(-1)).toMatchObject({ type: 'error', data: { code: 'llm_unavailable', message: 'down' } });

    const cancelled = newRecord();
    const book = createApprovalBook(cancelled.state, owner, policy);
    book.request({ toolCallId: 'c1', name: 'n', server: 's', tool: 't', arguments: {} });
    cancelled.cancel();
    expect(cancelled.state.status).toBe('cancelled');
    expect(cancelled.state.approvals?.[0]?.state).toBe('rejected');
  });
});

describe('approval book', () => {
  const decide = (approve: boolean, approver: UserContext = owner) => ({ toolCallId: 'c1', approve, approver });

  it('refuses decisions on calls that do not wait, by type', () => {
    const r = newRecord();
    const book = createApprovalBook(r.state, owner, policy);
    expect(book.refusal(decide(true))?.type).toBe(Failure.ApprovalNotPending);
    book.request({ toolCallId: 'c1', name: 'n', server: 's', tool: 't', arguments: {} });
    expect(r.state.status).toBe('awaiting_approval');
    expect(book.refusal(decide(true))).toBeUndefined();
    book.decide(decide(true));
    expect(book.refusal(decide(false))?.type).toBe(Failure.ApprovalAlreadyDecided);
  });

  it('lets the owner and approver roles of the same tenant decide, nobody else', () => {
    const r = newRecord();
    const book = createApprovalBook(r.state, owner, policy);
    book.request({ toolCallId: 'c1', name: 'n', server: 's', tool: 't', arguments: {} });
    expect(book.refusal(decide(true, { id: 'eve', role: 'student', tenant: 'demo', scopes: [] }))?.type).toBe(Failure.ApprovalForbidden);
    expect(book.refusal(decide(true, { id: 'root', role: 'admin', tenant: 'other', scopes: [] }))?.type).toBe(Failure.ApprovalForbidden);
    expect(book.refusal(decide(true, { id: 'root', role: 'admin', tenant: 'demo', scopes: [] }))).toBeUndefined();
    const ownerless = createApprovalBook(newRecord().state, undefined, policy);
    ownerless.request({ toolCallId: 'c1', name: 'n', server: 's', tool: 't', arguments: {} });
    expect(ownerless.refusal(decide(true))?.type).toBe(Failure.ApprovalForbidden);
  });

  it('settles to the decision taken in time, else timed out; the turn runs again once none waits', () => {
    const r = newRecord();
    const book = createApprovalBook(r.state, owner, policy);
    const a = book.request({ toolCallId: 'c1', name: 'n', server: 's', tool: 't', arguments: {} });
    const b = book.request({ toolCallId: 'c2', name: 'n', server: 's', tool: 't', arguments: {} });
    book.decide({ toolCallId: 'c1', approve: false, approver: owner });
    expect(book.settle(a, true)).toMatchObject({ state: 'rejected', decidedBy: 'ada' });
    expect(r.state.status).toBe('awaiting_approval');
    expect(book.settle(b, false).state).toBe('timed_out');
    expect(r.state.status).toBe('running');
  });
});
