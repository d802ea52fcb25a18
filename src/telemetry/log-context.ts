/**
 * The turn an activity works for, as log fields: pino calls `logContextFields` for every line (see
 * src/logger.ts), so anything logged while an activity runs (an LLM call's failure, a tool call)
 * names its turn, session and user. The worker's activity interceptor sets it from the
 * workflow's header (src/cli/activity-log-context.ts); outside an activity there is none.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { LogContext } from '../shared/log-context';

const current = new AsyncLocalStorage<LogContext>();

export function logContextFields(): LogContext {
  return current.getStore() ?? {};
}

export function withLogContext<T>(context: LogContext, fn: () => T): T {
  return current.run(context, fn);
}
