import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { MockActivityEnvironment } from '@temporalio/testing';
import pino from 'pino';
import { createActivities } from '../../src/activities';
import type { LlmClient } from '../../src/llm/client';
import { parseMcpConfig } from '../../src/mcp/config';
import { McpServerHub } from '../../src/mcp/pool';
import { createArgumentValidator } from '../../src/validation/json-schema';
import { sealToken, unsealToken } from '../../src/security/seal';

/**
 * Forwarding the caller's bearer token is a per-server opt-in: two real Streamable HTTP MCP servers
 * record the Authorization header of every request; only the one configured to receive it does.
 */
const SEAL_KEY = 's'.repeat(48);
const seen: Record<string, Array<string | undefined>> = { fwd: [], plain: [] };
const servers: Server[] = [];

async function recordingServer(name: 'fwd' | 'plain'): Promise<string> {
  const http = createServer((req, res) => {
    seen[name]?.push((req.headers as IncomingHttpHeaders).authorization);
    // Stateless: a fresh MCP server and transport per request keeps the recorder trivial.
    const mcp = new McpServer({ name, version: '1' });
    mcp.registerTool('whoami', { description: 'echo' }, async () => ({ content: [{ type: 'text', text: name }] }));
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => void transport.close());
    void mcp.connect(transport).then(() => transport.handleRequest(req, res));
  });
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  servers.push(http);
  return `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
}

let hub: McpServerHub;
let acts: ReturnType<typeof createActivities>;

beforeAll(async () => {
  const config = parseMcpConfig(
    {
      mcpServers: {
        fwd: { url: await recordingServer('fwd'), forwardUserToken: true },
        plain: { url: await recordingServer('plain') },
      },
    },
    {},
    process.cwd(),
  );
  hub = new McpServerHub(config, { logger: pino({ level: 'silent' }) });
  acts = createActivities({
    hub: { ...hub, catalog: () => hub.catalog(), callTool: (r) => hub.callTool(r), readResource: () => Promise.reject(new Error('n/a')), getPrompt: () => Promise.reject(new Error('n/a')), status: () => hub.status(), close: () => hub.close() },
    llm: {} as LlmClient,
    validator: createArgumentValidator(),
    logger: pino({ level: 'silent' }),
    secrets: [],
    unsealToken: (sealed) => unsealToken(sealed, SEAL_KEY),
  });
});
afterAll(async () => {
  await hub.close();
  for (const s of servers) await new Promise((r) => s.close(r));
});

const call = (server: string, sealedToken?: string) =>
  new MockActivityEnvironment().run(acts.callTool, {
    turnId: 'turn-t-1',
    server,
    tool: 'whoami',
    llmName: `${server}__whoami`,
    arguments: {},
    idempotencyKey: `k-${Math.random()}`,
    user: { id: 'u-1', role: 'admin', tenant: 'demo', scopes: [] },
    ...(sealedToken ? { sealedToken } : {}),
  });

test('the token reaches only the server that opted in', async () => {
  const sealed = sealToken('user-token-abc', SEAL_KEY);
  seen.fwd = [];
  seen.plain = [];
  await call('fwd', sealed);
  await call('plain', sealed);
  expect(seen.fwd).toContain('Bearer user-token-abc');
  expect(seen.plain.some((h) => h?.includes('user-token-abc'))).toBe(false);
});

test('no sealed token, or one sealed with another key: nothing is forwarded', async () => {
  seen.fwd = [];
  await call('fwd');
  await call('fwd', sealToken('forged', 'z'.repeat(48)));
  expect(seen.fwd.length).toBeGreaterThan(0);
  expect(seen.fwd.every((h) => h === undefined)).toBe(true);
});
