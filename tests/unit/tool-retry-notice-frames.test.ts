import { sseFrame, TOOL_RETRY_NOTICE, wsMessages } from '../../src/api/client-events';
import type { LiveChunk } from '../../src/live/chunk';

/** A tool call's retry notice as clients get it: an SSE `notice` and a WebSocket `system` message, no id. */
const chunk: LiveChunk = { turnId: 't-1', step: 1, attempt: 2, kind: 'notice', offset: 0, text: 'retrying a__b on another worker (attempt 2)', toolCallId: 'call-1' };

test('SSE: a notice with code tool_retry naming the call and its attempt', () => {
  const frame = sseFrame('t-1', { type: 'live', chunk });
  expect(frame.startsWith('event: notice\ndata: ')).toBe(true);
  expect(JSON.parse(frame.slice('event: notice\ndata: '.length))).toEqual({
    turnId: 't-1',
    toolCallId: 'call-1',
    attempt: 2,
    code: TOOL_RETRY_NOTICE,
    message: 'retrying a__b on another worker (attempt 2)',
  });
});

test('WebSocket: a system message with the same code and message', () => {
  expect(wsMessages('t-1', { type: 'live', chunk })).toEqual([{ type: 'system', payload: { code: 'tool_retry', message: 'retrying a__b on another worker (attempt 2)', turnId: 't-1' } }]);
});
