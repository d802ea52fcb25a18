/**
 * The HTTP and WebSocket contract of the API (ARCHITECTURE.md §9), as zod schemas: the handlers parse
 * requests with them and openapi.ts generates the document from them, so the two cannot drift apart.
 *
 * Schemas only: no Fastify, no I/O. Response schemas describe what the handlers send; they are not
 * used to filter responses (see openapi.ts).
 */
import { z } from 'zod';
import { describeIssues } from '../shared/issues';
import { SESSION_ID_PATTERN } from '../shared/ids';
import { CIRCUIT_STATES, SERVER_STATES, SERVER_TRANSPORTS } from '../shared/tool-types';
// The event types are the workflows' own list: documented and produced cannot drift apart.
import { TOOL_CALL_STATES, TURN_EVENT_TYPES, TURN_STATUSES } from '../shared/turn';
import { HttpError } from './errors';

/** `path: sessionId: must match ...`: where the problem is, then each issue (see src/shared/issues.ts). */
export function describeProblem(where: string, error: z.ZodError): string {
  return `${where}: ${describeIssues(error.issues, '').join('; ')}`;
}

/** Parses a request part; a mismatch is the caller's mistake: 400 `invalid_request`. */
export function parseRequest<S extends z.ZodType>(schema: S, value: unknown, where: string): z.output<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  throw new HttpError(400, 'invalid_request', describeProblem(where, result.error));
}

// ---------------------------------------------------------------------------------------------
// Identifiers and request parts.
// ---------------------------------------------------------------------------------------------

export const SessionId = z
  .string()
  .regex(SESSION_ID_PATTERN, 'must match ^[a-zA-Z0-9_-]{1,64}$')
  .describe('Conversation id, chosen by the client; per user (two users may both use `demo`).');
export const TurnId = z.string().min(1).max(200).describe('Turn id, as returned by `POST /v1/sessions/:sessionId/messages`.');
export const ToolCallId = z
  .string()
  .min(1)
  .max(200)
  .describe('The tool call waiting for a decision (`toolCallId` of the `approval_required` event).');
export const IdempotencyKey = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces')
  .describe('Printable ASCII without spaces. A repeated key (same user and session) returns the same turn with `200` instead of starting a second one.');

export const SessionParams = z.object({ sessionId: SessionId });
export const TurnParams = z.object({ turnId: TurnId });
export const ApprovalParams = z.object({ turnId: TurnId, toolCallId: ToolCallId });
export const MessageHeaders = z.object({ 'Idempotency-Key': IdempotencyKey.optional() });

/** The message body; the longest text is a setting (`MAX_MESSAGE_CHARS`), so the schema is made per app. */
export function messageBody(maxChars?: number) {
  const text = z.string().trim().min(1, 'must not be empty');
  return z
    .object({
      text: (maxChars === undefined ? text : text.max(maxChars, `must be at most ${maxChars} characters`)).describe(
        'The user message: 1 to `MAX_MESSAGE_CHARS` (default 16000) characters, not blank. Longer: `413 payload_too_large`.',
      ),
    })
    .strict();
}
/** POST /v1/sessions/:sessionId/tool-calls: one tool call run through a turn, without the model. */
export const ToolCallBody = z
  .object({
    server: z.string().regex(/^[a-zA-Z0-9_.-]{1,64}$/, 'must be a configured server name').describe('The MCP server, as `GET /v1/tools` lists it.'),
    tool: z.string().min(1, 'must not be empty').max(128, 'must be at most 128 characters').describe("The tool's own name on that server."),
    arguments: z
      .record(z.string(), z.unknown())
      .default({})
      .describe("The call's arguments, checked against the tool's `inputSchema` by the turn (a mismatch is the turn's answer, as for the model)."),
  })
  .strict();

export const ApprovalBody = z.object({ approve: z.boolean().describe('`true` runs the tool call, `false` denies it.') }).strict();
/** The owner's answer to a server's question (an `input_required` event). */
export const InputBody = z
  .object({
    action: z.enum(['accept', 'decline', 'cancel']).describe('`accept` with `content`; `decline` refuses to answer; `cancel` dismisses the question.'),
    content: z
      .record(z.string().max(128), z.union([z.string().max(10_000), z.number(), z.boolean(), z.array(z.string().max(1_000)).max(100)]))
      .optional()
      .describe(
        "With `accept`: the answer, checked against the question's `requestedSchema` (defaults the answer leaves out are filled in). " +
          'Property names are at most 128 characters.',
      ),
  })
  .strict();
export const EventsQuery = z
  .object({
    after: z.coerce
      .number()
      .int()
      .nonnegative()
      .optional()
      .describe('Resume after this event id (alternative to `Last-Event-ID`, which wins when both are sent).'),
    access_token: z
      .string()
      .optional()
      .describe("The caller's JWT, for browsers' `EventSource`, which cannot send headers; redacted from logs. `Authorization` wins when both are sent."),
  })
  .strict();
/** What an authorization server appends to the redirect URI (RFC 6749 §4.1.2). */
export const OAuthCallbackQuery = z.object({
  state: z.string().min(1).max(512).describe('The authorization request this answers (the host made it up; unguessable).'),
  code: z.string().min(1).max(4096).optional().describe('The authorization code, on success.'),
  error: z.string().max(200).optional().describe('Why the authorization server refused (e.g. `access_denied`).'),
  error_description: z.string().max(1000).optional(),
  iss: z.string().max(1000).optional().describe('The issuer (RFC 9207), when the server sends it.'),
});
export const EventsHeaders = z.object({
  'Last-Event-ID': z.string().regex(/^\d+$/).optional().describe('The id of the last event received: the stream resumes after it, without loss or duplicates.'),
});
export const WsQuery = z.object({
  sessionId: SessionId.optional(),
  lastEventId: z
    .string()
    .regex(/^[^:]{1,200}:\d{1,9}$/, 'must be <turnId>:<event id>')
    .optional(),
  access_token: z.string().optional(),
});

// ---------------------------------------------------------------------------------------------
// Responses.
// ---------------------------------------------------------------------------------------------

const DateTime = z.string().meta({ format: 'date-time' });

/** The one error shape of the API: `{ "error": { "code", "message" } }`, never a stack trace. */
export const ErrorBody = z.object({
  error: z.object({
    code: z.string().describe('Stable, machine-readable code, e.g. `not_found`.'),
    message: z.string().describe('For people; never contains secrets or stack traces.'),
  }),
});

export const MessageAccepted = z.object({
  sessionId: z.string(),
  turnId: z.string(),
  position: z.number().int().nonnegative().describe('Turns of the session ahead of this one (0: it runs now).'),
  eventsUrl: z.string().describe('`/v1/turns/{turnId}/events`'),
  statusUrl: z.string().describe('`/v1/turns/{turnId}`'),
});

export const TurnStatusSchema = z.enum(TURN_STATUSES);

export const ToolCallRecord = z.object({
  id: z.string().describe("The model's tool call id."),
  step: z.number().int().min(1),
  name: z.string().describe('The name the LLM sees (`server__tool`).'),
  server: z.string().optional(),
  tool: z.string().optional(),
  arguments: z.unknown().describe('The arguments, as parsed from the model.'),
  state: z
    .enum([...TOOL_CALL_STATES, 'awaiting_approval'])
    .describe('`awaiting_approval`: the call waits for a decision (see `pendingApprovals`).'),
  isError: z.boolean().optional(),
  result: z.string().optional().describe('Result text, truncated for the record.'),
  startedAt: DateTime,
  finishedAt: DateTime.optional(),
});

/** A tool call waiting for a person's decision: what it would do, and until when it waits. */
export const PendingApprovalView = z.object({
  toolCallId: z.string(),
  name: z.string().describe('The name the LLM used (`server__tool`).'),
  server: z.string(),
  tool: z.string(),
  arguments: z.unknown().describe("The call's arguments, redacted as in the audit log when the reader is not the turn's owner."),
  requestedAt: DateTime,
  deadline: DateTime.describe("When the policy's timeout denies the call if nobody decided."),
});

/** A pending approval with the route that decides it. */
export const DecidableApproval = PendingApprovalView.extend({
  decideUrl: z.string().describe('`/v1/turns/{turnId}/approvals/{toolCallId}`'),
});

/**
 * Why a queued turn has not started: the session's turn ahead of it, and what that one waits for. Sent
 * on a queued turn's streams (SSE `waiting`, WebSocket `waiting`) whenever it changes.
 */
export const WaitingView = z.object({
  turnId: z.string().describe('The queued turn.'),
  behind: z.string().describe("The session's turn running now; the queued one starts when it ends."),
  status: z.enum(['running', 'awaiting_approval']).describe('What the turn ahead is doing.'),
  pendingApprovals: z.array(DecidableApproval).describe('Its calls waiting for a decision (empty unless `awaiting_approval`).'),
  cancelUrl: z.string().describe('`/v1/turns/{behind}/cancel`: cancelling the turn ahead lets the queued one start.'),
});
export type WaitingView = z.output<typeof WaitingView>;

/** The SSE event a stream of a turn opens with (see `StreamOpening`). */
export const STREAM_OPENING_EVENT = 'turn';

/**
 * The data of the first event of every SSE stream of a turn (`event: turn`, no `id`): what the API
 * knows of the turn when the stream opens, sent at once. For a turn the API has just accepted (or whose
 * pushed events it holds) that is before the turn's workflow has said anything: the client learns
 * straight away that its stream is open on a turn that exists, without waiting for Temporal. Not
 * durable: it never moves `Last-Event-ID`, and a reconnect gets a new one.
 */
export const StreamOpening = z.object({
  turnId: z.string(),
  sessionId: z.string(),
  status: TurnStatusSchema.describe(
    "The turn's status as the API knows it at that moment (from the events it holds: a turn waiting for a decision may show as `running` until its `approval_required` event follows).",
  ),
  position: z
    .number()
    .int()
    .nonnegative()
    .optional()
    .describe("Turns of the session ahead of it, as the POST answered: only while the turn has sent no event yet (this API accepted it a moment ago)."),
  at: DateTime.describe("The API's time."),
});
export type StreamOpening = z.output<typeof StreamOpening>;

export const TurnView = z.object({
  turnId: z.string(),
  sessionId: z.string(),
  status: TurnStatusSchema,
  text: z.string().optional().describe('The answer, once there is one.'),
  toolCalls: z.array(ToolCallRecord),
  error: z.object({ code: z.string(), message: z.string() }).optional(),
  steps: z.number().int().nonnegative().describe('LLM calls so far.'),
  lastEventId: z.number().int().nonnegative().describe('Id of the newest event of the /events stream (0: none yet).'),
  usage: z
    .object({ promptTokens: z.number().int().nonnegative(), completionTokens: z.number().int().nonnegative(), samplingTokens: z.number().int().nonnegative() })
    .optional()
    .describe("Tokens the turn's model calls used (as the endpoint reported them) and its servers' sampling requests used."),
  pendingApprovals: z.array(PendingApprovalView).optional().describe('Calls waiting for a decision (only while the turn is `awaiting_approval`).'),
});
export type TurnView = z.output<typeof TurnView>;

/** GET /v1/approvals: decisions waiting for the caller, as owner or as an approver role of the tenant. */
/** GET /v1/admin/usage: token usage of the caller's tenant over a period (defaults: today, UTC). */
export const UsageQuery = z
  .object({
    from: z.iso.datetime({ offset: true }).optional().describe('Start (inclusive), ISO 8601; default: 00:00 UTC today.'),
    to: z.iso.datetime({ offset: true }).optional().describe('End (exclusive), ISO 8601; default: now.'),
    groupBy: z
      .enum(['user', 'session', 'tenant'])
      .default('user')
      .describe("`session`: per session, with its owner's id (a session id is its owner's own: two users may use the same one)."),
    userId: z.string().min(1).max(256).optional().describe('Only this user (callers without `usage.read` or the super scope see only themselves).'),
  })
  .strict();
const UsageFigures = {
  turns: z.number().int().nonnegative(),
  summaries: z.number().int().nonnegative().describe("Summarizations of sessions' older messages: their tokens are in the sums, beside the turns'."),
  promptTokens: z.number().int().nonnegative(),
  completionTokens: z.number().int().nonnegative(),
  samplingTokens: z.number().int().nonnegative().describe("Tokens MCP servers' sampling requests used through the host's model."),
  totalTokens: z.number().int().nonnegative(),
};
const Cost = z.object({ amount: z.number().nonnegative(), currency: z.string() });
export const UsageReport = z.object({
  tenant: z.string(),
  from: z.string(),
  to: z.string(),
  groupBy: z.enum(['user', 'session', 'tenant']),
  rows: z.array(
    z.object({
      userId: z.string().optional(),
      sessionId: z.string().optional(),
      model: z.string(),
      ...UsageFigures,
      cost: Cost.optional().describe("From the host config's `prices` for this model; absent when it has none."),
    }),
  ),
  totals: z.object({ ...UsageFigures, cost: z.array(Cost).describe('Per currency.') }),
});

export const ApprovalsQuery = z.object({
  state: z.enum(['pending']).default('pending').describe('Only pending approvals are listed; decided ones are in the turns and the audit log.'),
});
export const ApprovalsInbox = z.object({
  approvals: z.array(
    DecidableApproval.extend({
      turnId: z.string(),
      sessionId: z.string(),
      owner: z.string().describe("The id of the user whose turn it is."),
    }),
  ),
});

/** GET /v1/sessions/:sessionId/messages (`TranscriptMessage` of src/shared/session.ts for the items). */
export const SessionMessages = z.object({
  sessionId: z.string(),
  messages: z
    .array(
      z.object({
        index: z.number().int().nonnegative().describe('Position in the whole conversation; stable.'),
        role: z.enum(['user', 'assistant']),
        content: z.string(),
        turnId: z.string(),
        at: DateTime,
        status: z
          .enum(['queued', ...TurnStatusSchema.options])
          .describe("The turn's outcome; user messages carry it too, so a queued or failed request is visible."),
      }),
    )
    .describe('The retained transcript, oldest first.'),
  summary: z.string().optional().describe('Summary of the older messages the model no longer sees verbatim.'),
  activeTurnId: z.string().optional().describe('The turn running now, if any.'),
  queuedTurnIds: z.array(z.string()).describe('Turns waiting behind the active one, in order.'),
  pendingApprovals: z
    .array(DecidableApproval)
    .optional()
    .describe("The active turn's calls waiting for a decision: the queued turns wait for them too (present while it is `awaiting_approval`)."),
  firstRetainedIndex: z.number().int().nonnegative().describe('Position in the whole conversation of the first message returned.'),
  totalMessages: z.number().int().nonnegative().describe('Messages in the whole conversation, retained or not.'),
});

export const CancelAccepted = z.object({ turnId: z.string(), status: z.literal('cancelling') });
export const ApprovalDecided = z.object({ turnId: z.string(), toolCallId: z.string(), decision: z.enum(['approved', 'rejected']) });
export const InputProvided = z.object({ turnId: z.string(), toolCallId: z.string(), action: z.enum(['accept', 'decline', 'cancel']) });

export const ServerStatusSchema = z.object({
  server: z.string(),
  transport: z.enum(SERVER_TRANSPORTS),
  state: z.enum(SERVER_STATES),
  toolCount: z.number().int().nonnegative(),
  error: z.string().optional().describe('Why the server is unavailable; never includes secrets.'),
  authorizationUrl: z
    .string()
    .optional()
    .describe("An OAuth-protected server whose tools cannot be listed yet: open this to authorize the host's listing (users authorize their own calls on first use)."),
  circuit: z
    .object({
      state: z.enum(CIRCUIT_STATES),
      consecutiveFailures: z.number().int().nonnegative(),
      retryAt: z.string().optional(),
    })
    .optional()
    .describe("The worker's circuit breaker for this server: `open` means calls are refused until `retryAt`."),
});

export const CatalogSchema = z.object({
  tools: z.array(
    z.object({
      name: z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/).describe('The name the LLM sees: `server__tool`, stable across restarts.'),
      server: z.string(),
      tool: z.string(),
      description: z.string().optional(),
      inputSchema: z.record(z.string(), z.unknown()),
      annotations: z
        .object({
          title: z.string(),
          readOnlyHint: z.boolean(),
          destructiveHint: z.boolean(),
          idempotentHint: z.boolean(),
          openWorldHint: z.boolean(),
        })
        .partial()
        .optional(),
    }),
  ),
  servers: z.array(ServerStatusSchema),
});
export const ServersList = z.object({ servers: z.array(ServerStatusSchema) });

export const Health = z.object({
  status: z.enum(['ok', 'degraded', 'down']),
  temporal: z.object({ ok: z.boolean(), error: z.string().optional() }),
  mcp: z
    .object({ ok: z.boolean(), servers: z.array(ServerStatusSchema), error: z.string().optional() })
    .describe("Every MCP server over all workers' reports: `unavailable` if any reporting worker cannot use it."),
  workers: z
    .array(
      z.object({
        worker: z.string().describe("The worker's Temporal identity."),
        reportedAt: z.string(),
        servers: z.array(ServerStatusSchema),
        phase: z.enum(['connecting', 'ready']).optional().describe('`connecting`: still opening its MCP servers (`servers` is empty, `detail` says what it does).'),
        detail: z.string().optional(),
      }),
    )
    .describe('Each worker that reported in its last three intervals, with its own view of the servers.'),
});

const ReadinessCheck = z.object({ ok: z.boolean(), detail: z.string().optional() });
export const Readiness = z.object({
  status: z.enum(['ready', 'not_ready']),
  checks: z.object({
    temporal: ReadinessCheck.describe('The Temporal frontend answers; one failed call is tolerated (`detail` says so), failures for 5 s are not.'),
    bus: ReadinessCheck.optional().describe('With POSTGRES_URL: this replica LISTENs for live text (down for more than 1 s: not ready).'),
    workers: ReadinessCheck.extend({ ready: z.number().int(), connecting: z.number().int() }).describe(
      'Workers that reported within their interval: `ready` ones have connected their MCP servers; at least one is needed.',
    ),
  }),
  pending: z.array(z.string()).describe('What is still missing, one sentence per check; empty when ready.'),
  mcp: z
    .object({ ok: z.boolean(), servers: z.array(ServerStatusSchema), error: z.string().optional() })
    .describe("The MCP servers over all workers' reports: detail only, never a reason to be not ready."),
});
export const Liveness = z.object({
  status: z.literal('live'),
  uptimeSeconds: z.number().int(),
  eventLoopDelayMs: z.number().int().describe('The longest event-loop delay since the previous ask.'),
});

// ---------------------------------------------------------------------------------------------
// WebSocket frames (GET /ws): JSON text frames `{ type, payload }`.
// ---------------------------------------------------------------------------------------------

export const WsMessagePayload = z.object({ text: z.string(), idempotencyKey: IdempotencyKey.optional() }).strict();
export const WsCancelPayload = z.object({ turnId: TurnId }).strict();
export const WsApprovePayload = z.object({ turnId: TurnId, toolCallId: ToolCallId, approve: z.boolean() }).strict();
/** Client frames are told apart by `type` first, so each refusal gets its own code (see routes/websocket.ts). */
export const WsClientFrame = z.object({ type: z.string(), payload: z.unknown().optional() });

export { TURN_EVENT_TYPES };

const frame = <T extends string, P extends z.ZodType>(type: T, payload: P) => z.object({ type: z.literal(type), payload });
const StatusPayload = z.looseObject({ state: z.enum(['processing', 'complete']), message: z.string(), turnId: z.string().optional() });

/**
 * Every `code` of a GET /ws `error` frame: the route's own refusals of a frame, and those of the turn
 * service it shares with the HTTP routes. The OpenAPI text lists them from here.
 */
export const WS_ERROR_CODES = [
  'invalid_json',
  'invalid_message',
  'unknown_type',
  'payload_too_large',
  'frame_too_large',
  'rate_limited',
  'token_budget_exhausted',
  'session_busy',
  'not_found',
  'already_finished',
  'already_decided',
  'unavailable',
  'internal',
] as const;
export const WsErrorCode = z.enum(WS_ERROR_CODES);
export type WsErrorCode = z.output<typeof WsErrorCode>;

export const WsServerFrame = z.discriminatedUnion('type', [
  frame(
    'connection',
    z.object({ state: z.enum(['connected', 'reconnected']), sessionId: z.string(), clientId: z.string(), message: z.string() }),
  ),
  frame('system', z.object({ code: z.string(), message: z.string(), turnId: z.string().optional() })),
  frame('status', StatusPayload),
  frame('text', z.object({ content: z.string(), turnId: z.string(), final: z.literal(true) })),
  frame(
    'event',
    z.object({ turnId: z.string(), id: z.number().int(), event: z.enum(TURN_EVENT_TYPES), at: z.string(), data: z.record(z.string(), z.unknown()) }),
  ),
  frame('text_delta', z.object({ turnId: z.string(), step: z.number().int(), attempt: z.number().int(), offset: z.number().int(), content: z.string() })),
  frame('text_reset', z.object({ turnId: z.string(), step: z.number().int(), attempt: z.number().int(), reason: z.string() })),
  frame('waiting', WaitingView),
  frame(
    'tool_progress',
    z.object({ turnId: z.string(), toolCallId: z.string(), progress: z.number(), total: z.number().optional(), message: z.string().optional() }),
  ),
  frame('pong', z.object({ at: z.string() })),
  frame('approval', z.object({ turnId: z.string(), toolCallId: z.string(), decision: z.enum(['approved', 'rejected']) })),
  frame('error', z.object({ code: WsErrorCode, message: z.string(), turnId: z.string().optional() })),
]);
export type ServerMessage = z.output<typeof WsServerFrame>;
