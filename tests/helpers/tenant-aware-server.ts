/**
 * A small Streamable HTTP MCP server (raw JSON-RPC over POST, JSON answers) that, like the school's
 * student server with users it does not know, refuses the requests of some tenants and serves the
 * rest. The tenant is read from the caller context the host puts in `_meta`. A test can also make
 * the whole server unwell (HTTP 503 for everyone). Real sockets on 127.0.0.1, an ephemeral port.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { USER_CONTEXT_META_KEY } from '../../src/shared/meta';

/**
 * How a refused tenant is answered: JSON-RPC errors in the server's own code range (-32001 on
 * tools/call, -32000 on resources/read: the codes the SDK also uses for its local timeout and
 * closed connection), or HTTP 429 (that tenant's rate limit).
 */
export type Refusal = 'json-rpc' | 'http-429';

export interface TenantAwareServer {
  url: string;
  /** Tenants refused, and how. */
  refuse: Map<string, Refusal>;
  /** When true, every POST gets HTTP 503. */
  unwell: boolean;
  /** Every POST that reached the server, answered or not. */
  posts: number;
  /** Requests that reached the server, per method and tenant (`-` when no caller context). */
  reached: (method: string, tenant?: string) => number;
  close(): Promise<void>;
}

interface JsonRpcMessage {
  id?: number | string;
  method: string;
  params?: { _meta?: Record<string, unknown>; protocolVersion?: string; uri?: string };
}

const RESOURCE_URI = 'tenant://profile';

export function startTenantAwareServer(): Promise<TenantAwareServer> {
  const counts = new Map<string, number>();
  const state: Pick<TenantAwareServer, 'refuse' | 'unwell' | 'posts'> = { refuse: new Map(), unwell: false, posts: 0 };

  const handle = (req: IncomingMessage, res: ServerResponse, body: string): void => {
    if (req.method !== 'POST') {
      res.writeHead(405, { allow: 'POST' }).end();
      return;
    }
    state.posts += 1;
    if (state.unwell) {
      res.writeHead(503, { 'content-type': 'text/plain' }).end('service unavailable');
      return;
    }
    const msg = JSON.parse(body) as JsonRpcMessage;
    if (msg.id === undefined) {
      res.writeHead(202).end();
      return;
    }
    const user = msg.params?._meta?.[USER_CONTEXT_META_KEY] as { tenant?: string } | undefined;
    const tenant = user?.tenant ?? '-';
    const key = `${msg.method} ${tenant}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);

    const send = (payload: Record<string, unknown>): void => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, ...payload }));
    };
    const refusal = state.refuse.get(tenant);
    if (refusal && (msg.method === 'tools/call' || msg.method === 'resources/read')) {
      if (refusal === 'http-429') {
        res.writeHead(429, { 'content-type': 'text/plain', 'retry-after': '1' }).end(`too many requests from tenant ${tenant}`);
        return;
      }
      const code = msg.method === 'tools/call' ? -32001 : -32000;
      send({ error: { code, message: `unknown user: no account in tenant ${tenant}` } });
      return;
    }
    switch (msg.method) {
      case 'initialize':
        return send({
          result: {
            protocolVersion: msg.params?.protocolVersion,
            capabilities: { tools: {}, resources: {} },
            serverInfo: { name: 'tenant-aware', version: '1.0.0' },
          },
        });
      case 'tools/list':
        return send({ result: { tools: [{ name: 'whoami', inputSchema: { type: 'object' }, annotations: { readOnlyHint: true } }] } });
      case 'tools/call':
        return send({ result: { content: [{ type: 'text', text: `hello, tenant ${tenant}` }] } });
      case 'resources/list':
        return send({ result: { resources: [{ uri: RESOURCE_URI, name: 'profile' }] } });
      case 'resources/read':
        return send({ result: { contents: [{ uri: RESOURCE_URI, text: `profile of tenant ${tenant}` }] } });
      default:
        return send({ result: {} });
    }
  };

  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => handle(req, res, body));
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as { port: number }).port;
      resolve(
        Object.assign(state, {
          url: `http://127.0.0.1:${port}/mcp`,
          reached: (method: string, tenant = '-') => counts.get(`${method} ${tenant}`) ?? 0,
          close: () =>
            new Promise<void>((done) => {
              server.closeAllConnections();
              server.close(() => done());
            }),
        }),
      );
    }),
  );
}

export const TENANT_RESOURCE_URI = RESOURCE_URI;
