/**
 * Queries, signals and names shared by the workflow, the API and tests, so payload types are checked
 * end to end. Imported by non-workflow code too: keep it free of workflow-only side effects.
 */
import { defineQuery, defineUpdate } from '@temporalio/workflow';
import type { UserContext } from '../core/policy';
import type { TurnState } from '../shared/turn';

export const TURN_WORKFLOW_TYPE = 'turnWorkflow';
export const CATALOG_WORKFLOW_TYPE = 'catalogWorkflow';

/** The turn's state; events are limited to those with an id greater than the argument. */
export const turnStateQuery = defineQuery<TurnState, [afterEventId?: number]>('turnState');

/** Failure type of a turn that ended in error; its first detail is the final TurnState. */
export const TURN_FAILED_ERROR_TYPE = 'TurnFailed';

/** Custom search attribute set on every turn, registered at dev-server start and by the API. */
export const SESSION_ID_SEARCH_ATTRIBUTE = 'SessionId';

export interface ApprovalInput {
  toolCallId: string;
  approve: boolean;
  /** The verified caller deciding; the workflow checks they may approve this turn. */
  approver: UserContext;
}

export interface ApprovalResult {
  toolCallId: string;
  decision: 'approved' | 'rejected';
}

/** Decides a pending tool call. Rejected by its validator when nothing is pending under that id. */
export const approveToolCallUpdate = defineUpdate<ApprovalResult, [ApprovalInput]>('approveToolCall');

/** Validator rejection messages, matched by the API to answer 404 / 409. */
export const APPROVAL_NOT_PENDING = 'no pending approval with that tool call id';
export const APPROVAL_ALREADY_DECIDED = 'that tool call was already decided';
export const APPROVAL_FORBIDDEN = 'not allowed to decide approvals of this turn';

/** Custom search attributes set on every turn for the owner, registered with SessionId. */
export const USER_ID_SEARCH_ATTRIBUTE = 'UserId';
export const TENANT_ID_SEARCH_ATTRIBUTE = 'TenantId';
