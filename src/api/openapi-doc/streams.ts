/** The document's texts on the two streams: the SSE events of a turn, and the WebSocket protocol. */
import { z } from 'zod';
import { STREAM_OPENING_EVENT, StreamOpening, TURN_EVENT_TYPES, WS_ERROR_CODES } from '../contract';
import { DEFAULT_MAX_MESSAGE_CHARS, wsMaxFrameBytes } from '../../shared/message-limits';
import type { JsonSchema } from './parts';

/** `{ a, b? }`: the fields of an event's data besides `turnId` and `at`, which every event has. */
const fieldList = (schema: z.ZodObject): string =>
  `{ ${Object.entries(schema.shape)
    .filter(([k]) => k !== 'turnId' && k !== 'at')
    .map(([k, v]) => (v instanceof z.ZodOptional ? `${k}?` : k))
    .join(', ')} }`;

/** Every `event:` type of the SSE stream: the opening one, the durable ones, the live ones (no `id`). */
export const SSE_EVENT_TYPES = [STREAM_OPENING_EVENT, ...TURN_EVENT_TYPES, 'text_delta', 'text_reset', 'waiting', 'tool_progress'] as const;

export const SSE_EVENTS = `Server-sent events (\`text/event-stream\`). Every durable event has a dense, increasing \`id\` (1, 2, 3, ...) and
an \`event\` type; \`data\` is one line of JSON holding the event's fields plus \`turnId\` and \`at\` (ISO time).
Reconnect with \`Last-Event-ID\` (or \`?after=N\`) to resume without loss or duplicates. Events without \`id\` (below) are
not durable: they never move \`Last-Event-ID\`. The stream always opens with \`${STREAM_OPENING_EVENT}\`, from the API at once.
Comments (\`: keep-alive\`) keep the connection open; the stream ends after \`done\`, \`error\` or \`cancelled\`.

| event | data |
|---|---|
| \`${STREAM_OPENING_EVENT}\` | \`${fieldList(StreamOpening)}\`, no \`id\`: always the first event, sent by the API as soon as the stream opens, without waiting for the turn's workflow (a turn accepted a moment ago has not started yet): the turn's \`status\` as the API knows it and, while the turn has sent no event yet, its \`position\` as the POST answered. A reconnect gets a new one |
| \`status\` | \`{ status, phase?, step?, count?, provider?, model? }\`: progress (\`queued\`, \`gathering_context\`, \`calling_llm\`, \`calling_tools\`); \`calling_tools\` names the \`provider\` and \`model\` whose answer of that step asked for the tools |
| \`tool_call_started\` | \`{ toolCallId, name, server, tool, arguments }\` |
| \`tool_call_finished\` | \`{ toolCallId, name, isError, result }\` |
| \`text\` | \`{ text, provider?, model? }\`: the final answer, with the provider and model that gave it (none for a direct tool call) |
| \`text_delta\` | \`{ step, attempt, offset, text }\`, no \`id\`: a piece of the answer while the model streams it; append \`text\` at \`offset\`. Text of step n comes after every event up to that step's \`calling_llm\` status |
| \`text_reset\` | \`{ step, attempt, reason }\`, no \`id\`: discard the partial text of that step (the model call is retried) |
| \`waiting\` | \`{ turnId, behind, status, pendingApprovals, cancelUrl }\`, no \`id\`: while the turn is queued, what holds it up, sent when it changes: the session's turn ahead (\`behind\`), whether that one is \`running\` or \`awaiting_approval\`, its pending calls (each with \`deadline\` and \`decideUrl\`), and \`cancelUrl\` to cancel it |
| \`notice\` | \`{ code, message, server? }\`: degraded service, e.g. \`server_unavailable\`, \`context_unavailable\`, \`tools_unavailable\`, \`context_chosen\` (with \`pieces\`: \`{ kind, server, ref, because, read }\` for each resource and prompt, when a host-config intent rule matched the message: why each was read; and, with \`toolCallId\`, one per resource the model read on demand with \`host__read_resource\`, \`because\` \`model: <reason>\`), or \`tool_outcome_unknown\` (with \`toolCallId\`, \`tool\`: a call whose answer was lost and that was not safe to send again). Also live, without \`id\`: \`{ code: "llm_retry", message, step, attempt }\` when an LLM attempt failed and another follows (the message names the endpoint, the reason, when and which attempt; a stream opened during the wait gets the latest one); \`{ code: "tool_retry", message, toolCallId, attempt }\` when a tool call's next attempt starts, e.g. on another worker after its worker stopped (only to streams open then) |
| \`approval_required\` | \`{ toolCallId, name, server, tool, arguments, step }\`: decide with \`POST /v1/turns/{turnId}/approvals/{toolCallId}\` |
| \`approval_decided\` | \`{ toolCallId, decision: approved, rejected or timed_out, by? }\` |
| \`authorization_required\` | \`{ toolCallId, name, server, authorizationUrl, step, expiresInMs }\`: an OAuth-protected server needs the user's consent; open the URL, the turn waits |
| \`authorization_completed\` | \`{ toolCallId, server, outcome: authorized or timed_out }\` |
| \`input_required\` | \`{ toolCallId, name, server, message, requestedSchema, step, expiresInMs, mode? }\`: a server asks the user; answer with \`POST /v1/turns/{turnId}/inputs/{toolCallId}\` |
| \`input_provided\` | \`{ toolCallId, server, action, timedOut? }\` |
| \`tool_progress\` | \`{ toolCallId, progress, total?, message? }\`, no \`id\`: a running tool call's server reported progress |
| \`cancelled\` | \`{ status: "cancelled" }\` |
| \`done\` | \`{ status: "completed" }\` |
| \`error\` | \`{ code, message }\`: the turn failed |`;

/** One event of the SSE stream as a parser delivers it (frames, comments and `retry:` aside). */
export const SSE_EVENT_SCHEMA: JsonSchema = {
  type: 'object',
  description:
    'One server-sent event. On the wire: frames of `id:` (durable events only), `event:` and `data:` lines separated by blank lines, ' +
    'a `retry: 1000` line first and `: keep-alive` comment lines between events.',
  required: ['event', 'data'],
  properties: {
    event: { type: 'string', enum: [...SSE_EVENT_TYPES], description: 'The event type: a row of the table above.' },
    data: { type: 'string', description: 'One line of JSON: the fields in the table above, plus `turnId` and `at`.' },
    id: {
      type: 'string',
      pattern: '^[1-9][0-9]*$',
      description: "A durable event's id. An event without its own keeps the last id seen, as SSE parsers report it (`lastEventId`).",
    },
  },
  example: {
    event: STREAM_OPENING_EVENT,
    data: '{"turnId":"turn-demo-k1","sessionId":"demo","status":"running","position":1,"at":"2026-01-01T00:00:00.000Z"}',
  },
};

const WS_DEFAULT_FRAME_LIMIT = wsMaxFrameBytes(DEFAULT_MAX_MESSAGE_CHARS);

export const WS_PROTOCOL = `Upgrades to a WebSocket (\`101 Switching Protocols\`) for one session of the caller:
\`GET /ws?sessionId=<id>\` (\`^[a-zA-Z0-9_-]{1,64}$\`; without it the server picks a new id). The upgrade request
carries the same \`Authorization: Bearer <JWT>\` as the /v1 routes, or, for browsers (which cannot set
headers on a WebSocket), \`?access_token=<JWT>\` (redacted from logs). No valid token: \`401\` before the
upgrade; a bad query: \`400\`; a plain GET without upgrade: \`426\`. Sessions are per user and tenant, like
\`/v1/sessions/{sessionId}\`: another user naming the same id gets a session of their own.

Frames are JSON text frames \`{ "type", "payload" }\`.

Client to server:
- \`{ "type": "message", "payload": { "text": "...", "idempotencyKey"?: "..." } }\`: a message for the session, with
  the rules of \`POST /v1/sessions/{sessionId}/messages\` (length, rate limits, \`session_busy\`, same turn for a repeated key;
  after an \`error\` \`unavailable\` the turn may have started: send the message again with the same key);
- \`{ "type": "approve", "payload": { "turnId": "...", "toolCallId": "...", "approve": true } }\`: decide a call waiting
  for approval, under the rules of \`POST /v1/turns/{turnId}/approvals/{toolCallId}\`; answered by
  \`approval\` \`{ turnId, toolCallId, decision }\` or an \`error\` frame with the same codes;
- \`{ "type": "cancel", "payload": { "turnId": "..." } }\`: cancel one of the caller's turns;
- \`{ "type": "ping" }\`: answered by \`{ "type": "pong", "payload": { "at" } }\`.

Server to client:
- \`connection\` \`{ state: "connected" | "reconnected", sessionId, clientId, message }\` once open (\`reconnected\`
  when the caller already has that session), and for a new session \`system\` \`{ code: "welcome", message }\`;
- \`status\` \`{ state: "processing", message: "Working on it", turnId, position, created }\` for each accepted message, at once
  (from the API, before the turn's workflow has said anything: what the SSE stream's opening \`${STREAM_OPENING_EVENT}\` event is to HTTP clients);
- for every turn of the session (sent on this socket, another one, or over HTTP), on every socket of the session:
  - \`event\` \`{ turnId, id, event, at, data }\` for each durable turn event, with the ids, types and data of
    \`/v1/turns/{turnId}/events\` (\`status\`, \`tool_call_started\`, \`tool_call_finished\`, \`text\`, \`notice\`,
    \`approval_required\`, \`approval_decided\`, \`done\`, \`error\`, \`cancelled\`): lossless;
  - \`status\` \`{ state: "processing", tool, message, turnId }\` when a tool call starts and
    \`{ state: "complete", tool, message, data: { isError, result }, turnId }\` when it ends; a failed one also
    gets \`system\` \`{ code: "tool_error", message }\`;
  - \`text\` \`{ content, turnId, final: true }\`: the answer;
  - \`status\` \`{ state: "complete", message, turnId, status: "completed" | "failed" | "cancelled" }\` at the end;
  - \`text_delta\` \`{ turnId, step, attempt, offset, content }\` while the model writes (live, no id; a socket that
    joins mid-step gets the text so far at offset 0) and \`text_reset\` \`{ turnId, step, attempt }\`: drop the partial
    text of that step (the model call is retried);
  - \`tool_progress\` \`{ turnId, toolCallId, progress, total?, message? }\`: a running tool call's server reported progress (live, no id);
  - \`system\` \`{ code: "llm_retry", message, turnId }\` when an LLM attempt failed and another follows (live, no id);
  - \`system\` \`{ code: "tool_retry", message, turnId }\` when a tool call's next attempt starts (live, no id);
  - \`waiting\` \`{ turnId, behind, status, pendingApprovals, cancelUrl }\` while a turn is queued, when what holds it
    up changes (live, no id; see the SSE \`waiting\` event);
- \`error\` \`{ code, message, turnId? }\` for a refused frame, one of ${WS_ERROR_CODES.map((c) => `\`${c}\``).join(', ')}
  (\`payload_too_large\`: the text is over \`MAX_MESSAGE_CHARS\`; the others as on the HTTP routes). The socket stays open, except
  after \`frame_too_large\`: a frame over \`MAX_MESSAGE_CHARS\` × 6 + 4096 bytes, at least 64 KiB (${WS_DEFAULT_FRAME_LIMIT} bytes with the
  default ${DEFAULT_MAX_MESSAGE_CHARS} characters), is not read; the server sends that error and closes the socket with 1009.

A socket that joins while a turn runs gets its events from the first (or, with \`?lastEventId=<turnId>:<n>\`, after
event \`n\` of that turn). The server sends WebSocket ping frames; a socket that answers nothing (no pong, no
frame) for 45 s is closed.`;
