/**
 * Example of a remote MCP server behind OAuth 2.1, as hosted SaaS servers are: one process serves a
 * small authorization server (the SDK's `mcpAuthRouter`: metadata, dynamic client registration,
 * authorize with PKCE, token, refresh, revocation) and the protected MCP endpoint (`requireBearerAuth`
 * checks the token and its audience). Each user's notes are private to them.
 *
 *   node dist/examples/servers/protected-server.js --port N [--access-ttl-ms MS]
 *
 * The consent page is deliberately plain: the user types a name (there is no login) and allows or
 * denies. Tokens live in memory: restarting the server revokes everything.
 */
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type Response as ExpressResponse } from 'express';
import { requireBearerAuth } from '@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js';
import type { OAuthRegisteredClientsStore } from '@modelcontextprotocol/sdk/server/auth/clients.js';
import { InvalidGrantError, InvalidTokenError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import type { AuthorizationParams, OAuthServerProvider } from '@modelcontextprotocol/sdk/server/auth/provider.js';
import { getOAuthProtectedResourceMetadataUrl, mcpAuthRouter } from '@modelcontextprotocol/sdk/server/auth/router.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { OAuthClientInformationFull, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { z } from 'zod';

export interface Grant {
  clientId: string;
  user: string;
  scopes: string[];
  resource?: string;
  expiresAt: number;
}

const escapeHtml = (text: string): string =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string);

/** The authorization server's state and decisions; the SDK's router speaks the protocol around it. */
export class ExampleAuthServer implements OAuthServerProvider {
  readonly clients = new Map<string, OAuthClientInformationFull>();
  readonly clientsStore: OAuthRegisteredClientsStore = {
    getClient: (id) => Promise.resolve(this.clients.get(id)),
    registerClient: (info) => {
      const full = { ...info, client_id: randomUUID(), client_id_issued_at: Math.floor(Date.now() / 1000) } as OAuthClientInformationFull;
      this.clients.set(full.client_id, full);
      return Promise.resolve(full);
    },
  };
  /** Authorization requests waiting on the consent page, by id. */
  private readonly requests = new Map<string, { params: AuthorizationParams; clientId: string }>();
  private readonly codes = new Map<string, { params: AuthorizationParams; clientId: string; user: string }>();
  readonly access = new Map<string, Grant>();
  readonly refresh = new Map<string, Grant>();
  refreshCount = 0;

  constructor(public accessTtlMs = 3_600_000) {}

  /** Shows the consent page; the answer comes to GET /consent. */
  authorize(client: OAuthClientInformationFull, params: AuthorizationParams, res: ExpressResponse): Promise<void> {
    const id = randomUUID();
    this.requests.set(id, { params, clientId: client.client_id });
    const who = escapeHtml(client.client_name ?? client.client_id);
    const scopes = escapeHtml((params.scopes ?? []).join(' ') || '(none)');
    res
      .status(200)
      .type('html')
      .send(
        `<!doctype html><html><body><h1>Allow ${who}?</h1><p>It asks for: ${scopes}</p>` +
          `<form action="/consent" method="get" data-request="${id}"><input type="hidden" name="request" value="${id}">` +
          `<label>Your name <input name="user" value="demo-user"></label> ` +
          `<button name="allow" value="1">Allow</button> <button name="allow" value="0">Deny</button></form></body></html>`,
      );
    return Promise.resolve();
  }

  /** The user's answer: back to the client's redirect URI with a code, or with `access_denied`. */
  consent(requestId: string, user: string, allow: boolean): string | undefined {
    const request = this.requests.get(requestId);
    if (!request) return undefined;
    this.requests.delete(requestId);
    const back = new URL(request.params.redirectUri);
    if (request.params.state) back.searchParams.set('state', request.params.state);
    if (!allow) {
      back.searchParams.set('error', 'access_denied');
      return back.toString();
    }
    const code = randomUUID();
    this.codes.set(code, { ...request, user });
    back.searchParams.set('code', code);
    return back.toString();
  }

  challengeForAuthorizationCode(_client: OAuthClientInformationFull, code: string): Promise<string> {
    const entry = this.codes.get(code);
    if (!entry) throw new InvalidGrantError('unknown authorization code');
    return Promise.resolve(entry.params.codeChallenge);
  }

  exchangeAuthorizationCode(client: OAuthClientInformationFull, code: string, _verifier?: string, _redirectUri?: string, resource?: URL): Promise<OAuthTokens> {
    const entry = this.codes.get(code);
    if (!entry || entry.clientId !== client.client_id) throw new InvalidGrantError('unknown authorization code');
    this.codes.delete(code);
    return Promise.resolve(this.issue({ clientId: client.client_id, user: entry.user, scopes: entry.params.scopes ?? [], ...(resource ? { resource: resource.href } : {}) }));
  }

  exchangeRefreshToken(client: OAuthClientInformationFull, token: string): Promise<OAuthTokens> {
    const grant = this.refresh.get(token);
    if (!grant || grant.clientId !== client.client_id || grant.expiresAt < Date.now()) throw new InvalidGrantError('refresh token expired or revoked');
    this.refresh.delete(token);
    this.refreshCount++;
    return Promise.resolve(this.issue(grant));
  }

  verifyAccessToken(token: string): Promise<AuthInfo> {
    const grant = this.access.get(token);
    if (!grant || grant.expiresAt < Date.now()) throw new InvalidTokenError('invalid or expired token');
    return Promise.resolve({
      token,
      clientId: grant.clientId,
      scopes: grant.scopes,
      expiresAt: Math.floor(grant.expiresAt / 1000),
      ...(grant.resource ? { resource: new URL(grant.resource) } : {}),
      extra: { user: grant.user },
    });
  }

  revokeToken(_client: OAuthClientInformationFull, request: { token: string }): Promise<void> {
    this.access.delete(request.token);
    this.refresh.delete(request.token);
    return Promise.resolve();
  }

  /** Everything issued to a user, gone (what the user does in the provider's settings). */
  revokeUser(user: string): void {
    for (const map of [this.access, this.refresh]) for (const [token, grant] of map) if (grant.user === user) map.delete(token);
  }

  expireAccess(): void {
    for (const grant of this.access.values()) grant.expiresAt = 0;
  }

  expireRefresh(): void {
    for (const grant of this.refresh.values()) grant.expiresAt = 0;
  }

  private issue(base: Omit<Grant, 'expiresAt'>): OAuthTokens {
    const access = randomUUID();
    const refresh = randomUUID();
    this.access.set(access, { ...base, expiresAt: Date.now() + this.accessTtlMs });
    this.refresh.set(refresh, { ...base, expiresAt: Date.now() + 86_400_000 });
    return { access_token: access, token_type: 'bearer', expires_in: Math.max(1, Math.round(this.accessTtlMs / 1000)), refresh_token: refresh, scope: base.scopes.join(' ') };
  }
}

export interface ProtectedServer {
  url: string;
  mcpUrl: string;
  auth: ExampleAuthServer;
  close(): Promise<void>;
}

/** Starts both parts on one port of 127.0.0.1 (0: any free port). */
export async function startProtectedServer(opts: { port?: number; accessTtlMs?: number } = {}): Promise<ProtectedServer> {
  const auth = new ExampleAuthServer(opts.accessTtlMs);
  const notes = new Map<string, string[]>();
  const app = express();
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(opts.port ?? 0, '127.0.0.1', () => resolve(s));
  });
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const mcpUrl = `${base}/mcp`;
  app.use(mcpAuthRouter({ provider: auth, issuerUrl: new URL(base), resourceServerUrl: new URL(mcpUrl), scopesSupported: ['notes'], resourceName: 'Private notes' }));
  app.get('/consent', (req, res) => {
    const target = auth.consent(String(req.query['request'] ?? ''), String(req.query['user'] ?? 'demo-user').slice(0, 64), req.query['allow'] === '1');
    if (!target) return void res.status(400).type('text').send('unknown or answered authorization request');
    res.redirect(target);
  });
  app.use(
    '/mcp',
    express.json(),
    requireBearerAuth({ verifier: auth, resourceMetadataUrl: getOAuthProtectedResourceMetadataUrl(new URL(mcpUrl)), expectedResource: new URL(mcpUrl) }),
    async (req, res) => {
      // Stateless: a server and transport per request; the tools act for the token's user.
      const mcp = new McpServer({ name: 'private-notes', version: '1.0.0' });
      const userOf = (extra: { authInfo?: AuthInfo }): string => String(extra.authInfo?.extra?.['user'] ?? 'nobody');
      mcp.registerTool('whoami', { description: 'Who the server thinks you are' }, (extra) => ({
        content: [{ type: 'text', text: `you are ${userOf(extra)}` }],
      }));
      mcp.registerTool(
        'add_private_note',
        { description: 'Saves a note only you can read', inputSchema: { text: z.string().min(1) } },
        ({ text }, extra) => {
          const user = userOf(extra);
          notes.set(user, [...(notes.get(user) ?? []), text]);
          return { content: [{ type: 'text', text: `saved for ${user}` }] };
        },
      );
      mcp.registerTool('list_private_notes', { description: 'Your notes' }, (extra) => ({
        content: [{ type: 'text', text: JSON.stringify(notes.get(userOf(extra)) ?? []) }],
      }));
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      res.on('close', () => void transport.close());
      await mcp.connect(transport);
      await transport.handleRequest(req, res, req.body);
    },
  );
  return {
    url: base,
    mcpUrl,
    auth,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

if (require.main === module) {
  const arg = (name: string): string | undefined => {
    const i = process.argv.indexOf(name);
    return i >= 0 ? process.argv[i + 1] : undefined;
  };
  const port = Number(arg('--port') ?? 0);
  const accessTtlMs = arg('--access-ttl-ms') ? Number(arg('--access-ttl-ms')) : undefined;
  startProtectedServer({ port, ...(accessTtlMs ? { accessTtlMs } : {}) })
    .then((s) => process.stderr.write(`protected-server: MCP at ${s.mcpUrl}, authorization server at ${s.url}\n`))
    .catch((error: unknown) => {
      process.stderr.write(`protected-server: ${String(error)}\n`);
      process.exit(1);
    });
}
