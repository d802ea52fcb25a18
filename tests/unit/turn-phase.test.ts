import { createTurnPhase } from '../../src/core/turn-phase';
import type { TurnEventType } from '../../src/shared/turn';

/** Feeds events in order and collects the lines the phase announced (a changed line only). */
function run(events: Array<[TurnEventType, Record<string, unknown>]>): string[] {
  const phase = createTurnPhase();
  const lines: string[] = [];
  for (const [type, data] of events) {
    const line = phase.observe({ type, data });
    if (line !== undefined) lines.push(line);
    expect(phase.current).toBe(lines.at(-1) ?? 'starting');
  }
  return lines;
}

describe('the turn phase shown as the workflow current details', () => {
  test('a step with two tools, one waiting for approval, then the answer', () => {
    expect(
      run([
        ['status', { status: 'running', phase: 'gathering_context' }],
        ['status', { status: 'running', phase: 'calling_llm', step: 1 }],
        ['status', { status: 'running', phase: 'calling_tools', step: 1, count: 2 }],
        ['tool_call_started', { toolCallId: 'a', name: 'notes__add_note', arguments: { text: 'secret' } }],
        ['tool_call_started', { toolCallId: 'b', name: 'payments__refund_payment' }],
        ['approval_required', { toolCallId: 'b', name: 'payments__refund_payment', arguments: { amount: 5 } }],
        ['tool_call_finished', { toolCallId: 'a', result: 'the note text' }],
        ['approval_decided', { toolCallId: 'b', decision: 'approved', by: 'u1' }],
        ['tool_call_finished', { toolCallId: 'b' }],
        ['status', { status: 'running', phase: 'calling_llm', step: 2 }],
        ['text', { text: 'the answer' }],
        ['done', { status: 'completed' }],
      ]),
    ).toEqual([
      'gathering context',
      'calling the model (step 1)',
      'step 1: calling tools',
      'calling 1 tool: notes__add_note',
      'calling 2 tools: notes__add_note, payments__refund_payment',
      'awaiting approval of payments__refund_payment',
      'calling 1 tool: payments__refund_payment',
      'step 1: calling tools',
      'calling the model (step 2)',
      'completed',
    ]);
  });

  test('questions, consents and the end states; never what was written or returned', () => {
    const lines = run([
      ['status', { status: 'running', phase: 'queued' }],
      ['tool_call_started', { toolCallId: 'q', name: 'school__enrol', arguments: { name: 'Ada Lovelace' } }],
      ['input_required', { toolCallId: 'q', server: 'school', message: 'What is your student number?' }],
      ['input_provided', { toolCallId: 'q', action: 'accept' }],
      ['authorization_required', { toolCallId: 'q', server: 'school' }],
      ['authorization_completed', { toolCallId: 'q', outcome: 'authorized' }],
      ['tool_call_finished', { toolCallId: 'q' }],
      ['error', { code: 'llm_unavailable', message: 'The language model is unavailable: 503' }],
    ]);
    expect(lines).toEqual([
      'queued behind the previous turn of its session',
      'calling 1 tool: school__enrol',
      'asking the user (school)',
      'calling 1 tool: school__enrol',
      "awaiting the user's authorization of school",
      'calling 1 tool: school__enrol',
      'queued behind the previous turn of its session',
      'failed (llm_unavailable)',
    ]);
    expect(lines.join('\n')).not.toMatch(/Ada|student number|503/);
    const cancelled = createTurnPhase();
    expect(cancelled.observe({ type: 'cancelled', data: { status: 'cancelled' } })).toBe('cancelled');
    // Events that say nothing about the phase leave it as it is.
    expect(cancelled.observe({ type: 'notice', data: { code: 'tool_retry' } })).toBeUndefined();
  });

  test('many approvals at once: three names and a count', () => {
    const phase = createTurnPhase();
    for (const n of ['a', 'b', 'c', 'd', 'e']) phase.observe({ type: 'approval_required', data: { toolCallId: n, name: `srv__${n}` } });
    expect(phase.current).toBe('awaiting approval of srv__a, srv__b, srv__c and 2 more');
  });
});
