import { ApplicationFailure, condition, proxySinks, setHandler } from '@temporalio/workflow';
import { createApprovalBook } from '../core/approvals';
import type { PlannedCall } from '../core/host-loop';
import type { AuditRequest } from '../shared/audit';
import type { TurnRecord } from '../core/turn-record';
import type { Policy } from '../shared/policy';
import type { PendingApproval } from '../shared/turn';
import type { UserContext } from '../shared/user';
import { approveToolCallUpdate, type MetricsSinks } from './definitions';

/** The turn's audit activity (it adds who and which workflow). */
type AuditApproval = (entry: Omit<AuditRequest, 'actor' | 'workflowId' | 'runId'>) => Promise<void>;

/**
 * Durable human approval: a decision arrives as an update; the wait is a durable timer, so it survives
 * worker restarts. The update's validator refuses unknown, decided or unauthorized decisions (with a
 * failure type the API switches on) before anything is written to history.
 */
export function handleApprovals(record: TurnRecord, user: UserContext | undefined, policy: Policy | undefined, audit: AuditApproval) {
  const book = createApprovalBook(record.state, user, policy);
  // The worker's approvals-pending gauge; sinks are not called on replay and add no command.
  const { metrics } = proxySinks<MetricsSinks>();
  setHandler(approveToolCallUpdate, (input) => book.decide(input), {
    validator: (input) => {
      const refusal = book.refusal(input);
      if (refusal) throw ApplicationFailure.create({ type: refusal.type, message: refusal.message, nonRetryable: true });
    },
  });

  return {
    /** Pauses this call until the owner (or an approver) decides, or the policy's timeout denies it. */
    async wait(p: Extract<PlannedCall, { kind: 'call' }>, step: number): Promise<PendingApproval['state']> {
      const pending = book.request({ toolCallId: p.call.id, name: p.tool.name, server: p.tool.server, tool: p.tool.tool, arguments: p.arguments });
      record.emit('approval_required', { toolCallId: p.call.id, name: p.tool.name, server: p.tool.server, tool: p.tool.tool, arguments: p.arguments, step });
      await audit({ kind: 'approval_requested', server: p.tool.server, tool: p.tool.tool, args: p.arguments, toolCallId: p.call.id });
      const timeoutMs = policy?.approval?.timeoutMs ?? 300_000;
      metrics.approvalWaiting(p.call.id, timeoutMs);
      let inTime: boolean;
      try {
        inTime = await condition(() => book.isDecided(p.call.id), timeoutMs);
      } catch (err) {
        // The turn was cancelled while it waited.
        metrics.approvalEnded(p.call.id, 'cancelled');
        throw err;
      }
      const settled = book.settle(pending, inTime);
      if (settled.state !== 'pending') metrics.approvalEnded(p.call.id, settled.state);
      const by = settled.decidedBy;
      record.emit('approval_decided', { toolCallId: p.call.id, decision: settled.state, ...(by !== undefined ? { by } : {}) });
      await audit({
        kind: 'approval_decision',
        server: p.tool.server,
        tool: p.tool.tool,
        toolCallId: p.call.id,
        outcome: settled.state === 'approved' ? 'approved' : settled.state === 'rejected' ? 'rejected' : 'timed_out',
        ...(by !== undefined ? { detail: `decided by ${by}` } : {}),
      });
      return settled.state;
    },
  };
}
