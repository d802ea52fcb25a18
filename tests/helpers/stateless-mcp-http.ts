/**
 * A stateless MCP server over Streamable HTTP for tests (JSON responses, a new server per request)
 * on a free port of 127.0.0.1. `intercept` sees each parsed request before it is handled (e.g. to
 * cut the answer's connection, or to hold it until a test lets it through).
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';

export interface StatelessMcpHttp {
  url: string;
  close(): Promise<void>;
}

export async function serveStatelessMcp(
  create: () => McpServer,
  intercept?: (body: { method?: string }, req: http.IncomingMessage, res: http.ServerResponse) => void | Promise<void>,
): Promise<StatelessMcpHttp> {
  const httpServer = http.createServer((req, res) => {
    if (req.method !== 'POST') {
      res.writeHead(405, { allow: 'POST' }).end();
      return;
    }
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (raw += c));
    req.on('end', () => {
      void (async () => {
        const body = JSON.parse(raw) as { method?: string };
        await intercept?.(body, req, res);
        const server = create();
        const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
        res.on('close', () => {
          void transport.close();
          void server.close();
        });
        await server.connect(transport);
        await transport.handleRequest(req, res, body);
      })().catch(() => req.socket.destroy());
    });
  });
  await new Promise<void>((resolve) => httpServer.listen(0, '127.0.0.1', resolve));
  const { port } = httpServer.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    close: () =>
      new Promise<void>((resolve) => {
        httpServer.closeAllConnections();
        httpServer.close(() => resolve());
      }),
  };
}
