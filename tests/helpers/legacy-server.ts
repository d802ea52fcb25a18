/**
 * A 2025-11-25-only MCP server on the v1 SDK over Streamable HTTP, with sessions (one transport per
 * `initialize`), as most servers of that revision are deployed: a request without a known session
 * that is not an `initialize` gets the v1 SDK's 400. It counts its handshakes. Its tools are `shout`
 * by default, or what `register` puts on each session's server.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

export interface LegacyServer {
  url: string;
  initializes: () => number;
  close(): Promise<void>;
}

const shout = (mcp: McpServer): void => {
  mcp.registerTool('shout', { description: 'shouts', inputSchema: { text: z.string() } }, ({ text }) => ({ content: [{ type: 'text', text: text.toUpperCase() }] }));
};

export async function startLegacyServer(register: (mcp: McpServer) => void = shout): Promise<LegacyServer> {
  let initializes = 0;
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const http: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const parsed = body ? (JSON.parse(body) as { method?: string }) : undefined;
      const sid = req.headers['mcp-session-id'];
      let transport = typeof sid === 'string' ? transports.get(sid) : undefined;
      if (!transport && parsed?.method === 'initialize') {
        initializes += 1;
        const mcp = new McpServer({ name: 'legacy', version: '1' });
        register(mcp);
        const created = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (id) => void transports.set(id, created),
          onsessionclosed: (id) => void transports.delete(id),
        });
        transport = created;
        void mcp.connect(created);
      }
      if (!transport) {
        res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32000, message: 'Bad Request: Server not initialized' } }));
        return;
      }
      void transport.handleRequest(req, res, parsed);
    });
  });
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`,
    initializes: () => initializes,
    close: async () => {
      http.closeAllConnections();
      await new Promise<void>((r) => http.close(() => r()));
    },
  };
}
