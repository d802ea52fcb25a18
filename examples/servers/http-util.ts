/** Small HTTP helpers shared by the example MCP servers' Streamable HTTP and SSE modes. */
import { randomUUID } from 'node:crypto';
import type * as http from 'node:http';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';

const MAX_BODY_BYTES = 4 * 1024 * 1024;

export function readJsonBody(req: http.IncomingMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(new Error('request body too large'));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      } catch {
        reject(new Error('request body is not valid JSON'));
      }
    });
    req.on('error', reject);
  });
}

export function sendJsonRpcError(res: http.ServerResponse, status: number, code: number, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}

/**
 * A browser page must not reach the server through DNS rebinding: the Host header must name the
 * server as its clients know it, local names by default plus `extra` (e.g. `payments:4020`, the
 * name other containers use in the compose stack).
 */
export function hostAllowed(req: http.IncomingMessage, port: number, extra: readonly string[] = []): boolean {
  const host = req.headers.host ?? '';
  return [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`, ...extra].includes(host);
}

/** An open MCP session of an example server: its own McpServer on a transport (Streamable HTTP or SSE). */
export interface ServerSession {
  server: McpServer;
  transport: Transport;
}

/**
 * Streamable HTTP with stateful sessions, one McpServer (made by `create`) per session, kept in
 * `sessions` (which a server may share with its legacy SSE sessions).
 */
export function streamableHttpHandler(
  sessions: Map<string, ServerSession>,
  create: () => McpServer,
): (req: http.IncomingMessage, res: http.ServerResponse) => Promise<void> {
  return async (req, res) => {
    const header = req.headers['mcp-session-id'];
    const sessionId = typeof header === 'string' ? header : undefined;
    const existing = sessionId ? sessions.get(sessionId)?.transport : undefined;
    const transport = existing instanceof StreamableHTTPServerTransport ? existing : undefined;

    if (req.method === 'POST') {
      const body = await readJsonBody(req).catch((error: Error) => error);
      if (body instanceof Error) return sendJsonRpcError(res, 400, -32700, body.message);
      if (sessionId) {
        // 404 is what tells a client its session is gone and it must initialize a new one.
        if (!transport) return sendJsonRpcError(res, 404, -32001, 'Session not found');
        return await transport.handleRequest(req, res, body);
      }
      if (!isInitializeRequest(body)) return sendJsonRpcError(res, 400, -32000, 'Bad Request: no valid session ID');
      const server = create();
      const fresh: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => {
          sessions.set(id, { server, transport: fresh });
        },
      });
      fresh.onclose = () => {
        if (fresh.sessionId) sessions.delete(fresh.sessionId);
      };
      await server.connect(fresh);
      return await fresh.handleRequest(req, res, body);
    }
    if (req.method === 'GET' || req.method === 'DELETE') {
      if (!sessionId) return sendJsonRpcError(res, 400, -32000, 'Bad Request: no valid session ID');
      if (!transport) return sendJsonRpcError(res, 404, -32001, 'Session not found');
      return await transport.handleRequest(req, res);
    }
    res.writeHead(405, { allow: 'GET, POST, DELETE' }).end();
  };
}
