/**
 * The worker's side of the workflows' sinks: turn outcomes and approval waits for the metrics (and
 * a turn's usage records), the word to a turn's follower, and the turn's events and memory to the
 * API. Called by the workflows, never during replay (the turn logs its own start and end).
 *
 * The worker awaits an activation's sinks before it hands the activation's completion to Temporal,
 * so anything more than a counter starts on the next turn of the event loop (setImmediate, in the
 * order the sinks were called). That turn still comes before any activity of the step can run, so a
 * step's events reach the live queue ahead of its model's text (docs/decisions/0048).
 */
import type { InjectedSinks } from '@temporalio/worker';
import type { WorkflowInfo } from '@temporalio/workflow';
import type { LivePublisher } from './live/publisher';
import type { WorkerObserver } from './metrics';
import type { SessionLink } from './activities/session-link';
import type { Logger } from './logger';
import { sessionSinks } from './session-link';
import type { PushedTurn, TurnEvent } from './shared/turn';
import type { ApprovalWaitEnd, MetricsSinks, SessionSinks, TurnAccounting, TurnEventSinks, TurnOutcome } from './workflows/definitions';

export interface WorkerSinkDeps {
  metrics: WorkerObserver;
  /** A turn's usage and audit records at its end (its servers' sampling tokens, all its tokens audited). */
  accountTurn(turnId: string, outcome: TurnOutcome, a: TurnAccounting & { user: NonNullable<TurnAccounting['user']> }): Promise<void>;
  sessionLink: SessionLink;
  live: LivePublisher;
  logger: Logger;
}

export function workerSinks(deps: WorkerSinkDeps): InjectedSinks<MetricsSinks & TurnEventSinks & SessionSinks> {
  const { metrics, live, logger } = deps;
  return {
    metrics: {
      turnFinished: {
        fn: (info: WorkflowInfo, outcome: TurnOutcome, _llmSteps: number, _toolCalls: number, accounting?: TurnAccounting) => {
          const user = accounting?.user;
          if (accounting && user) setImmediate(() => void deps.accountTurn(info.workflowId, outcome, { ...accounting, user }));
          metrics.turnFinished(outcome, (Date.now() - info.startTime.getTime()) / 1000, info.historyLength);
        },
        callDuringReplay: false,
      },
      approvalWaiting: {
        fn: (info: WorkflowInfo, toolCallId: string, timeoutMs: number) => metrics.approvalWaiting(`${info.workflowId}/${toolCallId}`, Date.now() + timeoutMs),
        callDuringReplay: false,
      },
      approvalEnded: {
        fn: (info: WorkflowInfo, toolCallId: string, how: ApprovalWaitEnd) => metrics.approvalEnded(`${info.workflowId}/${toolCallId}`, how),
        callDuringReplay: false,
      },
    },
    // A turn's end, signalled at once to whoever waits for it (the next turn of its chain).
    ...sessionSinks(
      deps.sessionLink,
      (target, turnId, err) =>
        logger.warn({ turnId, target, err: err instanceof Error ? err.message : String(err) }, 'telling the waiting workflow that the turn ended failed; it will check on the turn'),
      // The memory after a turn, to the API: the next message of its session starts with it (no read).
      (turnId, memory) => void setImmediate(() => live.memory(turnId, memory)),
    ),
    // Each durable event to the API beside the live text, so its streams need no query. Runs after
    // the activation, possibly before the task is persisted: a retried task pushes the same ids
    // again and the API keeps the first copy (docs/decisions/0015-durable-events-pushed.md).
    turnEvents: {
      emitted: {
        fn: (info: WorkflowInfo, event: TurnEvent, turn: PushedTurn) => void setImmediate(() => live.event(info.workflowId, event, turn)),
        callDuringReplay: false,
      },
    },
  };
}
