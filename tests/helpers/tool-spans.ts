/**
 * When each tool call of a turn ran, read from the turn's history alone: a regular activity from its
 * scheduled, started and closing events; a local activity from its marker, whose data carries the
 * times the worker scheduled and finished it. Calls are named by their summary ("server: tool").
 */
import { defaultPayloadConverter } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';

type History = temporal.api.history.v1.IHistory;
type Event = temporal.api.history.v1.IHistoryEvent;
type Timestamp = { seconds?: unknown; nanos?: number | null } | null | undefined;

export interface ToolSpan {
  /** "server: tool", as the turn names the call. */
  summary: string;
  kind: 'activity' | 'local';
  scheduledMs: number;
  /** A regular activity's start (a local one starts in the worker as soon as it is scheduled). */
  startedMs: number;
  finishedMs: number;
  /** The workflow task completion that sent the activity out (regular) or recorded its marker (local). */
  workflowTaskCompletedEventId: number;
}

function ms(t: Timestamp): number {
  return Number(t?.seconds ?? 0) * 1000 + Math.floor((t?.nanos ?? 0) / 1e6);
}

function summaryOf(e: Event): string {
  const payload = e.userMetadata?.summary;
  return payload ? String(defaultPayloadConverter.fromPayload(payload)) : '';
}

const CLOSING = ['activityTaskCompletedEventAttributes', 'activityTaskFailedEventAttributes', 'activityTaskTimedOutEventAttributes', 'activityTaskCanceledEventAttributes'] as const;

/** Every callTool of the history, regular or local, in the order the history records them. */
export function toolSpans(history: History): ToolSpan[] {
  const events = history.events ?? [];
  const bySchedule = (id: number, pick: (e: Event) => { scheduledEventId?: unknown } | null | undefined) =>
    events.find((e) => Number(pick(e)?.scheduledEventId ?? -1) === id);
  const spans: ToolSpan[] = [];
  for (const e of events) {
    const scheduled = e.activityTaskScheduledEventAttributes;
    if (scheduled?.activityType?.name === 'callTool') {
      const id = Number(e.eventId);
      const started = bySchedule(id, (x) => x.activityTaskStartedEventAttributes);
      const closed = CLOSING.map((k) => bySchedule(id, (x) => x[k])).find((x) => x !== undefined);
      spans.push({
        summary: summaryOf(e),
        kind: 'activity',
        scheduledMs: ms(e.eventTime),
        startedMs: started ? ms(started.eventTime) : Number.NaN,
        finishedMs: closed ? ms(closed.eventTime) : Number.NaN,
        workflowTaskCompletedEventId: Number(scheduled.workflowTaskCompletedEventId),
      });
    }
    const marker = e.markerRecordedEventAttributes;
    const data = marker?.markerName === 'core_local_activity' ? marker.details?.['data']?.payloads?.[0] : undefined;
    if (marker && data) {
      const la = defaultPayloadConverter.fromPayload<{ activity_type: string; original_schedule_time: Timestamp; complete_time: Timestamp }>(data);
      if (la.activity_type !== 'callTool') continue;
      spans.push({
        summary: summaryOf(e),
        kind: 'local',
        scheduledMs: ms(la.original_schedule_time),
        startedMs: ms(la.original_schedule_time),
        finishedMs: ms(la.complete_time),
        workflowTaskCompletedEventId: Number(marker.workflowTaskCompletedEventId),
      });
    }
  }
  return spans;
}

/** The one span named `summary`; fails loudly when there is none or several. */
export function spanOf(spans: readonly ToolSpan[], summary: string): ToolSpan {
  const found = spans.filter((s) => s.summary === summary);
  if (found.length !== 1) throw new Error(`expected one tool call "${summary}", found ${found.length} in ${spans.map((s) => s.summary).join(', ')}`);
  return found[0] as ToolSpan;
}

/** The patch markers the history records, by patch id. */
export function patchIds(history: History): string[] {
  return (history.events ?? []).flatMap((e) => {
    const marker = e.markerRecordedEventAttributes;
    const id = marker?.markerName === 'core_patch' ? marker.details?.['patch-data']?.payloads?.[0] : undefined;
    return id ? [String((defaultPayloadConverter.fromPayload<{ id?: string }>(id)).id)] : [];
  });
}
