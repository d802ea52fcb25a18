/**
 * Keys the host puts into a tools/call request's `_meta`. Reverse-DNS prefixed, as the MCP spec asks
 * for vendor keys, so they cannot clash with keys other hosts or the protocol itself define.
 */

/** Same value on every retry of one logical tool call; servers dedupe side effects on it. */
export const IDEMPOTENCY_KEY_META_KEY = 'io.durable-mcp/idempotency-key';

/** Who the call is made for (opaque to the host), so servers can scope data per user. */
export const USER_CONTEXT_META_KEY = 'io.durable-mcp/user';

/** Correlates server-side logs with the workflow that made the call. */
export const TRACE_META_KEY = 'io.durable-mcp/trace-id';
