/**
 * The ids every log line about a turn carries (besides the trace id, which comes from the active
 * span). Workflows send them to their activities in a header (src/workflows/log-context.ts), since an
 * activity's own info names its workflow but not the user it works for.
 */
export interface LogContext {
  turnId?: string;
  sessionId?: string;
  userId?: string;
}

/** The activity header carrying a LogContext. */
export const LOG_CONTEXT_HEADER = 'dmh-log-context';
