/** GET /ws: JSON text frames `{ type, payload }` each way. */
import { z } from 'zod';
import { TURN_EVENT_TYPES } from '../../shared/turn';
import { IdempotencyKey, ToolCallId, TurnId } from './common';
import { WaitingView } from './turns';

export const WsMessagePayload = z.object({ text: z.string(), idempotencyKey: IdempotencyKey.optional() }).strict();
export const WsCancelPayload = z.object({ turnId: TurnId }).strict();
export const WsApprovePayload = z.object({ turnId: TurnId, toolCallId: ToolCallId, approve: z.boolean() }).strict();
/** Client frames are told apart by `type` first, so each refusal gets its own code (see routes/websocket.ts). */
export const WsClientFrame = z.object({ type: z.string(), payload: z.unknown().optional() });


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
  'session_deleted',
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
