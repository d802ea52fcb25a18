/** How the host's MCP server turns the turn service's answers and refusals into MCP results. */
import type { CallToolResult } from '@modelcontextprotocol/server';
import { HttpError } from '../errors';

/** A refusal the caller can act on, as a tool result the model or the user reads (never a stack trace). */
export function toolError(message: string): CallToolResult {
  return { content: [{ type: 'text', text: message }], isError: true };
}

/** JSON as a tool result: pretty text for people, the same value as structured content for programs. */
export function jsonResult(value: Record<string, unknown>): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(value, null, 2) }], structuredContent: value };
}

/**
 * Runs a tool body; the service's HttpErrors (not found, conflict, rate limited, unavailable) become
 * tool errors with their message. Anything else is a fault of ours: the SDK answers it as an error
 * without detail, and it is logged by the caller.
 */
export async function asToolResult<T>(body: () => Promise<T | CallToolResult>, onFault: (err: unknown) => void): Promise<T | CallToolResult> {
  try {
    return await body();
  } catch (err) {
    if (err instanceof HttpError) return toolError(`${err.message}${err.retryAfterSeconds !== undefined ? ` (retry in ${err.retryAfterSeconds} s)` : ''}`);
    onFault(err);
    return toolError('The host could not complete the call.');
  }
}
