/**
 * What the workflow and activities ask the audit trail to record (the sink adds the sequence number,
 * the time, the argument digest and the hash chain, and redacts). Workflow payload: plain JSON.
 */
export const AUDIT_KINDS = ['tool_call', 'tool_result', 'denial', 'approval_requested', 'approval_decision', 'elicitation_requested', 'elicitation_answered', 'sampling', 'turn_usage'] as const;
export const AUDIT_OUTCOMES = ['ok', 'error', 'denied', 'approved', 'rejected', 'timed_out', 'declined', 'cancelled'] as const;

export interface AuditRequest {
  kind: (typeof AUDIT_KINDS)[number];
  actor: { id: string; role: string; tenant: string };
  server?: string;
  tool?: string;
  /** The raw tool arguments; recorded only after redaction. */
  args?: Record<string, unknown>;
  outcome?: (typeof AUDIT_OUTCOMES)[number];
  /** Free text (tool errors, reasons); redacted and truncated by the sink. */
  detail?: string;
  workflowId?: string;
  runId?: string;
  activityId?: string;
  attempt?: number;
  toolCallId?: string;
}
