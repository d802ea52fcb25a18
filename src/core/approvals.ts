/**
 * Durable human approval of tool calls, the pure part: which calls wait, who may decide them, and
 * what a decision (or its absence) makes of each. The turn workflow owns the waiting (an update and a
 * durable timer, src/workflows/approvals.ts); everything it decides is decided here.
 */
import { Failure, type FailureType } from '../shared/failures';
import type { Policy } from '../shared/policy';
import type { ApprovalInput, ApprovalResult, PendingApproval, TurnState } from '../shared/turn';
import type { UserContext } from '../shared/user';
import { canApprove } from './policy';

export interface ApprovalBook {
  /** A call starts waiting: recorded on the turn, which is now awaiting approval. */
  request(call: Omit<PendingApproval, 'state' | 'decidedBy'>): PendingApproval;
  /** Why this decision must be refused, or undefined when it may be taken. */
  refusal(input: ApprovalInput): { type: FailureType; message: string } | undefined;
  decide(input: ApprovalInput): ApprovalResult;
  isDecided(toolCallId: string): boolean;
  /**
   * The wait is over: the call's final state (`timed_out` unless decided in time), and the turn runs
   * again once no call waits.
   */
  settle(pending: PendingApproval, decidedInTime: boolean): PendingApproval;
}

export function createApprovalBook(state: TurnState, owner: UserContext | undefined, policy: Policy | undefined): ApprovalBook {
  const approvals: PendingApproval[] = [];
  const decisions = new Map<string, { approve: boolean; by: string }>();
  return {
    request(call) {
      const pending: PendingApproval = { ...call, state: 'pending' };
      approvals.push(pending);
      state.approvals = approvals;
      state.status = 'awaiting_approval';
      return pending;
    },
    refusal({ toolCallId, approver }) {
      const pending = approvals.find((a) => a.toolCallId === toolCallId);
      if (!pending) return { type: Failure.ApprovalNotPending, message: 'no pending approval with that tool call id' };
      if (pending.state !== 'pending' || decisions.has(toolCallId)) {
        return { type: Failure.ApprovalAlreadyDecided, message: 'that tool call was already decided' };
      }
      if (!owner || !policy || approver.tenant !== owner.tenant || !canApprove(policy, approver, owner.id)) {
        return { type: Failure.ApprovalForbidden, message: 'not allowed to decide approvals of this turn' };
      }
      return undefined;
    },
    decide({ toolCallId, approve, approver }) {
      decisions.set(toolCallId, { approve, by: approver.id });
      return { toolCallId, decision: approve ? 'approved' : 'rejected' };
    },
    isDecided: (toolCallId) => decisions.has(toolCallId),
    settle(pending, decidedInTime) {
      const d = decisions.get(pending.toolCallId);
      pending.state = !decidedInTime || !d ? 'timed_out' : d.approve ? 'approved' : 'rejected';
      if (d) pending.decidedBy = d.by;
      if (!approvals.some((a) => a.state === 'pending')) state.status = 'running';
      return pending;
    },
  };
}
