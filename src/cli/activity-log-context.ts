/**
 * The worker's activity interceptor for the log context that workflows put in a header
 * (src/workflows/log-context.ts): the activity runs with it as its lines' fields
 * (src/telemetry/log-context.ts). An activity without the header (an older bundle) logs as before.
 */
import { defaultPayloadConverter } from '@temporalio/common';
import type { ActivityExecuteInput, ActivityInboundCallsInterceptor, Next } from '@temporalio/worker';
import { LOG_CONTEXT_HEADER, type LogContext } from '../shared/log-context';
import { withLogContext } from '../telemetry/log-context';

class LogContextInbound implements ActivityInboundCallsInterceptor {
  async execute(input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>): Promise<unknown> {
    const header = input.headers[LOG_CONTEXT_HEADER];
    if (!header) return await next(input);
    let context: LogContext;
    try {
      context = defaultPayloadConverter.fromPayload<LogContext>(header);
    } catch {
      return await next(input);
    }
    return await withLogContext(context, () => next(input));
  }
}

export const logContextActivityInterceptor = () => ({ inbound: new LogContextInbound() });
