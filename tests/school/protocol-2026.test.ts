/**
 * The payments server on MCP 2026-07-28 (`--protocol 2026-07-28`: the v2 server package, modern.ts)
 * beside the same server on 2025-11-25 (the v1 SDK), on one store: the same tools, annotations,
 * schemas and resources; one effect transaction (a call made on one revision replays on the other
 * under the same key); progress while the fault hook holds a call; 2025 clients refused.
 */
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { IDEMPOTENCY_KEY_META_KEY } from '../../src/shared/meta';
import { readStore } from '../../examples/servers/school/store';
import { bodyOf, buildSchoolServers, callTool, connectHttp, startHttpServer, tempDir, type HttpServer } from './helpers';

jest.setTimeout(60_000);

const tmp = tempDir();
const dataFile = tmp.file();
let legacyServer: HttpServer;
let modernServer: HttpServer;
let legacy: Client;
let modern: ModernClient;

beforeAll(async () => {
  const scripts = await buildSchoolServers();
  const env = { SCHOOL_TOOL_DELAY_MS: 'refund_payment=600' };
  legacyServer = await startHttpServer(scripts.payments, 'PAYMENTS_SERVER_URL', dataFile, env);
  modernServer = await startHttpServer(scripts.payments, 'PAYMENTS_SERVER_URL', dataFile, env, ['--protocol', '2026-07-28']);
  legacy = await connectHttp(legacyServer.url);
  modern = new ModernClient({ name: 'school-test', version: '0.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await modern.connect(new ModernTransport(new URL(modernServer.url)));
}, 180_000);

afterAll(async () => {
  await modern?.close().catch(() => undefined);
  await legacy?.close().catch(() => undefined);
  await modernServer?.stop();
  await legacyServer?.stop();
  tmp.remove();
});

test('both revisions list the same tools (annotations, schemas) and resources', async () => {
  const shape = (tools: Array<{ name: string; title?: string; description?: string; annotations?: unknown; inputSchema: { properties?: unknown; required?: unknown } }>) =>
    tools.map((t) => ({ name: t.name, title: t.title, description: t.description, annotations: t.annotations, properties: t.inputSchema.properties, required: t.inputSchema.required }));
  const onModern = shape((await modern.listTools()).tools);
  expect(onModern.map((t) => t.name).sort()).toEqual(['process_payment', 'refund_payment']);
  expect(onModern).toEqual(shape((await legacy.listTools()).tools));
  const resources = (list: Array<{ uri: string; name: string; title?: string; mimeType?: string }>) => list.map((r) => [r.uri, r.name, r.title, r.mimeType]);
  expect(resources((await modern.listResources()).resources)).toEqual(resources((await legacy.listResources()).resources));
  const summary = await modern.readResource({ uri: 'payments://revenue_summary' });
  expect(JSON.parse((summary.contents[0] as { text: string }).text)).toMatchObject({ tenantId: 'demo', unpaidInvoices: 1 });
});

test('one store, one transaction: a charge made on 2025-11-25 replays on 2026-07-28 under its key', async () => {
  const key = 'turn-both/step-3/call-pay';
  const first = bodyOf<{ transaction: { id: string } }>(await callTool(legacy, 'process_payment', { invoiceId: 'INV-1001', amount: 250 }, { key }));
  const before = readStore(dataFile);
  const again = await modern.callTool({ name: 'process_payment', arguments: { invoiceId: 'INV-1001', amount: 250 }, _meta: { [IDEMPOTENCY_KEY_META_KEY]: key } });
  expect(again.structuredContent).toMatchObject({ transaction: { id: first.transaction.id } });
  expect(readStore(dataFile)).toEqual(before);
  // And the other way round: a refund on 2026-07-28, with progress from the fault hook while it waits.
  const progress: number[] = [];
  const refund = await modern.callTool(
    { name: 'refund_payment', arguments: { transactionId: first.transaction.id, reason: 'test' }, _meta: { [IDEMPOTENCY_KEY_META_KEY]: 'turn-both/refund' } },
    { onprogress: (p) => progress.push(p.progress) },
  );
  expect(refund.structuredContent).toMatchObject({ transaction: { id: first.transaction.id, status: 'refunded' } });
  expect(progress.length).toBeGreaterThan(0);
  const replayed = await callTool(legacy, 'refund_payment', { transactionId: first.transaction.id, reason: 'test' }, { key: 'turn-both/refund' });
  expect(replayed.structuredContent).toEqual(refund.structuredContent);
  const calls = modernServer.stderr.filter((l) => l.includes('key=turn-both/'));
  expect(calls.length).toBeGreaterThanOrEqual(2);
  expect(calls.every((l) => l.includes(' protocol=2026-07-28:'))).toBe(true);
});

test('a 2025-11-25 client is refused by the 2026-07-28 server, and the refusal is logged', async () => {
  await expect(connectHttp(modernServer.url)).rejects.toThrow(/Unsupported protocol version|2026-07-28/);
  expect(modernServer.stderr.some((l) => l.includes('refused: '))).toBe(true);
});
