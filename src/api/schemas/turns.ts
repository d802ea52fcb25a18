/** Turns: the requests that start, follow and decide them, and the views of them the API answers with. */
import { z } from 'zod';
import { TOOL_CALL_STATES } from '../../shared/turn';
import { DateTime, IdempotencyKey, SessionId, ToolCallId, TurnId, TurnStatusSchema } from './common';

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


export const MessageAccepted = z.object({
  sessionId: z.string(),
  turnId: z.string(),
  position: z.number().int().nonnegative().describe('Turns of the session ahead of this one (0: it runs now).'),
  eventsUrl: z.string().describe('`/v1/turns/{turnId}/events`'),
  statusUrl: z.string().describe('`/v1/turns/{turnId}`'),
});

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

export const CancelAccepted = z.object({ turnId: z.string(), status: z.literal('cancelling') });
export const ApprovalDecided = z.object({ turnId: z.string(), toolCallId: z.string(), decision: z.enum(['approved', 'rejected']) });
export const InputProvided = z.object({ turnId: z.string(), toolCallId: z.string(), action: z.enum(['accept', 'decline', 'cancel']) });
