/**
 * Where a durable turn spends its time, read back from its workflow history. Every instant between
 * WorkflowExecutionStarted and WorkflowExecutionCompleted is attributed to the most specific thing in
 * progress, by priority:
 *
 *   activity running   ActivityTaskStarted → closed: the LLM / MCP work itself, plus the worker's
 *                      own overhead inside the activity (payload conversion, heartbeats)
 *   activity queued    ActivityTaskScheduled → Started: matching and dispatch to a worker poller
 *   workflow task      WorkflowTaskStarted → Completed: the worker runs workflow code and sends its
 *                      commands back (includes the server persisting the completion)
 *   workflow queued    WorkflowTaskScheduled → Started: matching and dispatch to a workflow poller
 *   other              nothing in flight: server bookkeeping between events
 *
 * The client sees more than the history span: the StartWorkflowExecution RPC before the first event
 * and the delivery of the result (long poll) after the last one. That difference is reported too.
 */
import type { WorkflowHandle } from '@temporalio/client';
import { temporal } from '@temporalio/proto';

const E = temporal.api.enums.v1.EventType;

export const CATEGORIES = ['activityRunning', 'activityQueued', 'workflowTask', 'workflowQueued', 'other'] as const;
export type Category = (typeof CATEGORIES)[number];

export interface TurnBreakdown {
  /** WorkflowExecutionStarted → WorkflowExecutionCompleted, in ms. */
  spanMs: number;
  byCategory: Record<Category, number>;
  workflowTasks: number;
  activities: number;
  /** Local activities (their markers in history). */
  localActivities: number;
  historyEvents: number;
  /** Encoded size of the whole history (payloads included). */
  historyBytes: number;
  /** Each activity in the order it was scheduled: its type, and its time queued and running (ms). */
  activitySteps: Array<{ type: string; queuedMs: number; runningMs: number }>;
  /** Each workflow task in order: queued (scheduled → started) and running (started → completed), ms. */
  workflowTaskSteps: Array<{ queuedMs: number; runningMs: number }>;
}

type Ts = temporal.api.history.v1.IHistoryEvent['eventTime'];

function toMs(ts: Ts): number {
  if (!ts) return Number.NaN;
  const seconds = typeof ts.seconds === 'number' ? ts.seconds : Number(ts.seconds ?? 0);
  return seconds * 1000 + (ts.nanos ?? 0) / 1e6;
}

function num(v: unknown): number {
  return typeof v === 'number' ? v : Number(v);
}

interface Interval {
  from: number;
  to: number;
  cat: Exclude<Category, 'other'>;
}

const PRIORITY: Record<Exclude<Category, 'other'>, number> = { activityRunning: 4, activityQueued: 3, workflowTask: 2, workflowQueued: 1 };

export async function turnBreakdown(handle: WorkflowHandle): Promise<TurnBreakdown> {
  const history = await handle.fetchHistory();
  const events = history.events ?? [];
  const timeOf = new Map<number, number>();
  const intervals: Interval[] = [];
  let start = Number.NaN;
  let end = Number.NaN;
  let workflowTasks = 0;
  let activities = 0;
  let localActivities = 0;
  const activityStarted = new Map<number, number>();
  const workflowTaskStarted = new Map<number, number>();
  const activitySteps: TurnBreakdown['activitySteps'] = [];
  const activityStep = new Map<number, TurnBreakdown['activitySteps'][number]>();
  const workflowTaskSteps: TurnBreakdown['workflowTaskSteps'] = [];

  for (const e of events) {
    const id = num(e.eventId);
    const t = toMs(e.eventTime);
    timeOf.set(id, t);
    switch (e.eventType) {
      case E.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
        start = t;
        break;
      case E.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
      case E.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED:
        end = t;
        break;
      case E.EVENT_TYPE_WORKFLOW_TASK_STARTED:
        workflowTaskStarted.set(num(e.workflowTaskStartedEventAttributes?.scheduledEventId), t);
        break;
      case E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
      case E.EVENT_TYPE_WORKFLOW_TASK_FAILED:
      case E.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT: {
        const attrs =
          e.workflowTaskCompletedEventAttributes ?? e.workflowTaskFailedEventAttributes ?? e.workflowTaskTimedOutEventAttributes;
        const scheduledId = num(attrs?.scheduledEventId);
        const scheduled = timeOf.get(scheduledId);
        const started = workflowTaskStarted.get(scheduledId);
        if (scheduled !== undefined && started !== undefined) {
          intervals.push({ from: scheduled, to: started, cat: 'workflowQueued' });
          intervals.push({ from: started, to: t, cat: 'workflowTask' });
          workflowTaskSteps.push({ queuedMs: started - scheduled, runningMs: t - started });
        }
        workflowTasks += 1;
        break;
      }
      case E.EVENT_TYPE_MARKER_RECORDED:
        if (e.markerRecordedEventAttributes?.markerName === 'core_local_activity') localActivities += 1;
        break;
      case E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED: {
        const step = { type: e.activityTaskScheduledEventAttributes?.activityType?.name ?? '?', queuedMs: Number.NaN, runningMs: Number.NaN };
        activitySteps.push(step);
        activityStep.set(id, step);
        break;
      }
      case E.EVENT_TYPE_ACTIVITY_TASK_STARTED:
        activityStarted.set(num(e.activityTaskStartedEventAttributes?.scheduledEventId), t);
        break;
      case E.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
      case E.EVENT_TYPE_ACTIVITY_TASK_FAILED:
      case E.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT:
      case E.EVENT_TYPE_ACTIVITY_TASK_CANCELED: {
        const attrs =
          e.activityTaskCompletedEventAttributes ??
          e.activityTaskFailedEventAttributes ??
          e.activityTaskTimedOutEventAttributes ??
          e.activityTaskCanceledEventAttributes;
        const scheduledId = num(attrs?.scheduledEventId);
        const scheduled = timeOf.get(scheduledId);
        const started = activityStarted.get(scheduledId);
        if (scheduled !== undefined && started !== undefined) {
          intervals.push({ from: scheduled, to: started, cat: 'activityQueued' });
          intervals.push({ from: started, to: t, cat: 'activityRunning' });
          const step = activityStep.get(scheduledId);
          if (step) Object.assign(step, { queuedMs: started - scheduled, runningMs: t - started });
        }
        activities += 1;
        break;
      }
      default:
        break;
    }
  }

  const byCategory: Record<Category, number> = { activityRunning: 0, activityQueued: 0, workflowTask: 0, workflowQueued: 0, other: 0 };
  const bounds = [...new Set([start, end, ...intervals.flatMap((i) => [i.from, i.to])])]
    .filter((b) => b >= start && b <= end)
    .sort((a, b) => a - b);
  for (let i = 0; i + 1 < bounds.length; i++) {
    const a = bounds[i] as number;
    const b = bounds[i + 1] as number;
    const mid = (a + b) / 2;
    let best: Category = 'other';
    let bestPriority = 0;
    for (const iv of intervals) {
      if (iv.from <= mid && mid < iv.to && PRIORITY[iv.cat] > bestPriority) {
        best = iv.cat;
        bestPriority = PRIORITY[iv.cat];
      }
    }
    byCategory[best] += b - a;
  }
  const historyBytes = temporal.api.history.v1.History.encode(history).finish().length;
  return { spanMs: end - start, byCategory, workflowTasks, activities, localActivities, historyEvents: events.length, historyBytes, activitySteps, workflowTaskSteps };
}
