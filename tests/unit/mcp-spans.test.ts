/**
 * MCP request spans and the duration metric as the OpenTelemetry MCP conventions name them
 * (src/telemetry/mcp-spans.ts): names, attributes, errors carried in an answer or thrown, the
 * trace context handed to the request, one metric sample per request.
 */
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { context, propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { inMcpSpan, recordMcpOperationsWith, TOOL_ERROR, type McpOperationLabels } from '../../src/telemetry/mcp-spans';

const exporter = new InMemorySpanExporter();
const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const samples: Array<{ labels: McpOperationLabels; seconds: number }> = [];

beforeAll(() => {
  provider.register({ propagator: new W3CTraceContextPropagator() });
  recordMcpOperationsWith((labels, seconds) => samples.push({ labels, seconds }));
});

afterAll(async () => {
  recordMcpOperationsWith(undefined);
  await provider.shutdown();
  trace.disable();
  propagation.disable();
  context.disable();
});

beforeEach(() => {
  exporter.reset();
  samples.length = 0;
});

const onlySpan = () => {
  const spans = exporter.getFinishedSpans();
  expect(spans).toHaveLength(1);
  return spans[0]!;
};

test('a tool call over stdio: named after the tool, execute_tool, a pipe, its trace context handed to the request', async () => {
  let meta: Record<string, string> = {};
  const result = await inMcpSpan({ method: 'tools/call', server: 'notes', tool: 'add_note', transport: 'stdio', protocolVersion: '2025-11-25' }, async (m) => {
    meta = m;
    return { content: [] };
  });
  expect(result).toEqual({ content: [] });
  const span = onlySpan();
  expect(span.name).toBe('tools/call add_note');
  expect(span.kind).toBe(SpanKind.CLIENT);
  expect(span.attributes).toEqual({
    'mcp.method.name': 'tools/call',
    'dmh.mcp.server': 'notes',
    'network.transport': 'pipe',
    'gen_ai.tool.name': 'add_note',
    'gen_ai.operation.name': 'execute_tool',
    'mcp.protocol.version': '2025-11-25',
  });
  expect(span.status.code).toBe(SpanStatusCode.UNSET);
  expect(meta['traceparent']).toBe(`00-${span.spanContext().traceId}-${span.spanContext().spanId}-01`);
  expect(samples).toHaveLength(1);
  expect(samples[0]?.labels).toEqual({ method: 'tools/call', server: 'notes', target: 'add_note', errorType: '', transport: 'pipe', protocolVersion: '2025-11-25' });
  expect(samples[0]?.seconds).toBeGreaterThanOrEqual(0);
});

test('a tool result with isError: error.type tool_error and an ERROR status, though the request succeeded', async () => {
  await inMcpSpan({ method: 'tools/call', server: 'payments', tool: 'pay', transport: 'http', url: 'https://pay.example:8443/mcp' }, async () => ({ isError: true }), (r) => (r.isError ? TOOL_ERROR : undefined));
  const span = onlySpan();
  expect(span.attributes).toMatchObject({ 'error.type': 'tool_error', 'network.transport': 'tcp', 'server.address': 'pay.example', 'server.port': 8443, 'network.protocol.name': 'http' });
  expect(span.status.code).toBe(SpanStatusCode.ERROR);
  expect(samples[0]?.labels.errorType).toBe('tool_error');
});

test('a JSON-RPC error: its code as error.type and rpc.response.status_code; the error still reaches the caller', async () => {
  const refused = new McpError(-32602, 'bad arguments');
  await expect(inMcpSpan({ method: 'tools/call', server: 's', tool: 't', transport: 'stdio' }, async () => Promise.reject(refused))).rejects.toBe(refused);
  const span = onlySpan();
  expect(span.attributes).toMatchObject({ 'error.type': '-32602', 'rpc.response.status_code': '-32602' });
  expect(span.status).toMatchObject({ code: SpanStatusCode.ERROR });
  expect(samples[0]?.labels.errorType).toBe('-32602');
});

test('other failures: a timeout, an error class, or _OTHER', async () => {
  const timeout = Object.assign(new Error('timed out'), { name: 'TimeoutError' });
  class PoolFault extends Error {
    override name = 'PoolFault';
  }
  for (const err of [timeout, new PoolFault('dropped'), new Error('plain')]) {
    await expect(inMcpSpan({ method: 'prompts/get', server: 's', prompt: 'greet', transport: 'sse' }, async () => Promise.reject(err))).rejects.toBe(err);
  }
  expect(exporter.getFinishedSpans().map((s) => s.attributes['error.type'])).toEqual(['timeout', 'PoolFault', '_OTHER']);
  expect(exporter.getFinishedSpans().map((s) => s.name)).toEqual(['prompts/get greet', 'prompts/get greet', 'prompts/get greet']);
  expect(exporter.getFinishedSpans()[0]?.attributes['gen_ai.prompt.name']).toBe('greet');
  expect(exporter.getFinishedSpans()[0]?.attributes['gen_ai.operation.name']).toBeUndefined();
});

test('a resource read: the method alone names the span (a URI would make names unbounded); the URI is an attribute', async () => {
  await inMcpSpan({ method: 'resources/read', server: 'ctx', resourceUri: 'ctx://notes/42', transport: 'http', url: 'http://127.0.0.1:3000/mcp', sessionId: 'abc' }, async () => ({}));
  const span = onlySpan();
  expect(span.name).toBe('resources/read');
  expect(span.attributes).toMatchObject({ 'mcp.resource.uri': 'ctx://notes/42', 'mcp.session.id': 'abc', 'server.port': 3000 });
  expect(samples[0]?.labels.target).toBe('');
});
