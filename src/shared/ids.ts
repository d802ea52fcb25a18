/** Identifier rules shared by the API, workflows and tests. Pure: no I/O. */

export const SESSION_ID_PATTERN = /^[a-zA-Z0-9_-]{1,64}$/;
export const TURN_ID_PATTERN = /^turn-[a-zA-Z0-9_-]{1,64}-[a-z0-9]{1,40}$/;

/** Workflow id of a session: per owner (`ownerKey` is a hash of tenant and user), then the client's id. */
export function sessionWorkflowId(ownerKey: string, sessionId: string): string {
  return `session-${ownerKey}-${sessionId}`;
}

/** Workflow id of a turn: the turn id itself, built from the session and a per-request key. */
export function turnId(sessionId: string, requestKey: string): string {
  return `turn-${sessionId}-${requestKey}`;
}

/** Parses the session id back out of a turn id (ids are validated, so the last dash splits). */
export function sessionOfTurn(id: string): string | undefined {
  if (!TURN_ID_PATTERN.test(id)) return undefined;
  return id.slice('turn-'.length, id.lastIndexOf('-'));
}

/**
 * Idempotency key for one tool call. Stable across activity retries, worker crashes and replays,
 * unique per turn + step + model tool-call id, so a server that dedupes on it applies an effect once.
 */
export function toolCallIdempotencyKey(workflowId: string, step: number, toolCallId: string): string {
  return `${workflowId}/step-${step}/${toolCallId}`;
}

/** FNV-1a 32-bit, as 8 hex chars: a stable, dependency-free hash for short ids. */
export function fnv1a32(input: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < input.length; i++) {
    h ^= input.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h.toString(16).padStart(8, '0');
}
