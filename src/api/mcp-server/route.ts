/**
 * `/mcp`: the host as an MCP server (seed 003 phase 2), Streamable HTTP on the API's own port. One
 * endpoint serves both protocol revisions through the SDK's v2 entry (`createMcpHandler`): 2026-07-28
 * requests (per-request envelope, `server/discover`) on its modern path, 2025-11-25 requests
 * (`initialize`, then calls) answered statelessly by a fresh server instance each.
 *
 * What is ours here is the edge: DNS-rebinding protection (Host and Origin), the caller's JWT (the same
 * as /v1's), the OAuth protected resource metadata of RFC 9728 that tells a client where tokens come
 * from, and the `WWW-Authenticate` challenge on 401. Everything a call does goes through the turn
 * service, as for the HTTP and WebSocket routes (./server.ts).
 */
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { type AuthInfo, createMcpHandler, isLegacyRequest } from '@modelcontextprotocol/server';
import { toNodeHandler, toWebRequest } from '@modelcontextprotocol/node';
import { hostHeaderValidation, originValidation } from '@modelcontextprotocol/fastify';
import type { Authenticator } from '../auth';
import { HttpError } from '../errors';
import type { UserContext } from '../../shared/user';
import { createHostMcpServer, type HostMcpDeps } from './server';
import { createTaskEndpoint, isTaskRequest } from './tasks';
import { createLegacySessions } from './legacy-sessions';

export const MCP_PATH = '/mcp';
const METADATA_PATH = '/.well-known/oauth-protected-resource';

export interface McpRouteOptions extends Omit<HostMcpDeps, 'user' | 'era' | 'token'> {
  auth: Authenticator;
  /**
   * Issuer identifiers (URLs) of the authorization servers whose tokens the API accepts, for the
   * protected resource metadata. Empty: the document names none (tokens come from elsewhere, as with
   * the shared-secret dev tokens of `npm run token`).
   */
  authorizationServers: readonly string[];
  /** The URL clients use for /mcp; default: from the request's Host (the API's own address). */
  resourceUrl?: string;
  /**
   * Host names (no port) the endpoint answers to, and browser origins' host names it accepts: the
   * DNS-rebinding guard. Default: loopback names only.
   */
  allowedHosts?: readonly string[];
}

const LOOPBACK = ['localhost', '127.0.0.1', '[::1]'];

export const mcpRoutes: FastifyPluginAsync<McpRouteOptions> = async (app, opts) => {
  const hosts = [...(opts.allowedHosts?.length ? opts.allowedHosts : LOOPBACK)];
  const checkHost = hostHeaderValidation(hosts);
  const checkOrigin = originValidation(hosts);
  const guard = async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    await checkHost(request, reply);
    if (!reply.sent) await checkOrigin(request, reply);
  };

  const resourceUrl = (request: FastifyRequest): string => opts.resourceUrl ?? `${request.protocol}://${request.host}${MCP_PATH}`;
  const metadataUrl = (request: FastifyRequest): string => {
    const resource = new URL(resourceUrl(request));
    return `${resource.origin}${METADATA_PATH}${resource.pathname}`;
  };
  // RFC 9728 §3: the metadata of the resource `/mcp` lives at the well-known path with the resource's
  // path appended; the bare well-known path answers too, for clients that look there first.
  const metadata = async (request: FastifyRequest) => ({
    resource: resourceUrl(request),
    authorization_servers: [...opts.authorizationServers],
    bearer_methods_supported: ['header'],
    resource_name: 'Durable MCP host',
  });
  app.get(`${METADATA_PATH}${MCP_PATH}`, { onRequest: guard, schema: { hide: true } }, metadata);
  app.get(METADATA_PATH, { onRequest: guard, schema: { hide: true } }, metadata);

  // One handler for every request: the factory builds a server bound to the request's caller.
  const handler = createMcpHandler(
    (ctx) => createHostMcpServer({ ...opts, user: ctx.authInfo?.extra?.['user'] as UserContext, token: ctx.authInfo?.token ?? '', era: ctx.era }),
    {
      onerror: (err) => app.log.debug({ err: err.message }, 'mcp: request refused'),
    },
  );
  const serve = toNodeHandler(handler, { onerror: (err) => app.log.error({ err }, 'mcp: request failed') });
  // A 2025 client that opens with initialize gets a session (./legacy-sessions.ts); one that does not is
  // answered statelessly by the handler above.
  const sessions = createLegacySessions({ create: (user) => createHostMcpServer({ ...opts, user, token: '', era: 'legacy' }) });
  app.addHook('onClose', async () => {
    await sessions.close();
    await handler.close();
  });

  const authenticate = async (request: FastifyRequest, reply: FastifyReply): Promise<UserContext | undefined> => {
    try {
      return await opts.auth.authenticate(request.headers.authorization);
    } catch (err) {
      if (!(err instanceof HttpError) || err.statusCode !== 401) throw err;
      // RFC 6750 §3 and the MCP authorization spec: the challenge names where to learn how to get a token.
      const challenge = `Bearer resource_metadata="${metadataUrl(request)}"${request.headers.authorization ? ', error="invalid_token"' : ''}`;
      await reply.status(401).header('www-authenticate', challenge).send({ error: { code: err.code, message: err.message } });
      return undefined;
    }
  };

  const tasks = createTaskEndpoint(opts);
  const route = async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const user = await authenticate(request, reply);
    if (!user) return;
    if (request.method === 'POST' && isTaskRequest(request.body)) {
      // 2025-11-25 tasks, which the SDK has no runtime for (./tasks.ts). A dropped connection stops
      // waiting for a task's result; the task (the turn) goes on.
      const aborted = new AbortController();
      request.raw.on('close', () => aborted.abort());
      const token = request.headers.authorization?.replace(/^Bearer\s+/i, '') ?? '';
      try {
        await reply.type('application/json').send(await tasks(user, token, request.body, aborted.signal));
      } catch (err) {
        const id = (request.body as { id: string | number }).id;
        app.log.error({ err }, 'mcp: task request failed');
        const message = err instanceof HttpError ? err.message : 'The host could not complete the request.';
        await reply.type('application/json').send({ jsonrpc: '2.0', id, error: { code: -32603, message } });
      }
      return;
    }
    const raw = request.raw as typeof request.raw & { auth?: AuthInfo };
    const token = request.headers.authorization?.replace(/^Bearer\s+/i, '') ?? '';
    raw.auth = { token, clientId: user.id, scopes: [...user.scopes], extra: { user } };
    reply.hijack();
    if (sessions.claims(request.headers, request.method, request.body) && (await isLegacyRequest(await toWebRequest(raw, request.body), request.body))) {
      await sessions.handle(user, raw.auth, raw, reply.raw, request.body);
      return;
    }
    await serve(raw, reply.raw, request.body);
  };
  app.post(MCP_PATH, { onRequest: guard, schema: { hide: true } }, route);
  app.get(MCP_PATH, { onRequest: guard, schema: { hide: true } }, route);
  app.delete(MCP_PATH, { onRequest: guard, schema: { hide: true } }, route);
};
