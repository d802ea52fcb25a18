/** Answers a turn waits for: the approvals inbox, approval decisions, and the owner's answers to servers' questions. */
import type { z } from 'zod';
import { canApprove } from '../../core/policy';
import type { UserContext } from '../../shared/user';
import { setTimeout as sleep } from 'node:timers/promises';
import type { TurnEvent } from '../../shared/turn';
import type { ApprovalsInbox, InputBody } from '../contract';
import { createArgumentValidator } from '../../validation/json-schema';
import { HttpError, notFound } from '../errors';
import type { TurnServiceOptions } from './options';
import { unavailableOnError } from './unavailable';
import { approvalTimeoutMs, ownedBy, pendingApprovals } from './views';

const INBOX_LIMIT = 100;
const RECORDED_WAIT_MS = 30_000;
const RECORDED_LOOK_EVERY_MS = 250;

export function createDecisions(opts: TurnServiceOptions) {
  const { gateway } = opts;
  const answerValidator = createArgumentValidator();

  /** Whether the pushed events of a turn show `opened` on `toolCallId` and nothing after it that `closed` it. */
  const isOpen = (toolCallId: string, opened: TurnEvent['type'], closed: TurnEvent['type']) => (turnId: string) =>
    openedEvent(opts.pushedEvents?.(turnId) ?? [], toolCallId, opened, closed) !== undefined;

  /**
   * Delivers an answer. The turn says it has nothing pending on that call, yet its pushed events show
   * the question or approval open: the worker that showed it died before the workflow task that
   * asked was recorded, and the next worker is asking again. The answer is tried again until the turn
   * records it (at most `recordedWaitMs`), and is never lost as "not pending" meanwhile.
   */
  async function untilRecorded<R extends { kind: string }>(turnId: string, shown: (turnId: string) => boolean, deliver: () => Promise<R>): Promise<R> {
    const giveUpAt = performance.now() + (opts.recordedWaitMs ?? RECORDED_WAIT_MS);
    for (;;) {
      const result = await deliver();
      if (result.kind !== 'not_pending' || !shown(turnId)) return result;
      if (performance.now() >= giveUpAt) {
        throw new HttpError(503, 'unavailable', 'The turn showed this but has not recorded it yet (its worker is restarting); try again shortly.', 1);
      }
      await sleep(RECORDED_LOOK_EVERY_MS);
    }
  }

  return {
    /** Pending decisions the caller may take: their own turns', and, for approver roles, the tenant's. */
    async approvals(user: UserContext): Promise<z.output<typeof ApprovalsInbox>> {
      const states = await unavailableOnError(() => gateway.awaitingApproval(user.tenant, INBOX_LIMIT));
      const approvals = states
        .filter((s) => s.owner && s.owner.tenant === user.tenant && canApprove(opts.policy(), user, s.owner.id))
        .flatMap((s) => {
          const redactArgs = ownedBy(s, user) ? (args: unknown) => args : opts.redactArguments;
          return pendingApprovals(s, approvalTimeoutMs(opts.policy()), redactArgs).map((p) => ({
            ...p,
            turnId: s.turnId,
            sessionId: s.sessionId,
            owner: s.owner?.id ?? '',
            decideUrl: `/v1/turns/${s.turnId}/approvals/${p.toolCallId}`,
          }));
        })
        .sort((a, b) => a.deadline.localeCompare(b.deadline));
      return { approvals };
    },

    async decideApproval(user: UserContext, turnId: string, toolCallId: string, approve: boolean) {
      const state = await unavailableOnError(() => gateway.getTurn(turnId));
      // Same tenant only; whether this caller may decide (owner, or an approver role) is the workflow's call.
      if (!state || !state.owner || state.owner.tenant !== user.tenant) throw notFound(`turn ${turnId}`);
      const result = await untilRecorded(turnId, isOpen(toolCallId, 'approval_required', 'approval_decided'), () =>
        unavailableOnError(() => gateway.decideApproval(turnId, { toolCallId, approve, approver: user })),
      );
      if (result.kind === 'already_decided') throw new HttpError(409, 'already_decided', `tool call ${toolCallId} was already decided`);
      // Not pending, or not this caller's to decide: indistinguishable from outside, by design.
      if (result.kind !== 'decided') throw notFound(`pending approval ${toolCallId} of turn ${turnId}`);
      return { turnId, toolCallId, decision: result.decision };
    },

    /**
     * The owner's answer to a server's question (the turn's latest `input_required` for that call, not
     * yet answered). An accepted answer must satisfy the question's schema: the server gets nothing the
     * user did not mean to send.
     */
    async provideInput(user: UserContext, turnId: string, toolCallId: string, body: z.output<typeof InputBody>) {
      const state = await unavailableOnError(() => gateway.getTurn(turnId));
      if (!state || !state.owner || state.owner.tenant !== user.tenant || state.owner.id !== user.id) throw notFound(`turn ${turnId}`);
      // Shown from the pushed events and not recorded yet: the answer waits for the record below.
      const question = (events: readonly TurnEvent[]) => openedEvent(events, toolCallId, 'input_required', 'input_provided');
      const asked = question(state.events) ?? question(opts.pushedEvents?.(turnId) ?? []);
      const provide = gateway.provideInput?.bind(gateway);
      if (!asked || !provide) throw notFound(`question on tool call ${toolCallId} of turn ${turnId}`);
      if (body.action === 'accept') {
        const check = answerValidator.validate(asked.data['requestedSchema'], body.content ?? {}, 'answer');
        if (!check.ok) throw new HttpError(400, 'invalid_input', check.message);
      }
      const input = { toolCallId, action: body.action, ...(body.action === 'accept' ? { content: body.content ?? {} } : {}), by: { id: user.id, tenant: user.tenant } };
      const result = await untilRecorded(turnId, isOpen(toolCallId, 'input_required', 'input_provided'), () => unavailableOnError(() => provide(turnId, input)));
      if (result.kind !== 'provided') throw notFound(`question on tool call ${toolCallId} of turn ${turnId}`);
      return { turnId, toolCallId, action: body.action };
    },
  };
}

/** The latest `opened` event on `toolCallId` that no `closed` event came after (a question, an approval). */
function openedEvent(events: readonly TurnEvent[], toolCallId: string, opened: TurnEvent['type'], closed: TurnEvent['type']): TurnEvent | undefined {
  let open: TurnEvent | undefined;
  for (const e of events) {
    if (e.data['toolCallId'] !== toolCallId) continue;
    if (e.type === opened) open = e;
    if (e.type === closed) open = undefined;
  }
  return open;
}
