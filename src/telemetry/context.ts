/**
 * The active trace as log fields: pino calls this for every line (see src/logger.ts), so a line
 * written while a span is active (an API request, an activity) names its trace. Only the
 * OpenTelemetry API: without a tracer provider there is never an active span, and nothing is added.
 */
import { trace } from '@opentelemetry/api';

export function traceFields(): { trace_id?: string; span_id?: string } {
  const ctx = trace.getActiveSpan()?.spanContext();
  if (!ctx || ctx.traceId === '00000000000000000000000000000000') return {};
  return { trace_id: ctx.traceId, span_id: ctx.spanId };
}
