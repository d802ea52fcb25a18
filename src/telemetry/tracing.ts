/**
 * OpenTelemetry tracing for one process (API or worker). Off unless an OTLP endpoint is configured
 * with the standard variables (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
 * OTEL_SDK_DISABLED=true turns it off again): then spans go over OTLP/HTTP in batches, and
 *   - incoming HTTP requests (the API's routes) and outgoing fetch calls (the LLM endpoint, MCP servers
 *     over HTTP) get spans, with `traceparent` sent on the outgoing ones;
 *   - log lines written inside a span carry its trace_id and span_id (./context.ts, in src/logger.ts).
 * MCP requests get spans of their own, named and described as the MCP semantic conventions say
 * (./mcp-spans.ts). Temporal's own spans (client calls, workflows, activities) come from
 * @temporalio/interceptors-opentelemetry, wired in src/worker.ts and src/api/main.ts.
 *
 * Must run before http is loaded (instrumentations patch modules as they are required):
 * the entry points import ./register-*.ts first.
 */
import { registerInstrumentations } from '@opentelemetry/instrumentation';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { detectResourcesSync, envDetectorSync, Resource } from '@opentelemetry/resources';
import { BatchSpanProcessor, NoopSpanProcessor, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';

export interface Tracing {
  enabled: boolean;
  resource: Resource;
  /** Where workflow spans (exported through a Temporal sink) go too. */
  spanProcessor: SpanProcessor;
  /** Flushes what is buffered; call before the process exits. */
  shutdown(): Promise<void>;
}

/** Worker-to-API pushes (live text, reports) would add a span per batch to every trace: left out. */
const UNTRACED_PATHS = /^\/internal\//;

export function tracingEnabled(env: NodeJS.ProcessEnv): boolean {
  if (env.OTEL_SDK_DISABLED === 'true') return false;
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

export function startTracing(role: 'api' | 'worker', env: NodeJS.ProcessEnv = process.env): Tracing {
  const resource = new Resource({ 'service.name': env.OTEL_SERVICE_NAME ?? `durable-mcp-host-${role}` }).merge(
    detectResourcesSync({ detectors: [envDetectorSync] }),
  );
  if (!tracingEnabled(env)) {
    return { enabled: false, resource, spanProcessor: new NoopSpanProcessor(), shutdown: async () => undefined };
  }
  // The exporter reads the OTLP variables itself (endpoint, headers, timeout).
  const spanProcessor = new BatchSpanProcessor(new OTLPTraceExporter());
  const provider = new NodeTracerProvider({ resource, spanProcessors: [spanProcessor] });
  provider.register();
  registerInstrumentations({
    tracerProvider: provider,
    instrumentations: [
      new HttpInstrumentation({
        ignoreIncomingRequestHook: (req) => UNTRACED_PATHS.test(req.url ?? ''),
        // Outgoing calls of this process go through fetch (traced below); the exporter's own requests stay out.
        ignoreOutgoingRequestHook: () => true,
      }),
      new UndiciInstrumentation({ ignoreRequestHook: (req) => UNTRACED_PATHS.test(req.path) }),
    ],
  });
  return {
    enabled: true,
    resource,
    spanProcessor,
    shutdown: async () => {
      await provider.shutdown().catch(() => undefined);
    },
  };
}
