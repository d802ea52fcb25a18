/**
 * OpenTelemetry end to end, on real processes: an OTLP/HTTP receiver started here (JSON, as the
 * exporter sends it), an API process and a worker exporting to it. One turn with two tool calls
 * yields one trace in which the spans nest API request → Temporal client call → workflows → activity →
 * MCP request, with the LLM calls in it too; the trace id is in the worker's and the API's log lines
 * for that turn, and the stdio server received it in `_meta.traceparent`.
 */
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { freePort, spawnManaged, type ManagedProcess } from '../../src/cli/processes';
import { bearer, postMessage, readSse, waitFor } from '../helpers/http';
import { defaultHostConfig, DIST, JWT_AUDIENCE, JWT_ISSUER, ROOT, startSystem, type TestSystem } from '../helpers/system';

interface Span {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Array<{ key: string; value: { stringValue?: string; intValue?: string } }>;
  service: string;
}

const spans: Span[] = [];
let collector: Server;
let sys: TestSystem;
let api: ManagedProcess;
let apiUrl = '';

/** Flattens an OTLP/JSON trace export into spans tagged with their service. */
function ingest(body: unknown): void {
  const resourceSpans = (body as { resourceSpans?: Array<{ resource?: { attributes?: Span['attributes'] }; scopeSpans?: Array<{ spans?: Span[] }> }> }).resourceSpans ?? [];
  for (const rs of resourceSpans) {
    const service = rs.resource?.attributes?.find((a) => a.key === 'service.name')?.value.stringValue ?? '';
    for (const ss of rs.scopeSpans ?? []) for (const s of ss.spans ?? []) spans.push({ ...s, service });
  }
}

beforeAll(async () => {
  collector = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      if (req.url === '/v1/traces' && req.headers['content-type']?.startsWith('application/json')) ingest(JSON.parse(body));
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => collector.listen(0, '127.0.0.1', r));
  const otel = {
    OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(collector.address() as AddressInfo).port}`,
    OTEL_BSP_SCHEDULE_DELAY: '200',
  };
  // Debug: the worker logs its stdio servers' stderr (the notes server logs the traceparent it got).
  sys = await startSystem({ workerEnv: { ...otel, LOG_LEVEL: 'debug' } });
  const hostConfig = path.join(sys.dir, 'host.json');
  writeFileSync(hostConfig, JSON.stringify(defaultHostConfig()));
  const started = await spawnManaged('api', process.execPath, [path.join(DIST, 'src/api/main.js')], {
    env: {
      ...process.env,
      ...otel,
      TEMPORAL_ADDRESS: sys.temporal.address,
      TASK_QUEUE: sys.taskQueue,
      JWT_SECRET: sys.jwtSecret,
      JWT_ISSUER,
      JWT_AUDIENCE,
      HOST_CONFIG: hostConfig,
      API_HOST: '127.0.0.1',
      API_PORT: String(await freePort()),
      LOG_LEVEL: 'info',
    },
    cwd: ROOT,
    readyLine: /^API_URL=(\S+)/,
  });
  api = started.proc;
  sys.onStop(() => api.stop());
  apiUrl = started.match?.[1] ?? '';
}, 120_000);

afterAll(async () => {
  await sys?.stop();
  await new Promise((r) => collector?.close(r));
});

const attr = (s: Span, key: string) => s.attributes.find((a) => a.key === key)?.value.stringValue;

test('one turn, two tool calls: one trace from the API request down to each MCP request, ids in the logs', async () => {
  const headers = bearer(await sys.token('admin'));
  const post = await postMessage(apiUrl, 'traced', 'remember that traces nest', headers);
  expect(post.status).toBe(202);
  const events = await readSse(`${apiUrl}${post.body.eventsUrl as string}`, { headers, timeoutMs: 60_000 });
  expect(events.at(-1)?.event).toBe('done');

  // The API's span for the POST, and everything below it, arrive within a few batches.
  const root = await waitFor(async () => spans.find((s) => s.kind === 2 && s.service === 'durable-mcp-host-api' && /\/v1\/sessions\/traced\/messages$/.test(attr(s, 'http.target') ?? attr(s, 'url.path') ?? '')), 20_000, 200);
  const traceId = root.traceId;
  const inTrace = () => spans.filter((s) => s.traceId === traceId);
  const mcpSpans = await waitFor(async () => {
    const found = inTrace().filter((s) => s.name.startsWith('tools/call '));
    return found.length === 2 && inTrace().some((s) => s.name === 'RunWorkflow:turnWorkflow') ? found : undefined;
  }, 20_000, 200);
  // Named and described as the OpenTelemetry MCP conventions say (src/telemetry/mcp-spans.ts).
  expect(mcpSpans.map((s) => s.name).sort()).toEqual(['tools/call add_note', 'tools/call echo']);
  expect(mcpSpans.map((s) => attr(s, 'dmh.mcp.server')).sort()).toEqual(['everything', 'notes']);
  for (const s of mcpSpans) {
    expect(attr(s, 'mcp.method.name')).toBe('tools/call');
    expect(attr(s, 'gen_ai.operation.name')).toBe('execute_tool');
    expect(attr(s, 'gen_ai.tool.name')).toBe(s.name.slice('tools/call '.length));
    expect(attr(s, 'network.transport')).toBe('pipe');
    expect(attr(s, 'mcp.protocol.version')).toMatch(/^\d{4}-\d{2}-\d{2}$/);
  }

  const byId = new Map(inTrace().map((s) => [s.spanId, s]));
  const ancestors = (s: Span): Span[] => {
    const up: Span[] = [];
    for (let p = s.parentSpanId ? byId.get(s.parentSpanId) : undefined; p; p = p.parentSpanId ? byId.get(p.parentSpanId) : undefined) up.push(p);
    return up;
  };
  const ancestry = (s: Span): string[] => ancestors(s).map((p) => p.name);
  for (const mcp of mcpSpans) {
    const chain = ancestry(mcp);
    // activity → turn workflow → (session, its update) → the API's Temporal call → the HTTP request.
    expect(chain[0]).toBe('RunActivity:callTool');
    const turn = chain.indexOf('RunWorkflow:turnWorkflow');
    expect(turn).toBeGreaterThan(0);
    expect(chain.slice(turn).some((n) => n.startsWith('StartWorkflow') || n.startsWith('UpdateWithStart') || n.startsWith('StartUpdateWithStart'))).toBe(true);
    expect(byId.get(mcp.parentSpanId ?? '')?.service).toBe('durable-mcp-host-worker');
    // The chain ends at the API's request span: nothing of this turn hangs outside the trace.
    expect(ancestors(mcp).at(-1)?.spanId).toBe(root.spanId);
    expect(root.parentSpanId ?? '').toBe('');
  }
  // The model calls are in the trace too (fetch to the LLM endpoint, traceparent sent), under callLlm.
  const llm = inTrace().filter((s) => (attr(s, 'url.full') ?? '').startsWith(sys.model.url));
  expect(llm.length).toBeGreaterThanOrEqual(2);
  for (const s of llm) expect(ancestry(s)).toContain('RunActivity:callLlm');
  expect(sys.model.requests().some((r) => (r.headers['traceparent'] ?? '').includes(traceId))).toBe(true);

  // Logs: the worker's tool-call lines and the API's request lines carry the trace id, and the notes
  // server logged the traceparent it received in _meta.
  await waitFor(async () => (sys.worker.output().includes(`traceparent=00-${traceId}-`) ? true : undefined), 10_000, 200);
  const workerLines = sys.worker.output().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);
  const toolLines = workerLines.filter((l) => l['msg'] === 'tool call' && l['turnId'] === post.body.turnId);
  expect(toolLines).toHaveLength(2);
  for (const l of toolLines) expect(l['trace_id']).toBe(traceId);
  // The workflow's own lines (start, end) too, with the turn's ids, and the API's response line.
  const ids = { turnId: post.body.turnId, sessionId: 'traced', userId: 'u-ada', trace_id: traceId };
  await waitFor(async () => (sys.worker.output().includes('"msg":"turn finished"') ? true : undefined), 10_000, 200);
  const turnLines = sys.worker.output().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);
  for (const msg of ['turn started', 'turn finished']) expect(turnLines.find((l) => l['msg'] === msg && l['turnId'] === post.body.turnId)).toMatchObject(ids);
  const apiLines = api.output().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);
  expect(apiLines.some((l) => l['trace_id'] === traceId && String((l['req'] as { url?: string } | undefined)?.url ?? '').endsWith('/v1/sessions/traced/messages'))).toBe(true);
  expect(apiLines.find((l) => l['msg'] === 'request completed' && l['trace_id'] === traceId)).toMatchObject(ids);
}, 120_000);
