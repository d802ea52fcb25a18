import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/api/app';
import type { TurnGateway } from '../../src/api/gateway';
import type { Policy } from '../../src/shared/policy';
import type { TurnState } from '../../src/shared/turn';
import { fakeAuth } from '../helpers/fake-auth';

/**
 * The approvals inbox and what an approver may read: every fake user is a teacher; teachers approve
 * others' calls in their tenant. Alice's turn waits for a refund to be approved.
 */
const ALICE = { authorization: 'Bearer alice@demo' };
const MALLORY = { authorization: 'Bearer mallory@demo' };
const EVE = { authorization: 'Bearer eve@other' };

const REQUESTED_AT = '2026-11-24T10:00:00.000Z';
const waiting = (): TurnState => ({
  turnId: 'turn-s1-abc',
  sessionId: 's1',
  owner: { id: 'alice', tenant: 'demo' },
  status: 'awaiting_approval',
  toolCalls: [
    { id: 'c1', step: 1, name: 'payments__refund_payment', server: 'payments', tool: 'refund_payment', arguments: { amount: 90, email: 'bob@example.com' }, state: 'running', startedAt: REQUESTED_AT },
  ],
  approvals: [{ toolCallId: 'c1', name: 'payments__refund_payment', server: 'payments', tool: 'refund_payment', arguments: { amount: 90, email: 'bob@example.com' }, state: 'pending' }],
  events: [{ id: 1, type: 'approval_required', at: REQUESTED_AT, data: { toolCallId: 'c1' } }],
  steps: 1,
});

let turns: TurnState[] = [];
const gateway = {
  async getTurn(turnId: string) {
    return turns.find((t) => t.turnId === turnId) ?? null;
  },
  async awaitingApproval(tenant: string) {
    return turns.filter((t) => t.owner?.tenant === tenant && t.status === 'awaiting_approval');
  },
  async cancelTurn() {},
} as unknown as TurnGateway;

const policy = (approverRoles: string[]): Policy => ({
  roles: { teacher: { servers: { '*': { tools: '*' } } } },
  toolScopes: {},
  approval: { tools: ['payments/refund_*'], timeoutMs: 60_000, approverRoles },
});

let app: FastifyInstance;
async function start(approverRoles: string[]) {
  app = await buildApp({ gateway, auth: fakeAuth, policy: () => policy(approverRoles), maxMessageChars: 100, ssePollMs: 5 });
}
beforeEach(() => {
  turns = [waiting(), { ...waiting(), turnId: 'turn-s2-def', sessionId: 's2', owner: { id: 'eve', tenant: 'other' } }];
});
afterEach(async () => {
  await app.close();
});

const get = (url: string, headers: Record<string, string>) => app.inject({ method: 'GET', url, headers });

test("the owner's inbox lists the call with its deadline and how to decide it; the turn shows the call as awaiting approval", async () => {
  await start([]);
  const inbox = await get('/v1/approvals', ALICE);
  expect(inbox.statusCode).toBe(200);
  expect(inbox.json().approvals).toEqual([
    {
      turnId: 'turn-s1-abc',
      sessionId: 's1',
      owner: 'alice',
      toolCallId: 'c1',
      name: 'payments__refund_payment',
      server: 'payments',
      tool: 'refund_payment',
      arguments: { amount: 90, email: 'bob@example.com' },
      requestedAt: REQUESTED_AT,
      deadline: '2026-11-24T10:01:00.000Z',
      decideUrl: '/v1/turns/turn-s1-abc/approvals/c1',
    },
  ]);
  const view = (await get('/v1/turns/turn-s1-abc', ALICE)).json();
  expect(view.toolCalls[0].state).toBe('awaiting_approval');
  expect(view.pendingApprovals).toEqual([expect.objectContaining({ toolCallId: 'c1', deadline: '2026-11-24T10:01:00.000Z' })]);
});

test('an approver of the same tenant sees the call (arguments redacted as in the audit) and may read the turn, not cancel it', async () => {
  await start(['teacher']);
  const inbox = (await get('/v1/approvals', MALLORY)).json().approvals;
  expect(inbox.map((a: { turnId: string }) => a.turnId)).toEqual(['turn-s1-abc']);
  expect(JSON.stringify(inbox[0].arguments)).not.toContain('bob@example.com');
  expect(inbox[0].arguments.amount).toBe(90);

  const view = await get('/v1/turns/turn-s1-abc', MALLORY);
  expect(view.statusCode).toBe(200);
  expect(JSON.stringify(view.json())).not.toContain('bob@example.com');
  expect((await app.inject({ method: 'POST', url: '/v1/turns/turn-s1-abc/cancel', headers: MALLORY })).statusCode).toBe(404);
});

test('without the approver role, or from another tenant, nothing is listed and the turn stays hidden', async () => {
  await start([]);
  expect((await get('/v1/approvals', MALLORY)).json().approvals).toEqual([]);
  expect((await get('/v1/turns/turn-s1-abc', MALLORY)).statusCode).toBe(404);
  await app.close();
  await start(['teacher']);
  expect((await get('/v1/approvals', EVE)).json().approvals.map((a: { turnId: string }) => a.turnId)).toEqual(['turn-s2-def']);
  expect((await get('/v1/turns/turn-s1-abc', EVE)).statusCode).toBe(404);
  expect((await get('/v1/approvals?state=decided', ALICE)).statusCode).toBe(400);
});
