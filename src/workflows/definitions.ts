/**
 * Queries, signals and names shared by the workflow, the API and tests, so payload types are checked
 * end to end. Imported by non-workflow code too: keep it free of workflow-only side effects.
 */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { HistoryOptions, TranscriptMessage } from '../core/history';
import type { Policy, UserContext } from '../core/policy';
import type { ChatMessage, TurnOptions, TurnState } from '../shared/turn';

export const TURN_WORKFLOW_TYPE = 'turnWorkflow';
export const CATALOG_WORKFLOW_TYPE = 'catalogWorkflow';
export const SESSION_WORKFLOW_TYPE = 'sessionWorkflow';

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

export const SessionIdKey = defineSearchAttributeKey(SESSION_ID_SEARCH_ATTRIBUTE, SearchAttributeType.KEYWORD);
export const UserIdKey = defineSearchAttributeKey(USER_ID_SEARCH_ATTRIBUTE, SearchAttributeType.KEYWORD);
export const TenantIdKey = defineSearchAttributeKey(TENANT_ID_SEARCH_ATTRIBUTE, SearchAttributeType.KEYWORD);

// ---------------------------------------------------------------------------------------------
// Sessions: one long-lived workflow per conversation that serializes its turns (child workflows).
// ---------------------------------------------------------------------------------------------

export interface SessionSettings {
  history: HistoryOptions;
  /** Most requests waiting behind the running turn; more are refused (409 session_busy). */
  maxQueuedTurns: number;
  /** Messages kept for GET /v1/sessions/:id/messages; older ones live on in their turn workflows. */
  transcriptLimit: number;
  /** Continue-as-new after this many turns in one run, even if Temporal has not suggested it yet. */
  maxTurnsPerRun: number;
}

/** State carried from one run of a session to the next (continue-as-new). */
export interface SessionCarry {
  summary?: string;
  /** Transcript index from which messages are kept verbatim for the model (older ones are summarized). */
  summarizedUpTo: number;
  transcript: TranscriptMessage[];
  totalMessages: number;
  turnsCompleted: number;
  /** Recently submitted turn ids, so a retried submission is recognized after continue-as-new. */
  recentTurnIds: string[];
  run: number;
}

export interface SessionInput {
  sessionId: string;
  owner: { id: string; tenant: string };
  settings: SessionSettings;
  carry?: SessionCarry;
}

export interface SubmitMessageInput {
  turnId: string;
  text: string;
  user: UserContext;
  policy: Policy;
  sealedToken?: string;
  options: TurnOptions;
}

export interface SubmitMessageResult {
  turnId: string;
  created: boolean;
  /** Turns ahead of this one (0: it runs now). */
  position: number;
}

export interface SessionView {
  sessionId: string;
  owner: { id: string; tenant: string };
  summary?: string;
  messages: TranscriptMessage[];
  totalMessages: number;
  turnsCompleted: number;
  activeTurnId?: string;
  queuedTurnIds: string[];
  run: number;
}

/** Adds a message to the conversation; answers once its turn workflow exists. */
export const submitMessageUpdate = defineUpdate<SubmitMessageResult, [SubmitMessageInput]>('submitMessage');
export const sessionStateQuery = defineQuery<SessionView>('sessionState');
/** Parent → queued turn: it is this turn's go, with the conversation so far. */
export const beginTurnSignal = defineSignal<[{ history: ChatMessage[] }]>('beginTurn');

export const SESSION_FORBIDDEN = 'this session belongs to someone else';
export const SESSION_BUSY = 'too many messages are waiting in this session';
