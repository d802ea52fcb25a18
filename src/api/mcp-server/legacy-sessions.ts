/**
 * 2025-11-25 sessions on /mcp: a client that opens with `initialize` gets an `Mcp-Session-Id` and one
 * server instance for its session, so the server can ask it things (an approval or a downstream
 * server's question as `elicitation/create`, through the SDK's shim for `input_required`) and the client's
 * answer reaches the same instance. Sessions live in this process: a request naming a session another
 * replica (or a restarted API) holds gets 404, and the 2025 spec has the client start a new session.
 * Nothing durable lives in a session: the turns, tasks and transcripts are Temporal's.
 *
 * Bounded: at most `maxSessions`, each ended after `idleMs` without a request; a session belongs to the
 * caller that opened it, and anyone else naming it gets the same 404 as for an unknown one.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { isInitializeRequest, type AuthInfo, type McpServer } from '@modelcontextprotocol/server';
import { NodeStreamableHTTPServerTransport } from '@modelcontextprotocol/node';
import type { UserContext } from '../../shared/user';

interface Session {
  server: McpServer;
  transport: NodeStreamableHTTPServerTransport;
  owner: { id: string; tenant: string };
  lastUsed: number;
}

export interface LegacySessionOptions {
  /** A server for a new session of `user` (the 2025 era). */
  create: (user: UserContext) => McpServer;
  idleMs?: number;
  maxSessions?: number;
  now?: () => number;
}

export type LegacySessions = ReturnType<typeof createLegacySessions>;

export function createLegacySessions(opts: LegacySessionOptions) {
  const sessions = new Map<string, Session>();
  const idleMs = opts.idleMs ?? 30 * 60 * 1000;
  const maxSessions = opts.maxSessions ?? 1_000;
  const now = opts.now ?? Date.now;

  const end = async (id: string): Promise<void> => {
    const s = sessions.get(id);
    if (!s) return;
    sessions.delete(id);
    await s.transport.close().catch(() => undefined);
    await s.server.close().catch(() => undefined);
  };
  const sweep = async (): Promise<void> => {
    const cutoff = now() - idleMs;
    await Promise.all([...sessions].filter(([, s]) => s.lastUsed < cutoff).map(([id]) => end(id)));
  };
  const timer = setInterval(() => void sweep(), Math.min(idleMs, 60_000));
  timer.unref();

  const notFound = (res: ServerResponse): void => {
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found: start a new session with initialize.' } }));
  };

  return {
    /** Whether this request belongs to the session machinery: it names a session, or opens one. */
    claims(headers: IncomingMessage['headers'], method: string, body: unknown): boolean {
      return typeof headers['mcp-session-id'] === 'string' || (method === 'POST' && isInitializeRequest(body));
    },

    async handle(user: UserContext, auth: AuthInfo, req: IncomingMessage & { auth?: AuthInfo }, res: ServerResponse, body: unknown): Promise<void> {
      req.auth = auth;
      const id = req.headers['mcp-session-id'];
      if (typeof id === 'string') {
        const s = sessions.get(id);
        if (!s || s.owner.id !== user.id || s.owner.tenant !== user.tenant) return notFound(res);
        s.lastUsed = now();
        await s.transport.handleRequest(req, res, body);
        if (req.method === 'DELETE') await end(id);
        return;
      }
      await sweep();
      if (sessions.size >= maxSessions) {
        res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '60' });
        res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32000, message: 'Too many open MCP sessions on this replica; try again shortly.' } }));
        return;
      }
      const server = opts.create(user);
      const transport: NodeStreamableHTTPServerTransport = new NodeStreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (sid) => {
          sessions.set(sid, { server, transport, owner: { id: user.id, tenant: user.tenant }, lastUsed: now() });
        },
        onsessionclosed: (sid) => void end(sid),
      });
      await server.connect(transport);
      await transport.handleRequest(req, res, body);
    },

    size: () => sessions.size,

    async close(): Promise<void> {
      clearInterval(timer);
      await Promise.all([...sessions.keys()].map(end));
    },
  };
}
