/**
 * An answer to something the turn showed before its history recorded it (src/api/turns/decisions.ts):
 * events are pushed as the workflow task runs, so a worker killed before the task completes leaves a
 * question on the user's screen that the turn, replayed by the next worker, has not asked yet. The
 * answer waits for the record instead of getting "not pending"; one nobody showed still gets 404 at once.
 */
import type { TurnGateway } from '../../src/api/gateway';
import { createDecisions } from '../../src/api/turns/decisions';
import type { TurnServiceOptions } from '../../src/api/turns/options';
import type { TurnEvent, TurnState } from '../../src/shared/turn';

const owner = { id: 'u-1', tenant: 'demo' };
const user = { id: 'u-1', tenant: 'demo', role: 'student', scopes: [] } as never;
const question: TurnEvent = { id: 3, type: 'input_required', at: '2026-11-26T19:00:00Z', data: { toolCallId: 'c1', message: 'Which size?', requestedSchema: { type: 'object', properties: { size: { type: 'string' } } } } };
const approval: TurnEvent = { id: 3, type: 'approval_required', at: '2026-11-26T19:00:00Z', data: { toolCallId: 'c1' } };
const state = (events: TurnEvent[]): TurnState => ({ turnId: 'turn-a', sessionId: 's', owner, status: 'running', toolCalls: [], events, steps: 1 });

async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((r) => setImmediate(r));
}

function decisions(opts: { recorded: () => boolean; pushed: TurnEvent[]; waitMs?: number }) {
  const tries = { input: 0, approval: 0 };
  const gateway = {
    getTurn: async () => state(opts.recorded() ? [question] : []),
    provideInput: async () => {
      tries.input++;
      return opts.recorded() ? { kind: 'provided' as const } : { kind: 'not_pending' as const };
    },
    decideApproval: async () => {
      tries.approval++;
      return opts.recorded() ? { kind: 'decided' as const, decision: 'approved' as const } : { kind: 'not_pending' as const };
    },
  } as unknown as TurnGateway;
  const service = createDecisions({ gateway, pushedEvents: () => opts.pushed, ...(opts.waitMs !== undefined ? { recordedWaitMs: opts.waitMs } : {}) } as unknown as TurnServiceOptions);
  return { service, tries };
}

test('a question shown from the pushed events waits for its record, then the answer is delivered', async () => {
  let recorded = false;
  const { service, tries } = decisions({ recorded: () => recorded, pushed: [question] });
  const answering = service.provideInput(user, 'turn-a', 'c1', { action: 'accept', content: { size: 'small' } });
  // The next worker records the question once the answer has been refused.
  await until(() => tries.input >= 1);
  recorded = true;
  await expect(answering).resolves.toEqual({ turnId: 'turn-a', toolCallId: 'c1', action: 'accept' });
  expect(tries.input).toBe(2);
});

test('an answer to a shown question is still checked against its schema before it waits', async () => {
  const { service, tries } = decisions({ recorded: () => false, pushed: [question] });
  await expect(service.provideInput(user, 'turn-a', 'c1', { action: 'accept', content: { size: 7 } })).rejects.toMatchObject({ statusCode: 400 });
  expect(tries.input).toBe(0);
});

test('nothing shown, nothing pending: 404 at once, with one try', async () => {
  const { service, tries } = decisions({ recorded: () => false, pushed: [] });
  await expect(service.provideInput(user, 'turn-a', 'c1', { action: 'decline' })).rejects.toMatchObject({ statusCode: 404 });
  expect(tries.input).toBe(0);
  await expect(service.decideApproval(user, 'turn-a', 'c1', true)).rejects.toMatchObject({ statusCode: 404 });
  expect(tries.approval).toBe(1);
});

test('answered already, as the pushed events say: 404 at once', async () => {
  const answered: TurnEvent = { id: 4, type: 'approval_decided', at: '2026-11-26T19:00:01Z', data: { toolCallId: 'c1' } };
  const { service, tries } = decisions({ recorded: () => false, pushed: [approval, answered] });
  await expect(service.decideApproval(user, 'turn-a', 'c1', true)).rejects.toMatchObject({ statusCode: 404 });
  expect(tries.approval).toBe(1);
});

test('an approval shown and not recorded waits too; past the wait the answer is 503 (try again), not 404', async () => {
  let recorded = false;
  const waiting = decisions({ recorded: () => recorded, pushed: [approval] });
  const deciding = waiting.service.decideApproval(user, 'turn-a', 'c1', true);
  await until(() => waiting.tries.approval >= 1);
  recorded = true;
  await expect(deciding).resolves.toEqual({ turnId: 'turn-a', toolCallId: 'c1', decision: 'approved' });

  const never = decisions({ recorded: () => false, pushed: [approval], waitMs: 0 });
  await expect(never.service.decideApproval(user, 'turn-a', 'c1', true)).rejects.toMatchObject({ statusCode: 503, code: 'unavailable', retryAfterSeconds: 1 });
});
