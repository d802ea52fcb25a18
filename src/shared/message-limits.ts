/** Longest message text, in characters, unless `MAX_MESSAGE_CHARS` says otherwise. */
export const DEFAULT_MAX_MESSAGE_CHARS = 16_000;

/**
 * The largest WebSocket frame GET /ws reads, in bytes: room for the longest message even if every
 * character is JSON-escaped (`\u0000`, 6 bytes) plus its envelope, and never under 64 KiB. The socket's
 * `maxPayload` and the documented limit are both this value.
 */
export function wsMaxFrameBytes(maxMessageChars: number): number {
  return Math.max(64 * 1024, maxMessageChars * 6 + 4_096);
}
