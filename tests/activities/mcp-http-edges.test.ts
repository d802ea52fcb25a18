import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import pino from 'pino';
import { parseMcpConfig } from '../../src/mcp/config';
import { McpServerHub } from '../../src/mcp/pool';

/**
 * Streamable HTTP servers as they exist in the wild, found by the MCP conformance suite (issue 12 §5):
 * a POST-only server that answers the optional GET stream with 404 (the spec says 405), and a server
 * that wants authorization (401). Real HTTP servers on 127.0.0.1, raw JSON-RPC, counting requests.
 */
interface Counts {
  initialize: number;
  gets: number;
  posts: number;
}

function startServer(handle: (req: IncomingMessage, res: ServerResponse, body: string, counts: Counts) => void): Promise<{ url: string; counts: Counts; server: Server }> {
  const counts: Counts = { initialize: 0, gets: 0, posts: 0 };
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      if (req.method === 'GET') counts.gets += 1;
      if (req.method === 'POST') counts.posts += 1;
      handle(req, res, body, counts);
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ url: `http://127.0.0.1:${(server.address() as { port: number }).port}/mcp`, counts, server })),
  );
}

/** JSON-RPC over POST only; GET (the optional server-to-client stream) is a 404, as some servers answer. */
const postOnly = (req: IncomingMessage, res: ServerResponse, body: string, counts: Counts): void => {
  if (req.method !== 'POST') {
    res.writeHead(404);
    res.end('not found');
    return;
  }
  const msg = JSON.parse(body) as { id?: number; method: string; params?: { protocolVersion?: string } };
  if (msg.id === undefined) {
    res.writeHead(202).end();
    return;
  }
  const reply = (result: unknown): void => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }));
  };
  if (msg.method === 'initialize') {
    counts.initialize += 1;
    return reply({ protocolVersion: msg.params?.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'post-only', version: '1.0.0' } });
  }
  if (msg.method === 'tools/list') return reply({ tools: [{ name: 'hello', inputSchema: { type: 'object' } }] });
  if (msg.method === 'tools/call') return reply({ content: [{ type: 'text', text: 'hi' }] });
  return reply({});
};

const wantsAuth = (_req: IncomingMessage, res: ServerResponse): void => {
  res.writeHead(401, { 'www-authenticate': 'Bearer resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource"' }).end();
};

const servers: Server[] = [];
const hubs: McpServerHub[] = [];
afterAll(async () => {
  await Promise.all(hubs.map((h) => h.close()));
  for (const s of servers) s.close();
});

function hubFor(url: string): McpServerHub {
  const hub = new McpServerHub(parseMcpConfig({ mcpServers: { remote: { url } } }, {}, process.cwd()), { logger: pino({ level: process.env.DEBUG_HUB ? 'debug' : 'silent' }) });
  hubs.push(hub);
  return hub;
}

test('a POST-only server answering the optional GET stream with 404 keeps its session: one initialize for many calls', async () => {
  const s = await startServer(postOnly);
  servers.push(s.server);
  const hub = hubFor(s.url);
  for (let i = 0; i < 3; i++) {
    expect(await hub.callTool({ server: 'remote', tool: 'hello', arguments: {} })).toEqual({ isError: false, text: 'hi' });
  }
  expect((await hub.status())[0]).toMatchObject({ state: 'connected', transport: 'streamable-http' });
  expect(s.counts.initialize).toBe(1);
  expect(s.counts.gets).toBeGreaterThanOrEqual(1);
});

test('a 401 means authorization: no fallback to legacy SSE, and the reason says so', async () => {
  const s = await startServer(wantsAuth);
  servers.push(s.server);
  const hub = hubFor(s.url);
  const [status] = await hub.status();
  expect(status).toMatchObject({ state: 'unavailable' });
  expect(status?.error).toMatch(/HTTP 401.*requires authorization/);
  expect(status?.error).not.toMatch(/sse/i);
  // Only the Streamable HTTP POST was tried: no GET of a legacy SSE endpoint.
  expect(s.counts.gets).toBe(0);
});
