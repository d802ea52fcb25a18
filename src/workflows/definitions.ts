/**
 * Queries, signals and names shared by the workflow, the API and tests, so payload types are checked
 * end to end. Imported by non-workflow code too: keep it free of workflow-only side effects.
 */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { defineQuery, defineSignal, defineUpdate, type Sinks } from '@temporalio/workflow';
import type { PredecessorEnded, TurnMemory } from '../shared/session';
import type { ApprovalInput, ApprovalResult, PendingApproval, PushedTurn, TurnEvent, TurnState, TurnUsage } from '../shared/turn';
import type { ElicitationAnswer, InputAsked, ProvideInput } from '../shared/user-input';

export const TURN_WORKFLOW_TYPE = 'turnWorkflow';

/** How a turn ended, as its metrics count it. */
export type TurnOutcome = 'completed' | 'failed' | 'cancelled';

/** Whose turn it was and what its model calls used (sent to the worker's sink when the turn ends). */
export interface TurnAccounting {
  sessionId: string;
  user?: { id: string; role: string; tenant: string };
  usage?: TurnUsage;
  /** The model ids that answered its LLM steps, in order of first answer (absent: none said, or older workflow code). */
  models?: string[];
}

/**
 * What workflows tell the worker's metrics (Temporal sinks: called from workflow code, run outside
 * it, never during replay, and no command or history event of their own).
 */
export interface MetricsSinks extends Sinks {
  metrics: {
    /**
     * The turn ended; the worker adds its duration since start and its history length (from the call's
     * workflow info), and records the turn's token usage for budgets (absent from older workflow code).
     */
    turnFinished(outcome: TurnOutcome, llmSteps: number, toolCalls: number, accounting?: TurnAccounting): void;
    /** A tool call began waiting for approval; the policy denies it after `timeoutMs` at the latest. */
    approvalWaiting(toolCallId: string, timeoutMs: number): void;
    /** That wait ended: decided, timed out, or the turn was cancelled while it waited. */
    approvalEnded(toolCallId: string, how: ApprovalWaitEnd): void;
  };
}

/** How a wait for approval ends, as the metrics count it. */
export type ApprovalWaitEnd = Exclude<PendingApproval['state'], 'pending'> | 'cancelled';

/**
 * Each durable event of a turn, as its record emits it, for the worker to push to the API over the
 * live channel (docs/decisions/0015-durable-events-pushed.md). A sink: no command, no history event,
 * not called on replay, so histories recorded before it replay unchanged.
 */
export interface TurnEventSinks extends Sinks {
  turnEvents: {
    emitted(event: TurnEvent, turn: PushedTurn): void;
  };
}

/** What a turn of the chain tells the worker to pass on to another turn of its session. */
export interface SessionSinks extends Sinks {
  session: {
    /**
     * A turn of the chain (decision 0033) ended and a later turn waits for it: the worker signals the
     * follower `predecessorEnded` at once. A lost signal costs the follower a wait until its next check.
     */
    predecessorEnded(followerId: string, ended: PredecessorEnded): void;
    /**
     * A turn of the chain ended with `memory` (the memory after it, or the one it began with when it
     * failed or was cancelled): the worker pushes it to the API beside the turn's events, so the next
     * message of the session starts its turn with it (ChainInput.handedOn). Best effort.
     */
    handedOn(turnId: string, memory: TurnMemory): void;
  };
}

export const CATALOG_WORKFLOW_TYPE = 'catalogWorkflow';
/**
 * The closed carrier of a session's memory under the id its session workflow of decision 0016 had,
 * since its migration (src/workflows/session-memory.ts, decision 0041).
 */
export const SESSION_MEMORY_WORKFLOW_TYPE = 'sessionMemoryWorkflow';

/** The turn's state; events are limited to those with an id greater than the argument. */
export const turnStateQuery = defineQuery<TurnState, [afterEventId?: number]>('turnState');

/** Custom search attribute set on every turn, registered at dev-server start and by the API. */
export const SESSION_ID_SEARCH_ATTRIBUTE = 'SessionId';

/**
 * Decides a pending tool call. Its validator rejects with Failure.ApprovalNotPending,
 * ApprovalAlreadyDecided or ApprovalForbidden (src/shared/failures.ts).
 */
export const approveToolCallUpdate = defineUpdate<ApprovalResult, [ApprovalInput]>('approveToolCall');


/**
 * The API's OAuth callback → a turn waiting for the user to authorize the host with `server`: try
 * the call again (the worker exchanges the code the callback stored). A signal: the browser's page
 * must not wait for a worker.
 */
export const authorizationCompletedSignal = defineSignal<[{ server: string }]>('authorizationCompleted');

/**
 * The owner's answer to a server's question (elicitation). Its validator rejects with
 * Failure.InputNotPending or InputForbidden.
 */
export const provideInputUpdate = defineUpdate<{ toolCallId: string; action: ProvideInput['action'] }, [ProvideInput]>('provideInput');

/**
 * A tool call's activity → its turn: the server asked the user `question` and the activity holds the
 * server's request open while the user answers (issue 22 §2). The turn shows the question as it shows
 * one from a failed call; the activity reads the answer with `inputAnswer` and hands it to the server
 * in the same call. A call whose hold ends first falls back to the re-issue (decision 0011).
 */
export const inputAskedSignal = defineSignal<[{ toolCallId: string; question: InputAsked }]>('inputAsked');
/**
 * The question a tool call's activity holds: its answer once given (null before), and whether an
 * attempt took it to the server (`inputTaken`). null when no question is held on that call. A later
 * attempt reads it too: a question held and never taken means the server has not acted yet.
 */
export const inputAnswerQuery = defineQuery<{ answer: ElicitationAnswer | null; taken: boolean } | null, [{ toolCallId: string }]>('inputAnswer');
/**
 * The activity takes the answer to the server: recorded before the server hears it. Rejected when none
 * waits. (Its argument is an object: a bare short string would pass the payload codec in clear, decision 0019.)
 */
export const inputTakenUpdate = defineUpdate<ElicitationAnswer, [{ toolCallId: string }]>('inputTaken');

/** Custom search attributes set on every turn for the owner, registered with SessionId. */
export const USER_ID_SEARCH_ATTRIBUTE = 'UserId';
export const TENANT_ID_SEARCH_ATTRIBUTE = 'TenantId';

export const SessionIdKey = defineSearchAttributeKey(SESSION_ID_SEARCH_ATTRIBUTE, SearchAttributeType.KEYWORD);
export const UserIdKey = defineSearchAttributeKey(USER_ID_SEARCH_ATTRIBUTE, SearchAttributeType.KEYWORD);
export const TenantIdKey = defineSearchAttributeKey(TENANT_ID_SEARCH_ATTRIBUTE, SearchAttributeType.KEYWORD);

// ---------------------------------------------------------------------------------------------
// The chain of turns (docs/decisions/0033): a turn waiting for the one before it.
// ---------------------------------------------------------------------------------------------

/** A later turn of the chain → the running turn it waits for: say when you end. */
export const followedBySignal = defineSignal<[{ turnId: string }]>('followedBy');
/** The turn before → its follower (from the worker, through the session sink): it ended, with its memory. */
export const predecessorEndedSignal = defineSignal<[PredecessorEnded]>('predecessorEnded');
