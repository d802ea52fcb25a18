/**
 * The record of one turn as the outside world sees it: its state, its numbered events, its tool calls
 * and the view the progress query returns. Pure: the turn workflow drives it, and the clock is passed
 * in (the workflow's clock is deterministic, tests pass their own), so it replays identically.
 */
import { truncate } from './host-loop';
import type { ToolOutcome } from '../shared/tool-types';
import type { LlmResponse, ToolCallRecord, TurnError, TurnEvent, TurnEventType, TurnState, TurnUsage } from '../shared/turn';

/** How much of a tool result the turn record keeps (the LLM gets up to maxToolResultChars). */
export const RECORD_RESULT_CHARS = 2_000;

/** Which provider and model answered an LLM step (docs/decisions/0042): in the event the answer leads to. */
export interface AnsweredBy {
  provider?: string;
  model?: string;
}

/** The provider and model an answer names (none in results recorded before native providers). */
export function whoAnswered(response: Pick<LlmResponse, 'provider' | 'model'>): AnsweredBy {
  return { ...(response.provider !== undefined ? { provider: response.provider } : {}), ...(response.model !== undefined ? { model: response.model } : {}) };
}

export interface TurnRecord {
  /** The live state; the workflow returns it as its result and fails with it as the failure's detail. */
  readonly state: TurnState;
  emit(type: TurnEventType, data: Record<string, unknown>): void;
  /** The progress query's answer: the state with only the events after `afterEventId`. */
  view(afterEventId?: number): TurnState;
  /** A tool call of `step` begins: recorded as running, announced with `tool_call_started`. */
  startToolCall(call: Omit<ToolCallRecord, 'state' | 'startedAt'>): ToolCallRecord;
  /** The call ended (a result, an error, a denial): recorded and announced with `tool_call_finished`. */
  finishToolCall(record: ToolCallRecord, outcome: ToolOutcome): void;
  /** Adds what a model call (or a server's sampling) used to the turn's totals. */
  addUsage(usage: Partial<TurnUsage> | undefined): void;
  /** The answer: `text`, then `done`; `by` (the last LLM step's provider and model) goes in the `text` event. */
  complete(text: string, by?: AnsweredBy): void;
  fail(error: TurnError): void;
  cancel(): void;
}

export function createTurnRecord(
  init: { turnId: string; sessionId: string; owner?: { id: string; tenant: string }; userText?: string },
  now: () => string,
  /** Told of each event as it is emitted (the workflow hands it to a sink that pushes it to the API). */
  onEmit?: (event: TurnEvent) => void,
): TurnRecord {
  const state: TurnState = {
    turnId: init.turnId,
    sessionId: init.sessionId,
    ...(init.owner ? { owner: init.owner } : {}),
    ...(init.userText !== undefined ? { userText: init.userText } : {}),
    status: 'running',
    toolCalls: [],
    events: [],
    steps: 0,
  };
  const emit = (type: TurnEventType, data: Record<string, unknown>): void => {
    const event: TurnEvent = { id: state.events.length + 1, type, at: now(), data };
    state.events.push(event);
    onEmit?.(event);
  };
  return {
    state,
    emit,
    view: (afterEventId) => ({ ...state, events: afterEventId ? state.events.filter((e) => e.id > afterEventId) : state.events }),
    startToolCall(call) {
      const record: ToolCallRecord = { ...call, state: 'running', startedAt: now() };
      state.toolCalls.push(record);
      emit('tool_call_started', { toolCallId: record.id, name: record.name, server: record.server, tool: record.tool, arguments: record.arguments });
      return record;
    },
    finishToolCall(record, outcome) {
      record.state = outcome.isError ? 'failed' : 'completed';
      record.isError = outcome.isError;
      record.result = truncate(outcome.text, RECORD_RESULT_CHARS);
      record.finishedAt = now();
      emit('tool_call_finished', { toolCallId: record.id, name: record.name, isError: outcome.isError, result: record.result });
    },
    addUsage(usage) {
      if (!usage) return;
      const total = (state.usage ??= { promptTokens: 0, completionTokens: 0, samplingTokens: 0 });
      total.promptTokens += usage.promptTokens ?? 0;
      total.completionTokens += usage.completionTokens ?? 0;
      total.samplingTokens += usage.samplingTokens ?? 0;
    },
    complete(text, by) {
      state.status = 'completed';
      state.text = text;
      emit('text', { text, ...by });
      emit('done', { status: 'completed' });
    },
    fail(error) {
      state.status = 'failed';
      state.error = error;
      emit('error', { ...error });
    },
    cancel() {
      state.status = 'cancelled';
      for (const a of state.approvals ?? []) if (a.state === 'pending') a.state = 'rejected';
      emit('cancelled', { status: 'cancelled' });
    },
  };
}
