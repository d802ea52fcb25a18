/**
 * Workflow interceptors, bundled with the workflows (src/cli/workflow-bundle.ts): the workflow's
 * log lines name its turn, session and user, and so does every activity it schedules, through a
 * header the worker's activity interceptor reads (src/cli/activity-log-context.ts). Only attributes
 * of log lines and headers of commands: replay compares neither, so no history changes meaning.
 */
import { defaultPayloadConverter } from '@temporalio/common';
import { workflowInfo, type WorkflowInterceptors } from '@temporalio/workflow';
import { LOG_CONTEXT_HEADER, type LogContext } from '../shared/log-context';
import type { TurnInput } from '../shared/turn';
import { TURN_WORKFLOW_TYPE } from './definitions';

function logContextOf(workflowType: string, arg: unknown): LogContext | undefined {
  if (!arg || typeof arg !== 'object') return undefined;
  if (workflowType === TURN_WORKFLOW_TYPE) {
    const t = arg as Partial<TurnInput>;
    return { turnId: t.turnId, sessionId: t.sessionId, ...(t.user ? { userId: t.user.id } : {}) };
  }
  return undefined;
}

/**
 * Called once per workflow: `context` belongs to that workflow alone. The methods hand `next`'s
 * promise back rather than awaiting it: every promise a workflow makes costs the SDK a stack trace
 * (its promise hook, for the stack trace query), so a wrapper adds none of its own.
 */
export const interceptors = (): WorkflowInterceptors => {
  let context: LogContext | undefined;
  const withHeader = <I extends { headers: Record<string, unknown> }>(input: I): I =>
    context ? { ...input, headers: { ...input.headers, [LOG_CONTEXT_HEADER]: defaultPayloadConverter.toPayload(context) } } : input;
  return {
    inbound: [
      {
        execute: (input, next) => {
          context = logContextOf(workflowInfo().workflowType, input.args[0]);
          return next(input);
        },
      },
    ],
    outbound: [
      {
        scheduleActivity: (input, next) => next(withHeader(input)),
        scheduleLocalActivity: (input, next) => next(withHeader(input)),
        // Explicit attributes of a line win over these.
        getLogAttributes: (input, next) => next(context ? { ...context, ...input } : input),
      },
    ],
  };
};
