/** Who may see a turn, and what they see of it: the views every read and decision shares. */
import type { z } from 'zod';
import { canApprove } from '../../core/policy';
import type { Policy } from '../../shared/policy';
import type { UserContext } from '../../shared/user';
import type { TurnState } from '../../shared/turn';
import type { DecidableApproval, PendingApprovalView, TurnView } from '../contract';

/** Owner and tenant both match: anyone else gets the same 404 as for a missing turn. */
export const ownedBy = (state: TurnState, user: UserContext): boolean =>
  Boolean(state.owner && state.owner.id === user.id && state.owner.tenant === user.tenant);

/** Owners read their turns; an approver role of the same tenant reads the turns that asked for a decision. */
export const readableBy = (state: TurnState, user: UserContext, policy: Policy): boolean =>
  ownedBy(state, user) ||
  Boolean(state.owner && state.owner.tenant === user.tenant && state.approvals?.length && canApprove(policy, user, state.owner.id));

type PendingView = z.output<typeof PendingApprovalView>;

/** The calls of `state` waiting for a decision, with when they were asked and until when they wait. */
export function pendingApprovals(state: TurnState, timeoutMs: number, redactArguments: (args: unknown) => unknown): PendingView[] {
  return (state.approvals ?? [])
    .filter((a) => a.state === 'pending')
    .map((a) => {
      const asked = state.events.find((e) => e.type === 'approval_required' && e.data['toolCallId'] === a.toolCallId)?.at;
      const requestedAt = asked ?? new Date().toISOString();
      return {
        toolCallId: a.toolCallId,
        name: a.name,
        server: a.server,
        tool: a.tool,
        arguments: redactArguments(a.arguments),
        requestedAt,
        deadline: new Date(Date.parse(requestedAt) + timeoutMs).toISOString(),
      };
    });
}

/** The owner's pending calls of `state` with the route that decides each. */
export function decidable(state: TurnState, timeoutMs: number): Array<z.output<typeof DecidableApproval>> {
  return pendingApprovals(state, timeoutMs, (args) => args).map((p) => ({ ...p, decideUrl: `/v1/turns/${state.turnId}/approvals/${p.toolCallId}` }));
}

/**
 * The public view of a turn (ARCHITECTURE.md §9); events are served by the /events stream. A reader
 * other than the owner (an approver) sees arguments redacted as in the audit log.
 */
export function turnView(state: TurnState, opts: { approvalTimeoutMs?: number; redactArguments?: (args: unknown) => unknown } = {}): TurnView {
  const redactArgs = opts.redactArguments ?? ((args: unknown) => args);
  const pending = pendingApprovals(state, opts.approvalTimeoutMs ?? 0, redactArgs);
  const waiting = new Set(pending.map((p) => p.toolCallId));
  return {
    turnId: state.turnId,
    sessionId: state.sessionId,
    status: state.status,
    ...(state.text !== undefined ? { text: state.text } : {}),
    toolCalls: state.toolCalls.map((c) => ({
      ...c,
      arguments: redactArgs(c.arguments),
      ...(waiting.has(c.id) && c.state === 'running' ? { state: 'awaiting_approval' as const } : {}),
    })),
    ...(state.error ? { error: state.error } : {}),
    steps: state.steps,
    lastEventId: state.events.at(-1)?.id ?? 0,
    ...(state.usage ? { usage: state.usage } : {}),
    ...(pending.length ? { pendingApprovals: pending } : {}),
  };
}

/** The policy's approval timeout; the workflow uses the same default. */
export const approvalTimeoutMs = (policy: Policy): number => policy.approval?.timeoutMs ?? 300_000;
