/**
 * MCP requests as the OpenTelemetry semantic conventions for MCP describe them (development status,
 * open-telemetry/semantic-conventions-genai, docs/gen-ai/mcp.md): one CLIENT span per request sent,
 * named `{mcp.method.name} {target}` (the tool or prompt name; the method alone for a resource read,
 * whose URI would make names unbounded), with the request's trace context handed to the caller for
 * `params._meta` (`traceparent`, `tracestate`), and the `mcp.client.operation.duration` histogram.
 *
 * A failed request sets `error.type` (the JSON-RPC error code as a string, with `rpc.response.status_code`;
 * `tool_error` for a tool result with `isError`; otherwise the error's class) and the span's status
 * to ERROR. Which of the host's servers answered is `dmh.mcp.server` (not a convention: the config's name).
 */
import { context, propagation, SpanKind, SpanStatusCode, trace, type Attributes } from '@opentelemetry/api';

export interface McpOperation {
  /** `tools/call`, `resources/read`, `prompts/get`, … */
  method: string;
  /** The server's name in the host config. */
  server: string;
  tool?: string;
  prompt?: string;
  resourceUri?: string;
  /** How the connection is carried: stdio is a pipe, Streamable HTTP (or SSE) runs over TCP. */
  transport: 'stdio' | 'http' | 'sse';
  /** The server's URL, for `server.address` and `server.port` (HTTP only). */
  url?: string;
  /** The MCP revision the connection speaks, when known. */
  protocolVersion?: string;
  /** The Streamable HTTP session, when the connection has one. */
  sessionId?: string;
}

/** The metric's labels: low-cardinality attributes only (no URI, no session). */
export interface McpOperationLabels {
  method: string;
  server: string;
  /** The tool or prompt name, or '' */
  target: string;
  /** '' when the request succeeded. */
  errorType: string;
  transport: 'pipe' | 'tcp';
  protocolVersion: string;
}

type Recorder = (labels: McpOperationLabels, seconds: number) => void;
let recorder: Recorder | undefined;

/** Where `mcp.client.operation.duration` goes (the worker's metrics registry); one per process. */
export function recordMcpOperationsWith(fn: Recorder | undefined): void {
  recorder = fn;
}

/** A request whose answer says it failed, though the call itself succeeded (a tool result with `isError`). */
export const TOOL_ERROR = 'tool_error';

function errorAttributes(error: unknown): { type: string; code?: string } {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'number' && Number.isInteger(code)) return { type: String(code), code: String(code) };
  if (error instanceof Error && (error.name === 'AbortError' || error.name === 'TimeoutError')) return { type: 'timeout' };
  if (error instanceof Error && error.constructor !== Error && error.name !== 'Error') return { type: error.name };
  return { type: '_OTHER' };
}

function operationAttributes(op: McpOperation): Attributes {
  const attributes: Attributes = {
    'mcp.method.name': op.method,
    'dmh.mcp.server': op.server,
    'network.transport': op.transport === 'stdio' ? 'pipe' : 'tcp',
  };
  if (op.tool !== undefined) {
    attributes['gen_ai.tool.name'] = op.tool;
    attributes['gen_ai.operation.name'] = 'execute_tool';
  }
  if (op.prompt !== undefined) attributes['gen_ai.prompt.name'] = op.prompt;
  if (op.resourceUri !== undefined) attributes['mcp.resource.uri'] = op.resourceUri;
  if (op.protocolVersion) attributes['mcp.protocol.version'] = op.protocolVersion;
  if (op.sessionId) attributes['mcp.session.id'] = op.sessionId;
  if (op.url && op.transport !== 'stdio') {
    try {
      const u = new URL(op.url);
      attributes['server.address'] = u.hostname;
      attributes['server.port'] = Number(u.port || (u.protocol === 'https:' ? 443 : 80));
      attributes['network.protocol.name'] = 'http';
    } catch {
      // A URL the config accepted parses; nothing to add otherwise.
    }
  }
  return attributes;
}

/**
 * Runs one MCP request `fn` in its span, handing it the span's trace context for `params._meta`.
 * `failedAnswer` names an error carried in a successful answer (e.g. TOOL_ERROR for `isError`).
 */
export async function inMcpSpan<T>(op: McpOperation, fn: (traceMeta: Record<string, string>) => Promise<T>, failedAnswer?: (result: T) => string | undefined): Promise<T> {
  const target = op.tool ?? op.prompt;
  const name = target ? `${op.method} ${target}` : op.method;
  const started = performance.now();
  return await trace.getTracer('durable-mcp-host').startActiveSpan(name, { kind: SpanKind.CLIENT, attributes: operationAttributes(op) }, async (span) => {
    const carrier: Record<string, string> = {};
    propagation.inject(context.active(), carrier);
    let errorType = '';
    try {
      const result = await fn(carrier);
      const failed = failedAnswer?.(result);
      if (failed) {
        errorType = failed;
        span.setAttribute('error.type', failed);
        span.setStatus({ code: SpanStatusCode.ERROR, message: failed });
      }
      return result;
    } catch (err) {
      const { type, code } = errorAttributes(err);
      errorType = type;
      span.setAttribute('error.type', type);
      if (code !== undefined) span.setAttribute('rpc.response.status_code', code);
      span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message.slice(0, 200) : 'failed' });
      throw err;
    } finally {
      span.end();
      recorder?.(
        {
          method: op.method,
          server: op.server,
          target: target ?? '',
          errorType,
          transport: op.transport === 'stdio' ? 'pipe' : 'tcp',
          protocolVersion: op.protocolVersion ?? '',
        },
        (performance.now() - started) / 1000,
      );
    }
  });
}
