/**
 * Seed 004's standard system messages, worded for people. The API adds them where they apply: a
 * new WebSocket session (welcome), a failed tool call (tool error, next to the raw result), a
 * refused submission (rate limited) and the workflow service being unreachable (maintenance).
 */
export const SYSTEM_MESSAGES = {
  WELCOME: "Hello! I'm an AI assistant that can help answer questions and use tools to get information.",
  TOOL_ERROR: (toolName: string, error: string) =>
    `I encountered an error when using the ${toolName} tool: ${error}. Let me try a different approach.`,
  RATE_LIMITED: "I'm currently processing too many requests. Please try again in a moment.",
  MAINTENANCE: 'The system is currently undergoing maintenance. Some features may be unavailable.',
} as const;

/** The first line of a tool's error result, short enough for a chat bubble. */
export function toolErrorMessage(toolName: string, result: unknown): string {
  const text = typeof result === 'string' ? result : 'unknown error';
  const first = (text.split('\n')[0] ?? '').replace(/^Error:\s*/, '').trim();
  return SYSTEM_MESSAGES.TOOL_ERROR(toolName, first.length > 200 ? `${first.slice(0, 200)}…` : first || 'unknown error');
}
