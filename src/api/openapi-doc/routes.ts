/**
 * One schema per route. Security (bearer JWT) is added by `registerOpenApi` (../openapi.ts) from the
 * URL, the same rule as the auth hook of app.ts, so a route without a schema is documented correctly as well.
 */
import type { FastifySchema } from 'fastify';
import {
  ApprovalBody,
  ApprovalDecided,
  ApprovalParams,
  ApprovalsInbox,
  ApprovalsQuery,
  CancelAccepted,
  CatalogSchema,
  EventsHeaders,
  EventsQuery,
  Health,
  InputBody,
  InputProvided,
  McpMessages,
  Liveness,
  MessageAccepted,
  messageBody,
  MessageHeaders,
  OAuthCallbackQuery,
  Readiness,
  ServerParams,
  ServerReconnected,
  ServersList,
  SessionInfo,
  SessionList,
  SessionMessages,
  SessionParams,
  SessionsQuery,
  SessionTitleBody,
  Suggestions,
  STREAM_OPENING_EVENT,
  ToolCallBody,
  TurnParams,
  TurnView,
  UsageQuery,
  UsageReport,
} from '../contract';
import { errors, fromZod, type JsonSchema } from './parts';
import { SSE_EVENT_SCHEMA, SSE_EVENT_TYPES, SSE_EVENTS, WS_PROTOCOL } from './streams';

const accepted: JsonSchema = {
  ...fromZod(MessageAccepted),
  headers: { Location: { type: 'string', description: 'The turn: `/v1/turns/{turnId}`.' } },
};
const MessageBody = messageBody();
const CONFLICT_409 = '`session_busy`: too many messages already waiting in this session; or `session_deleted`: its owner deleted the session, which takes no more messages (send to a new session id).';
const UNAVAILABLE_AFTER_START_503 =
  '`unavailable`: the workflow service (Temporal) cannot be reached; try again shortly. The start may have reached it before its answer was lost: send again with the same `Idempotency-Key` (the same turn comes back, never a second one).';
const NOT_OWNED_404 = '`not_found`: the caller has no session under that id (never had one, deleted it, or it is another user\'s: indistinguishable by design).';

export const routeSchemas = {
  postMessage: {
    operationId: 'postMessage',
    summary: 'Send a message',
    description:
      "Adds the message to the caller's session (created by its first message) as a turn: a durable workflow that gathers context, " +
      'calls the LLM with the tools the caller may use and runs the tool calls, after the turns queued before it. ' +
      'Answers at once with the turn id; follow the turn on `eventsUrl` (SSE) or `statusUrl`. Limited per user and per tenant (`429`).',
    tags: ['sessions'],
    params: fromZod(SessionParams, 'input'),
    headers: fromZod(MessageHeaders, 'input'),
    body: fromZod(MessageBody, 'input'),
    response: {
      202: { ...accepted, description: 'The turn was started.' },
      200: { ...accepted, description: 'A repeated `Idempotency-Key`: the turn started by the first request.' },
      ...errors([400, 401, 409, 413, 415, 429, 503], { 409: CONFLICT_409, 503: UNAVAILABLE_AFTER_START_503 }),
    },
  },
  postToolCall: {
    operationId: 'postToolCall',
    summary: 'Run one tool call through a turn',
    description:
      "Runs one tool of a configured MCP server as a turn of the caller's session, without the model: the same policy check (a tool the caller " +
      'may not use is denied and audited), approval, argument validation against its `inputSchema`, idempotency key and audit as a call the model planned. ' +
      "The turn's answer is the tool's result (`Error: ...` when the call failed or was refused), and the session's transcript records it. " +
      'A server or tool that is not configured now answers `400 unknown_tool`. Limited like messages (`429`); same `Idempotency-Key` rule.',
    tags: ['sessions'],
    params: fromZod(SessionParams, 'input'),
    headers: fromZod(MessageHeaders, 'input'),
    body: fromZod(ToolCallBody, 'input'),
    response: {
      202: { ...accepted, description: 'The turn was started.' },
      200: { ...accepted, description: 'A repeated `Idempotency-Key`: the turn started by the first request.' },
      ...errors([400, 401, 409, 415, 429, 503], { 400: '`invalid_request` (a bad body) or `unknown_tool`.', 409: CONFLICT_409, 503: UNAVAILABLE_AFTER_START_503 }),
    },
  },
  listSessions: {
    operationId: 'listSessions',
    summary: 'Your sessions',
    description:
      "The caller's sessions (never another user's), newest first, each with its newest message and when it was written; " +
      'paged: pass `nextCursor` as `cursor` for the next page. The list comes from the workflow service\'s visibility store, ' +
      'which lags a moment behind: a session started a second ago may not be listed yet.',
    tags: ['sessions'],
    querystring: fromZod(SessionsQuery, 'input'),
    response: {
      200: { ...fromZod(SessionList), description: 'A page of sessions.' },
      ...errors([400, 401, 503], { 400: '`invalid_request`: a bad `limit`, an unknown query parameter, or a `cursor` this list did not return.' }),
    },
  },
  getSession: {
    operationId: 'getSession',
    summary: 'A session',
    description: "One session of the caller as the list shows it (without its last message): its title, first and latest message times. `404` for a session the caller does not have or deleted.",
    tags: ['sessions'],
    params: fromZod(SessionParams, 'input'),
    response: {
      200: { ...fromZod(SessionInfo), description: 'The session.' },
      ...errors([400, 401, 404, 503], { 404: NOT_OWNED_404 }),
    },
  },
  renameSession: {
    operationId: 'renameSession',
    summary: 'Rename a session',
    description: "Sets the title of one of the caller's sessions (shown by the list and the session's reads instead of nothing). Only its owner may.",
    tags: ['sessions'],
    params: fromZod(SessionParams, 'input'),
    body: fromZod(SessionTitleBody, 'input'),
    response: {
      200: { ...fromZod(SessionInfo), description: 'Renamed: the session with its new title.' },
      ...errors([400, 401, 404, 415, 503], { 400: '`invalid_request`: a bad session id, or a title that is missing, blank, over 200 characters or not one line; `invalid_json`.', 404: NOT_OWNED_404 }),
    },
  },
  deleteSession: {
    operationId: 'deleteSession',
    summary: 'Delete a session',
    description:
      "Deletes one of the caller's sessions for the caller: it leaves the list, its reads answer `404` and a message sent to it `409 session_deleted`; the id is not reused. " +
      "Its turns' workflows and their histories stay in Temporal (for audit and the retention period): this hides the session, it does not erase it. Only its owner may.",
    tags: ['sessions'],
    params: fromZod(SessionParams, 'input'),
    response: {
      204: { description: 'Deleted.', type: 'null' },
      ...errors([400, 401, 404, 503], { 404: NOT_OWNED_404 }),
    },
  },
  listMessages: {
    operationId: 'listMessages',
    summary: "A session's messages",
    description:
      'The conversation of one session of the caller: its title, its retained messages, the summary of older ones, and the turns running or queued. ' +
      '`404` when the caller has no session under that id (or deleted it).',
    tags: ['sessions'],
    params: fromZod(SessionParams, 'input'),
    response: {
      200: { ...fromZod(SessionMessages), description: 'The conversation.' },
      ...errors([400, 401, 404, 503]),
    },
  },
  getTurn: {
    operationId: 'getTurn',
    summary: 'A turn',
    description:
      "The turn's status, answer, tool calls (a call waiting for a decision shows as `awaiting_approval`, and `pendingApprovals` lists it with its deadline) and error. " +
      "The turn's owner sees it, and so does a role in `approval.approverRoles` of the same tenant once the turn asked for a decision (with tool arguments redacted as in the audit log); anyone else gets `404`.",
    tags: ['turns'],
    params: fromZod(TurnParams, 'input'),
    response: {
      200: { ...fromZod(TurnView), description: 'The turn.' },
      ...errors([400, 401, 404, 414, 503]),
    },
  },
  turnMcpMessages: {
    operationId: 'turnMcpMessages',
    summary: "A turn's MCP messages",
    description:
      "For debugging: the MCP messages of the turn's tool calls in JSON-RPC shape, rebuilt from the turn's record (the wire messages are not kept), redacted " +
      "as in the audit log whoever reads: each `tools/call` sent and its result as the model saw it, each `elicitation/create` a server sent " +
      'and the action the user answered with. A call refused before it reached its server (rejected or unanswered approval) is left out. Readable by whoever may read the turn.',
    tags: ['turns'],
    params: fromZod(TurnParams, 'input'),
    response: {
      200: { ...fromZod(McpMessages), description: 'The messages.' },
      ...errors([400, 401, 404, 414, 503]),
    },
  },
  turnEvents: {
    operationId: 'turnEvents',
    summary: "A turn's events (SSE)",
    description: SSE_EVENTS,
    tags: ['turns'],
    params: fromZod(TurnParams, 'input'),
    querystring: fromZod(EventsQuery, 'input'),
    headers: fromZod(EventsHeaders, 'input'),
    response: {
      200: {
        description: `The event stream (\`text/event-stream\`): the events ${SSE_EVENT_TYPES.map((t) => `\`${t}\``).join(', ')}, as in the table above.`,
        content: {
          'text/event-stream': {
            // Before OpenAPI 3.2 (`itemSchema`), a text/event-stream schema describes one event as an
            // SSE parser delivers it: the reading of tools that check streams against it (schemathesis).
            schema: SSE_EVENT_SCHEMA,
            example:
              `retry: 1000\n\nevent: ${STREAM_OPENING_EVENT}\ndata: {"turnId":"turn-demo-k1","sessionId":"demo","status":"running","position":1,"at":"2026-01-01T00:00:00.000Z"}\n\n` +
              'id: 1\nevent: status\ndata: {"status":"running","phase":"queued","turnId":"turn-demo-k1","at":"2026-01-01T00:00:00.010Z"}\n\n',
          },
        },
      },
      ...errors([400, 401, 404, 414, 503]),
    },
  },
  cancelTurn: {
    operationId: 'cancelTurn',
    summary: 'Cancel a turn',
    description:
      'Aborts the LLM request, cancels the MCP call in flight (the server gets `notifications/cancelled`) and starts no further tool call; ' +
      'the turn ends `cancelled` with a `cancelled` event.',
    tags: ['turns'],
    params: fromZod(TurnParams, 'input'),
    response: {
      202: {
        description: 'Cancellation requested.',
        ...fromZod(CancelAccepted),
      },
      ...errors([400, 401, 404, 409, 414, 503], { 409: '`already_finished`: the turn has already ended.' }),
    },
  },
  decideApproval: {
    operationId: 'decideApproval',
    summary: 'Approve or deny a tool call',
    description:
      "Decides a tool call the policy holds for a human (`approval_required` event). The turn's owner or a role in `approval.approverRoles` " +
      'of the same tenant may decide; anyone else, or a call that is not pending, gets `404`. ' +
      'A request shown by the live events a moment before the turn recorded it (its worker stopped in between) is waited for, up to 30 s; past that `503`: send the decision again.',
    tags: ['turns'],
    params: fromZod(ApprovalParams, 'input'),
    body: fromZod(ApprovalBody, 'input'),
    response: {
      200: {
        description: 'Decided.',
        ...fromZod(ApprovalDecided),
      },
      ...errors([400, 401, 404, 409, 414, 415, 503], { 409: '`already_decided`: the tool call was already decided.' }),
    },
  },
  provideInput: {
    operationId: 'provideInput',
    summary: "Answer a server's question",
    description:
      'A tool call whose server asked the user something (`input_required` event, with `message` and `requestedSchema`) waits for this. ' +
      'The event\'s `mode` says what kind of question it is: `form` (or absent) wants `content` for the schema; `url` asks the user to open ' +
      '`url` (`accept` once they have, no content); `sampling` asks whether the server may use the host\'s model for the request in `message`. ' +
      "Only the turn's owner answers. An accepted answer must satisfy the schema (`400 invalid_input` says where it does not); the call is " +
      'then issued again with the answer. A call that asks nothing, or an answered one, gets `404`. A question shown by the live events a ' +
      'moment before the turn recorded it (its worker stopped in between) is waited for, up to 30 s; past that `503`: send the answer again.',
    tags: ['turns'],
    params: fromZod(ApprovalParams, 'input'),
    body: fromZod(InputBody, 'input'),
    response: {
      200: { description: 'Answered: the call runs again.', ...fromZod(InputProvided) },
      ...errors([400, 401, 404, 414, 415, 503]),
    },
  },
  listApprovals: {
    operationId: 'listApprovals',
    summary: 'Approvals inbox',
    description:
      "Tool calls waiting for a decision the caller may take: those of the caller's own turns and, for a role in `approval.approverRoles`, " +
      "every turn of the caller's tenant; soonest deadline first. Arguments of other users' calls are redacted as in the audit log. " +
      'Decide with `POST decideUrl`.',
    tags: ['turns'],
    querystring: fromZod(ApprovalsQuery, 'input'),
    response: {
      200: { ...fromZod(ApprovalsInbox), description: 'The pending approvals.' },
      ...errors([400, 401, 503]),
    },
  },
  usage: {
    operationId: 'getUsage',
    summary: 'Token usage',
    description:
      "Tokens the tenant's turns (and its sessions' summaries of older messages) used over a period (default: today, UTC), by user, by session or for the " +
      'whole tenant, per model, with cost where the host config prices the model. The whole tenant needs the `usage.read` scope (or the policy\'s super ' +
      'scope); other callers see only their own turns and sessions. ' +
      'The same figures decide the daily budgets (`budgets` in the host config): past one, new messages get `429 token_budget_exhausted`.',
    tags: ['usage'],
    querystring: fromZod(UsageQuery, 'input'),
    response: {
      200: { ...fromZod(UsageReport), description: 'Usage per group and model, and totals.' },
      ...errors([400, 401, 403, 404, 503]),
    },
  },
  listTools: {
    operationId: 'listTools',
    summary: 'Tools',
    description: "The tools the caller's model would be offered (`server__tool` names, each with its server's tool name and input schema; filtered by the tool policy as in a turn) and each server's state.",
    tags: ['catalog'],
    response: {
      200: { ...fromZod(CatalogSchema), description: 'The catalog.' },
      ...errors([401, 503]),
    },
  },
  listServers: {
    operationId: 'listServers',
    summary: 'MCP servers',
    description: 'Each configured MCP server: `connected`, `unavailable` (with a reason) or `disabled`, and its circuit breaker.',
    tags: ['catalog'],
    response: {
      200: { ...fromZod(ServersList), description: 'The servers.' },
      ...errors([401, 503]),
    },
  },
  reconnectServer: {
    operationId: 'reconnectServer',
    summary: 'Reconnect an MCP server',
    description:
      "Has a worker list the MCP servers again now, whatever the catalog's cache: a server that is down is connected on the way (every such server, " +
      "on the worker that answers; other workers reconnect on their next use). Answers the server's state afterwards: still `unavailable` (with the reason) " +
      "if it cannot be reached. An open circuit breaker stays open until its `retryAt`. Counts against the caller's message rate limit.",
    tags: ['catalog'],
    params: fromZod(ServerParams, 'input'),
    response: {
      200: { ...fromZod(ServerReconnected), description: "The server's state after listing it again." },
      ...errors([400, 401, 404, 429, 503], { 400: '`invalid_request`: a server name no config could hold (empty, or over 100 characters).' }),
    },
  },
  listSuggestions: {
    operationId: 'listSuggestions',
    summary: 'Suggested messages',
    description:
      "Messages the model in use answers, for a client to offer when a conversation is empty. With the demo model (`npm start` without a model of your own) " +
      "they are its rules' examples (each script's `example`, checked to match the script); with a real model the list is empty.",
    tags: ['catalog'],
    response: {
      200: { ...fromZod(Suggestions), description: 'The suggestions (possibly none).' },
      ...errors([401]),
    },
  },
  oauthCallback: {
    operationId: 'oauthCallback',
    summary: 'OAuth callback',
    description:
      "Where an MCP server's authorization server sends the user's browser back after consent (the redirect URI, `OAUTH_REDIRECT_URL`). No token: the `state` names the authorization. The code is stored (sealed) for the worker, which exchanges it on the tool call's next attempt. Answers a short HTML page.",
    tags: ['oauth'],
    querystring: fromZod(OAuthCallbackQuery, 'input'),
    response: {
      200: { description: 'Authorization recorded (or its refusal): the page says which.', content: { 'text/html': { schema: { type: 'string' } } } },
      400: { description: 'Unknown, expired or malformed authorization.', content: { 'text/html': { schema: { type: 'string' } } } },
    },
  },
  healthz: {
    operationId: 'healthz',
    summary: 'Health',
    description:
      "For load balancers; no token needed, and it starts no workflow: the MCP part comes from the workers' periodic reports. `degraded` when an MCP server is down on some worker or no worker has reported (or all are still connecting their servers: `mcp.error` says so). A summary kept for compatibility: probes should use `/healthz/ready` and `/healthz/live`.",
    tags: ['health'],
    response: {
      200: { ...fromZod(Health), description: '`ok` or `degraded`.' },
      503: { ...fromZod(Health), description: '`down`: Temporal is unreachable.' },
    },
  },
  healthzReady: {
    operationId: 'healthzReady',
    summary: 'Readiness',
    description:
      "For load balancers and orchestrators deciding whether to send traffic here; no token, no workflow. Ready when Temporal answers (one failed call is tolerated; failures for 5 s are not), this replica LISTENs on the live-text bus (with POSTGRES_URL) and at least one worker has reported within its interval with its MCP servers connected. `pending` says what is missing (e.g. a worker still connecting its servers); the MCP servers' states are detail only.",
    tags: ['health'],
    response: {
      200: { ...fromZod(Readiness), description: '`ready`.' },
      503: { ...fromZod(Readiness), description: '`not_ready`, with `pending`.' },
    },
  },
  healthzLive: {
    operationId: 'healthzLive',
    summary: 'Liveness',
    description: 'The process is up and its event loop turns (restart it when this stops answering). Checks nothing else, so a Temporal or database outage never gets a healthy replica restarted.',
    tags: ['health'],
    response: {
      200: { ...fromZod(Liveness), description: '`live`.' },
    },
  },
  websocket: {
    operationId: 'websocket',
    summary: 'WebSocket',
    description: WS_PROTOCOL,
    tags: ['realtime'],
    response: {
      101: { description: 'Switching Protocols: the socket is open.', type: 'null' },
      ...errors([400, 401, 426], { 426: '`upgrade_required`: a plain GET; open a WebSocket.' }),
    },
  },
} satisfies Record<string, FastifySchema>;
