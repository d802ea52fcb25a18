import type { TurnResult } from './turn';

/**
 * The closed set of failure types that cross Temporal (activity failures, turn results, update
 * rejections). Code decides on the type; messages are for people only and may be reworded freely.
 * The values are recorded in workflow histories and retry policies: never rename one.
 */
export const Failure = {
  /** The LLM refused the request (400/401/403/404, an empty summary): retrying cannot help. */
  LlmRequestRejected: 'LlmRequestRejected',
  /** The LLM did not answer (network, timeout, 429, 5xx): retried with backoff. */
  LlmUnavailable: 'LlmUnavailable',
  /** The MCP server cannot be reached now (down, respawning, circuit open): retried with backoff. */
  McpServerUnavailable: 'McpServerUnavailable',
  /** An MCP call failed in a way worth retrying (connection lost, timeout). */
  McpTransientError: 'McpTransientError',
  /** An MCP call failed in a way retrying cannot fix (protocol error, unknown tool). */
  McpPermanentError: 'McpPermanentError',
  /**
   * A tools/call reached (or may have reached) the server and its answer was lost, and the call is
   * not safe to send again (src/mcp/repeat-safety.ts): whether it took effect is unknown. Never retried.
   */
  McpOutcomeUnknown: 'McpOutcomeUnknown',
  /**
   * The user must authorize the host with an MCP server (OAuth) before the call can run; the
   * failure's first detail is `{ server, authorizationUrl }`. Never retried: the turn waits instead.
   */
  McpAuthorizationRequired: 'McpAuthorizationRequired',
  /**
   * A server asked the user for input during a tool call; the failure's first detail is the
   * InputAsked. Never retried: the turn asks the user and issues the call again with the answer.
   */
  McpInputRequired: 'McpInputRequired',
  /**
   * The worker running the attempt died (its liveness ended, src/liveness): failed by a peer's reaper
   * so that the next attempt starts at once. Retried like a transient error.
   */
  WorkerLost: 'WorkerLost',
  /** Update rejections of an answer to a server's question. */
  InputNotPending: 'InputNotPending',
  InputForbidden: 'InputForbidden',
  /** A turn ended in error; the failure's first detail is the final TurnState. */
  TurnFailed: 'TurnFailed',
  /** Update rejections of an approval decision. */
  ApprovalNotPending: 'ApprovalNotPending',
  ApprovalAlreadyDecided: 'ApprovalAlreadyDecided',
  ApprovalForbidden: 'ApprovalForbidden',
  /** Update rejections of a message submitted to a session. */
  SessionBusy: 'SessionBusy',
  SessionForbidden: 'SessionForbidden',
} as const;
export type FailureType = (typeof Failure)[keyof typeof Failure];

const ALL: ReadonlySet<string> = new Set(Object.values(Failure));

/** Activity failure types that end retries at once, per activity profile (listed in retry policies). */
export const NON_RETRYABLE = {
  llm: [Failure.LlmRequestRejected],
  mcp: [Failure.McpPermanentError],
} as const satisfies Record<string, readonly FailureType[]>;

/**
 * The failure type carried by an error or by the first of its causes that has one (activity failures
 * wrap the application failure; update and workflow failures wrap it too). Structural, so it works on
 * the client's, the workflow's and the activity's failure classes alike.
 */
export function failureTypeOf(err: unknown): FailureType | undefined {
  let current: unknown = err;
  for (let depth = 0; depth < 8 && current && typeof current === 'object'; depth++) {
    const type = (current as { type?: unknown }).type;
    if (typeof type === 'string' && ALL.has(type)) return type as FailureType;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/**
 * The record a turn that failed as a turn carries (its failure's first detail: the state it ended in,
 * and the memory it began with), or undefined for any other failure: Temporal's, a timeout, a cancel.
 */
export function failedTurnRecord(cause: { type?: string | null; details?: unknown[] | null } | undefined): TurnResult | undefined {
  return cause?.type === Failure.TurnFailed ? ((cause.details?.[0] ?? undefined) as TurnResult | undefined) : undefined;
}
