/**
 * What goes into the workflow bundle and what a worker running it needs: the workflows and the
 * OpenTelemetry workflow interceptors (spans for workflows and what they schedule, exported through
 * the worker's `exporter` sink; replay-safe, as nothing is exported while a history replays), used by
 * the prebuilt bundle (bundle-workflows.ts), src/worker.ts, and the replay and workflow tests. The
 * interceptors are always in the bundle; with tracing off, the sink drops their spans.
 */
import { OpenTelemetryActivityInboundInterceptor, OpenTelemetryActivityOutboundInterceptor, makeWorkflowExporter } from '@temporalio/interceptors-opentelemetry';
import { Resource } from '@opentelemetry/resources';
import { NoopSpanProcessor, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { WorkerOptions } from '@temporalio/worker';

export const WORKFLOWS_PATH = require.resolve('../workflows');
export const WORKFLOW_INTERCEPTOR_MODULES = [require.resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors')];

export const workflowBundleOptions = () => ({ workflowsPath: WORKFLOWS_PATH, workflowInterceptorModules: WORKFLOW_INTERCEPTOR_MODULES });

/** Activity spans (their context taken from the workflow's headers) and the sink for workflow spans. */
export function tracingWorkerOptions(tracing: { spanProcessor: SpanProcessor; resource: Resource } = { spanProcessor: new NoopSpanProcessor(), resource: new Resource({}) }) {
  return {
    interceptors: {
      activity: [
        (ctx: Parameters<NonNullable<NonNullable<WorkerOptions['interceptors']>['activity']>[number]>[0]) => ({
          inbound: new OpenTelemetryActivityInboundInterceptor(ctx),
          outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
        }),
      ],
    },
    sinks: { exporter: makeWorkflowExporter(tracing.spanProcessor, tracing.resource) },
  };
}
