/**
 * Context gathering in the trace: each resources/read and prompts/get the pool sends gets a client
 * span under the caller's span, and the server receives that span's context in `_meta.traceparent`
 * beside the caller's own fields; a read the resilient hub answers from its cache sends nothing and
 * has no span. A real Streamable HTTP MCP server records the `_meta` of every request; the same holds
 * on the 2026-07-28 wire (the test server of tests/helpers/modern-server.ts records `_meta` too).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { context, propagation, SpanKind, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import pino from 'pino';
import { z } from 'zod';
import { parseMcpConfig } from '../../src/mcp/config';
import { McpServerHub } from '../../src/mcp/pool';
import { ResilientHub } from '../../src/mcp/resilience';
import { MENU_TEXT, MENU_URI, startModernServer } from '../helpers/modern-server';

const exporter = new InMemorySpanExporter();
const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const received: Array<{ method: string; meta: Record<string, unknown> | undefined }> = [];
let http: Server;
let hub: ResilientHub;

beforeAll(async () => {
  provider.register();
  http = createServer((req, res) => {
    // Stateless: a fresh MCP server and transport per request keeps the recorder trivial.
    const mcp = new McpServer({ name: 'ctx', version: '1' });
    mcp.registerResource('notes', 'ctx://notes', { mimeType: 'text/plain' }, async (uri, extra) => {
      received.push({ method: 'resources/read', meta: extra._meta });
      return { contents: [{ uri: uri.href, text: 'ada likes tea' }] };
    });
    mcp.registerPrompt('greet', { argsSchema: { name: z.string() } }, async ({ name }, extra) => {
      received.push({ method: 'prompts/get', meta: extra._meta });
      return { messages: [{ role: 'user', content: { type: 'text', text: `Greet ${name}.` } }] };
    });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => void transport.close());
    void mcp.connect(transport).then(() => transport.handleRequest(req, res));
  });
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
  const servers = new McpServerHub(parseMcpConfig({ mcpServers: { ctx: { url } } }, {}, process.cwd()), { logger: pino({ level: 'silent' }) });
  hub = new ResilientHub(servers, { breaker: { failureThreshold: 5, cooldownMs: 1_000 }, cache: { ttlMs: 60_000, maxStaleMs: 60_000 } });
});

afterAll(async () => {
  await hub.close();
  await new Promise((r) => http.close(r));
  await provider.shutdown();
  trace.disable();
  propagation.disable();
  context.disable();
});

test('resources/read and prompts/get: a client span each under the caller, its traceparent in _meta', async () => {
  const user = { 'dmh/user': { id: 'u-ada', tenant: 'demo' } };
  const parent = await trace.getTracer('test').startActiveSpan('RunActivity:gatherContext', async (span) => {
    expect(await hub.readResource('ctx', 'ctx://notes', { meta: user })).toContain('ada likes tea');
    expect(await hub.getPrompt('ctx', 'greet', { name: 'Ada' }, { meta: user })).toBe('user: Greet Ada.');
    // Read again within the cache's TTL: answered without a request, so without a span.
    expect(await hub.readResource('ctx', 'ctx://notes', { meta: user })).toContain('ada likes tea');
    span.end();
    return span.spanContext();
  });

  const spans = exporter.getFinishedSpans().filter((s) => s.name !== 'RunActivity:gatherContext');
  // Named as the MCP conventions say: the method and the prompt (or tool); a resource's URI stays an attribute.
  expect(spans.map((s) => s.name).sort()).toEqual(['prompts/get greet', 'resources/read']);
  expect(received.map((r) => r.method)).toEqual(['resources/read', 'prompts/get']);
  for (const s of spans) {
    expect(s.kind).toBe(SpanKind.CLIENT);
    expect(s.spanContext().traceId).toBe(parent.traceId);
    expect(s.parentSpanId).toBe(parent.spanId);
    const method = s.attributes['mcp.method.name'];
    const got = received.find((r) => r.method === method);
    // The server sees this span as its parent, and the caller's fields are still there.
    expect(got?.meta?.['traceparent']).toBe(`00-${parent.traceId}-${s.spanContext().spanId}-01`);
    expect(got?.meta?.['dmh/user']).toEqual(user['dmh/user']);
  }
  const transport = { 'dmh.mcp.server': 'ctx', 'network.transport': 'tcp', 'server.address': '127.0.0.1', 'mcp.protocol.version': '2025-11-25' };
  expect(spans.find((s) => s.name === 'resources/read')?.attributes).toMatchObject({ ...transport, 'mcp.method.name': 'resources/read', 'mcp.resource.uri': 'ctx://notes' });
  expect(spans.find((s) => s.name === 'prompts/get greet')?.attributes).toMatchObject({ ...transport, 'mcp.method.name': 'prompts/get', 'gen_ai.prompt.name': 'greet' });
});

test('on a 2026-07-28 server too: tools/call and resources/read carry their span in _meta.traceparent', async () => {
  exporter.reset();
  const modern = await startModernServer();
  const pool = new McpServerHub(parseMcpConfig({ mcpServers: { modern: { url: modern.url, protocol: '2026-07-28' } } }, {}, process.cwd()), { logger: pino({ level: 'silent' }) });
  try {
    const user = { 'dmh/user': { id: 'u-ada', tenant: 'demo' } };
    const parent = await trace.getTracer('test').startActiveSpan('RunActivity:callTool', async (span) => {
      expect((await pool.callTool({ server: 'modern', tool: 'greet', arguments: { name: 'Ada' }, meta: user })).text).toBe('Hello, Ada, from a 2026-07-28 server.');
      expect(await pool.readResource('modern', MENU_URI, { meta: user })).toContain(MENU_TEXT);
      span.end();
      return span.spanContext();
    });

    expect(modern.state.eras.length).toBeGreaterThan(0);
    expect(modern.state.eras.every((e) => e.startsWith('modern'))).toBe(true);
    const spans = exporter.getFinishedSpans().filter((s) => s.name === 'tools/call greet' || s.name === 'resources/read');
    expect(spans.map((s) => s.name).sort()).toEqual(['resources/read', 'tools/call greet']);
    expect(modern.state.metas.map((m) => m.method)).toEqual(['tools/call', 'resources/read']);
    for (const s of spans) {
      expect(s.kind).toBe(SpanKind.CLIENT);
      expect(s.parentSpanId).toBe(parent.spanId);
      expect(s.attributes['mcp.protocol.version']).toBe('2026-07-28');
      const got = modern.state.metas.find((m) => m.method === s.attributes['mcp.method.name']);
      // W3C trace context: version 00, the caller's trace id, this span's id, sampled.
      expect(got?.meta?.['traceparent']).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/);
      expect(got?.meta?.['traceparent']).toBe(`00-${parent.traceId}-${s.spanContext().spanId}-01`);
      expect(got?.meta?.['dmh/user']).toEqual(user['dmh/user']);
    }
  } finally {
    await pool.close();
    await modern.close();
  }
});
