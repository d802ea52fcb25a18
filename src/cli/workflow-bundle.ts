/**
 * What goes into the workflow bundles and what a worker running them needs, used by the prebuilt
 * bundles (bundle-workflows.ts), src/worker.ts, and the replay and workflow tests. Two bundles: the
 * workflows with their log-context interceptors (../workflows/log-context.ts), and those with the
 * OpenTelemetry workflow interceptors as well (spans for
 * workflows and what they schedule, exported through the worker's `exporter` sink; replay-safe, as
 * nothing is exported while a history replays). A worker with tracing on loads the second. The
 * interceptors only add headers to commands, which replay does not compare, so histories move freely
 * between the two (the replay suite runs every history on both); they are not in the default bundle
 * because they cost every new workflow ~4.5 ms of worker CPU and ~55 MiB of memory even when no span
 * is exported (docs/BENCHMARKS.md, workflow bundle).
 */
import { OpenTelemetryActivityInboundInterceptor, OpenTelemetryActivityOutboundInterceptor, makeWorkflowExporter } from '@temporalio/interceptors-opentelemetry';
import { Resource } from '@opentelemetry/resources';
import { NoopSpanProcessor, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { InjectedSinks, WorkerOptions } from '@temporalio/worker';
import type { MetricsSinks, SessionSinks, TurnEventSinks } from '../workflows/definitions';

export const WORKFLOWS_PATH = require.resolve('../workflows');
/** In both bundles: turn, session and user ids on workflow log lines and activity headers (tiny). */
const LOG_CONTEXT_MODULE = require.resolve('../workflows/log-context');
const OTEL_WORKFLOW_INTERCEPTORS = [require.resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors')];

/** The workflow interceptor modules of a bundle with or without tracing. */
export const workflowInterceptorModules = (traced = false) => [LOG_CONTEXT_MODULE, ...(traced ? OTEL_WORKFLOW_INTERCEPTORS : [])];

/** Failure messages and stack traces as a payload the codec seals (../workflows/failure-converter.ts). */
export const FAILURE_CONVERTER_PATH = require.resolve('../workflows/failure-converter');

export const workflowBundleOptions = (traced = false) => ({
  workflowsPath: WORKFLOWS_PATH,
  workflowInterceptorModules: workflowInterceptorModules(traced),
  failureConverterPath: FAILURE_CONVERTER_PATH,
});

/** File names of the prebuilt bundles, beside src/worker.js in dist/. */
export const PREBUILT_BUNDLES = { plain: 'workflow-bundle.js', traced: 'workflow-bundle-traced.js' } as const;

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

/** The workflows' metrics, event and session sinks as no-ops, for workers and replays that count and push nothing. */
export const NOOP_METRICS_SINKS: InjectedSinks<MetricsSinks & TurnEventSinks & SessionSinks> = {
  metrics: { turnFinished: { fn: () => undefined }, approvalWaiting: { fn: () => undefined }, approvalEnded: { fn: () => undefined } },
  turnEvents: { emitted: { fn: () => undefined } },
  session: { predecessorEnded: { fn: () => undefined }, handedOn: { fn: () => undefined } },
};
