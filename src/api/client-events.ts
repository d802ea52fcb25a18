/**
 * What a followed turn's items (durable events and live text, see turn-follower.ts) look like to
 * clients: SSE frames for GET /v1/turns/:id/events and the WebSocket's messages (the event itself,
 * then seed 004's view of it). One translation, two wire formats.
 */
import type { LiveChunk } from '../live/chunk';
import type { TurnEvent, TurnState } from '../shared/turn';
import { STREAM_OPENING_EVENT, type ServerMessage, type StreamOpening } from './contract';
import { toolErrorMessage } from './system-messages';
import type { FeedItem } from './turn-follower';

type Delivered = Exclude<FeedItem, { type: 'end' }>;

const text = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const toolName = (e: TurnEvent): string => text(e.data.name) ?? 'unknown';
const failedTool = (e: TurnEvent): boolean => e.type === 'tool_call_finished' && e.data.isError === true;

/** Live chunks carry no event id: Last-Event-ID keeps naming the last durable event. */
function livePayload(c: LiveChunk) {
  if (c.kind === 'progress') {
    return {
      kind: 'progress' as const,
      turnId: c.turnId,
      toolCallId: c.toolCallId ?? '',
      progress: c.progress ?? 0,
      ...(c.total !== undefined ? { total: c.total } : {}),
      ...(c.text ? { message: c.text } : {}),
    };
  }
  if (c.kind === 'reset') return { kind: 'reset' as const, turnId: c.turnId, step: c.step, attempt: c.attempt, reason: 'llm_retry' };
  if (c.kind === 'notice' && c.toolCallId !== undefined) {
    return { kind: 'notice' as const, turnId: c.turnId, toolCallId: c.toolCallId, attempt: c.attempt, code: TOOL_RETRY_NOTICE, message: c.text };
  }
  if (c.kind === 'notice') return { kind: 'notice' as const, turnId: c.turnId, step: c.step, attempt: c.attempt, code: LLM_RETRY_NOTICE, message: c.text };
  return { kind: 'delta' as const, turnId: c.turnId, step: c.step, attempt: c.attempt, offset: c.offset, text: c.text };
}

/** The code of the live notice an LLM attempt's failure sends (another attempt follows). */
export const LLM_RETRY_NOTICE = 'llm_retry';
/** The code of the live notice a tool call's next attempt sends as it starts (the one before was lost or failed). */
export const TOOL_RETRY_NOTICE = 'tool_retry';

/**
 * The frame every SSE stream of a turn opens with: the turn as `state` shows it (the hub's view or a
 * read), without an `id`, so it takes none of the durable events' ids and leaves `Last-Event-ID` alone.
 */
export function sseOpening(turnId: string, state: Pick<TurnState, 'sessionId' | 'status'>, position?: number): string {
  const data: StreamOpening = {
    turnId,
    sessionId: state.sessionId,
    status: state.status,
    ...(position !== undefined ? { position } : {}),
    at: new Date().toISOString(),
  };
  return `event: ${STREAM_OPENING_EVENT}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** One SSE frame: durable events with `id`, live text (`text_delta` / `text_reset`) and `waiting` without. */
export function sseFrame(turnId: string, item: Delivered): string {
  if (item.type === 'waiting') return `event: waiting\ndata: ${JSON.stringify(item.waiting)}\n\n`;
  if (item.type === 'live') {
    const { kind, ...data } = livePayload(item.chunk);
    // A live notice has the durable notice's name and shape (code, message), but no id.
    const name = kind === 'notice' ? 'notice' : kind === 'progress' ? 'tool_progress' : `text_${kind}`;
    return `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
  }
  const e = item.event;
  const data: Record<string, unknown> = { ...e.data, turnId, at: e.at };
  if (failedTool(e)) data['message'] = toolErrorMessage(String(e.data['name'] ?? 'a'), e.data['result']);
  return `id: ${e.id}\nevent: ${e.type}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** The WebSocket messages of one item: every durable event as `event`, plus the seed's status/text/system. */
export function wsMessages(turnId: string, item: Delivered): ServerMessage[] {
  if (item.type === 'waiting') return [{ type: 'waiting', payload: item.waiting }];
  if (item.type === 'live') {
    const p = livePayload(item.chunk);
    if (p.kind === 'progress') {
      const { kind: _kind, ...payload } = p;
      return [{ type: 'tool_progress', payload }];
    }
    if (p.kind === 'notice') return [{ type: 'system', payload: { code: p.code, message: p.message, turnId: p.turnId } }];
    return p.kind === 'reset'
      ? [{ type: 'text_reset', payload: { turnId: p.turnId, step: p.step, attempt: p.attempt, reason: p.reason } }]
      : [{ type: 'text_delta', payload: { turnId: p.turnId, step: p.step, attempt: p.attempt, offset: p.offset, content: p.text } }];
  }
  const e = item.event;
  const out: ServerMessage[] = [{ type: 'event', payload: { turnId, id: e.id, event: e.type, at: e.at, data: e.data } }];
  const tool = toolName(e);
  switch (e.type) {
    case 'tool_call_started':
      out.push({ type: 'status', payload: { state: 'processing', tool, message: `Using ${tool}`, turnId } });
      break;
    case 'tool_call_finished': {
      const isError = failedTool(e);
      const result = text(e.data.result) ?? '';
      out.push({
        type: 'status',
        payload: { state: 'complete', tool, message: isError ? `${tool} failed` : `${tool} finished`, data: { isError, result }, turnId },
      });
      if (isError) out.push({ type: 'system', payload: { code: 'tool_error', message: toolErrorMessage(tool, e.data.result), turnId } });
      break;
    }
    case 'text':
      out.push({ type: 'text', payload: { content: text(e.data.text) ?? '', turnId, final: true } });
      break;
    case 'done':
      out.push({ type: 'status', payload: { state: 'complete', message: 'Done', turnId, status: 'completed' } });
      break;
    case 'cancelled':
      out.push({ type: 'status', payload: { state: 'complete', message: 'Cancelled', turnId, status: 'cancelled' } });
      break;
    case 'error':
      out.push({
        type: 'status',
        payload: { state: 'complete', message: text(e.data.message) ?? 'The request failed.', turnId, status: 'failed', ...(text(e.data.code) ? { code: e.data.code } : {}) },
      });
      break;
    default:
      break;
  }
  return out;
}
