/**
 * User OAuth through the worker's pool against a real authorization server and a protected MCP server,
 * both built in this test on the SDK's server-side OAuth (mcpAuthRouter, requireBearerAuth). The user's
 * browser is played by fetch; the API's callback route is the real one (on a bare Fastify). Covers
 * first use, consent, the code exchange on the next attempt, refresh, revocation, a refused consent,
 * an expired refresh token, a token for another resource, and tokens kept apart per user.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import express, { type Response as ExpressResponse } from 'express';
import Fastify, { type FastifyInstance } from 'fastify';
import { mcpAuthRouter, getOAuthProtectedResourceMetadataUrl } from '@modelcontextprotocol/sdk/server/auth/router.js';
import { requireBearerAuth } from '@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js';
import type { AuthorizationParams, OAuthServerProvider } from '@modelcontextprotocol/sdk/server/auth/provider.js';
import type { OAuthRegisteredClientsStore } from '@modelcontextprotocol/sdk/server/auth/clients.js';
import { InvalidGrantError, InvalidTokenError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { OAuthClientInformationFull, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { oauthCallbackRoutes } from '../../src/api/routes/oauth-callback';
import { parseMcpConfig } from '../../src/mcp/config';
import { AuthorizationDeniedError, AuthorizationRequiredError } from '../../src/mcp/oauth';
import { McpServerHub } from '../../src/mcp/pool';
import { withCaller } from '../../src/mcp/user-token';
import { SealedFileOAuthStore } from '../../src/security/oauth-store';

const SEAL_KEY = 'oauth-test-seal-key-0123456789abcdef-xyz';

interface Grant {
  clientId: string;
  user: string;
  scopes: string[];
  resource?: string;
  expiresAt: number;
}

/** A small authorization server: consent is a query flag the test's "browser" sets. */
class TestAuthServer implements OAuthServerProvider {
  readonly clients = new Map<string, OAuthClientInformationFull>();
  readonly clientsStore: OAuthRegisteredClientsStore = {
    getClient: (id) => Promise.resolve(this.clients.get(id)),
    registerClient: (info) => {
      const full = { ...info, client_id: randomUUID(), client_id_issued_at: Math.floor(Date.now() / 1000) } as OAuthClientInformationFull;
      this.clients.set(full.client_id, full);
      return Promise.resolve(full);
    },
  };
  private readonly codes = new Map<string, { params: AuthorizationParams; clientId: string; user: string }>();
  readonly access = new Map<string, Grant>();
  readonly refresh = new Map<string, Grant>();
  /** Who consents next, or `deny`. */
  nextUser = 'alice';
  accessTtlMs = 3_600_000;
  refreshCount = 0;

  authorize(client: OAuthClientInformationFull, params: AuthorizationParams, res: ExpressResponse): Promise<void> {
    const back = new URL(params.redirectUri);
    if (params.state) back.searchParams.set('state', params.state);
    if (this.nextUser === 'deny') {
      back.searchParams.set('error', 'access_denied');
    } else {
      const code = randomUUID();
      this.codes.set(code, { params, clientId: client.client_id, user: this.nextUser });
      back.searchParams.set('code', code);
    }
    res.redirect(back.toString());
    return Promise.resolve();
  }

  challengeForAuthorizationCode(_client: OAuthClientInformationFull, code: string): Promise<string> {
    const entry = this.codes.get(code);
    if (!entry) throw new InvalidGrantError('unknown code');
    return Promise.resolve(entry.params.codeChallenge);
  }

  exchangeAuthorizationCode(client: OAuthClientInformationFull, code: string, _verifier?: string, _redirect?: string, resource?: URL): Promise<OAuthTokens> {
    const entry = this.codes.get(code);
    if (!entry || entry.clientId !== client.client_id) throw new InvalidGrantError('unknown code');
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

  /** Revokes everything issued to a user (what an admin or the user does at the provider). */
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
    return { access_token: access, token_type: 'bearer', expires_in: Math.round(this.accessTtlMs / 1000), refresh_token: refresh, scope: base.scopes.join(' ') };
  }
}

let as: TestAuthServer;
let httpServer: Server;
let mcpUrl: string;
let callbackApp: FastifyInstance;
let callbackUrl: string;
let storeDir: string;
let store: SealedFileOAuthStore;
const hubs: McpServerHub[] = [];

async function listen(app: express.Express): Promise<{ server: Server; port: number }> {
  return await new Promise((resolve) => {
    const server = app.listen(0, '127.0.0.1', () => resolve({ server, port: (server.address() as AddressInfo).port }));
  });
}

beforeAll(async () => {
  as = new TestAuthServer();
  const app = express();
  // The port is known only once listening: routes read these when called.
  let base = '';
  const started = await listen(app);
  httpServer = started.server;
  base = `http://127.0.0.1:${started.port}`;
  mcpUrl = `${base}/mcp`;
  app.use(mcpAuthRouter({ provider: as, issuerUrl: new URL(base), resourceServerUrl: new URL(mcpUrl), scopesSupported: ['notes'] }));
  app.use(
    '/mcp',
    express.json(),
    requireBearerAuth({ verifier: as, resourceMetadataUrl: getOAuthProtectedResourceMetadataUrl(new URL(mcpUrl)), expectedResource: new URL(mcpUrl) }),
    async (req, res) => {
      // Stateless: one server and transport per request; the tool reports whom the token is for.
      const server = new McpServer({ name: 'protected-notes', version: '1.0.0' });
      server.registerTool('whoami', { description: 'Who the token is for' }, (extra) => ({
        content: [{ type: 'text', text: `you are ${String(extra.authInfo?.extra?.['user'])}` }],
      }));
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      res.on('close', () => void transport.close());
      await server.connect(transport);
      await transport.handleRequest(req, res, req.body);
    },
  );
  storeDir = mkdtempSync(path.join(os.tmpdir(), 'dmh-oauth-'));
  store = new SealedFileOAuthStore(storeDir, SEAL_KEY);
  callbackApp = Fastify();
  await callbackApp.register(oauthCallbackRoutes, { store });
  const address = await callbackApp.listen({ port: 0, host: '127.0.0.1' });
  callbackUrl = `${address}/v1/oauth/callback`;
});

afterAll(async () => {
  await Promise.all(hubs.map((h) => h.close()));
  await callbackApp?.close();
  await new Promise((resolve) => httpServer?.close(resolve));
  rmSync(storeDir, { recursive: true, force: true });
});

function newHub(): McpServerHub {
  const config = parseMcpConfig({ mcpServers: { notes: { url: mcpUrl, transport: 'streamable-http', auth: { type: 'oauth' } } } }, {}, os.tmpdir(), 'test');
  const hub = new McpServerHub(config, { oauth: { store, redirectUrl: callbackUrl, clientName: 'durable-mcp-host' } });
  hubs.push(hub);
  return hub;
}

const whoami = (hub: McpServerHub, user: string) =>
  withCaller({ principal: user }, () => hub.callTool({ server: 'notes', tool: 'whoami', arguments: {} }));

async function authorizationNeeded(hub: McpServerHub, user: string): Promise<string> {
  const error = await whoami(hub, user).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AuthorizationRequiredError);
  return (error as AuthorizationRequiredError).authorizationUrl;
}

/** The user's browser: the authorization page, then the redirect to the host's callback page. */
async function consent(authorizationUrl: string): Promise<{ status: number; page: string }> {
  const atServer = await fetch(authorizationUrl, { redirect: 'manual' });
  const location = atServer.headers.get('location');
  expect(location?.startsWith(callbackUrl)).toBe(true);
  const back = await fetch(location as string);
  return { status: back.status, page: await back.text() };
}

test('first use asks for authorization; after consent the next attempt acts for that user, and the URL is offered again until then', async () => {
  const hub = newHub();
  const url = await authorizationNeeded(hub, 'acme:alice');
  const authUrl = new URL(url);
  expect(authUrl.searchParams.get('code_challenge_method')).toBe('S256');
  expect(authUrl.searchParams.get('resource')).toBe(mcpUrl);
  expect(authUrl.searchParams.get('redirect_uri')).toBe(callbackUrl);
  // Until the user comes back, the same authorization is offered, not a new one.
  expect(await authorizationNeeded(hub, 'acme:alice')).toBe(url);

  as.nextUser = 'alice';
  const back = await consent(url);
  expect(back.status).toBe(200);
  expect(back.page).toContain('Authorized');
  expect((await whoami(hub, 'acme:alice')).text).toBe('you are alice');
  // The callback cannot be replayed.
  expect((await fetch(`${callbackUrl}?state=${authUrl.searchParams.get('state') ?? ''}&code=again`)).status).toBe(400);

  // Tokens are at rest sealed: no file holds a token in the clear.
  const [grant] = [...as.access.keys()];
  for (const file of readdirSync(storeDir)) expect(readFileSync(path.join(storeDir, file), 'utf8')).not.toContain(grant);
});

test("another user gets their own authorization and connection; neither sees the other's identity", async () => {
  const hub = newHub();
  const url = await authorizationNeeded(hub, 'acme:bob');
  as.nextUser = 'bob';
  await consent(url);
  expect((await whoami(hub, 'acme:bob')).text).toBe('you are bob');
  expect((await whoami(hub, 'acme:alice')).text).toBe('you are alice');
});

test('an expired access token is refreshed once, even for concurrent calls, and a new hub (a restarted worker) reuses the stored tokens', async () => {
  const hub = newHub();
  as.expireAccess();
  const before = as.refreshCount;
  const results = await Promise.all([whoami(hub, 'acme:alice'), whoami(hub, 'acme:alice'), whoami(hub, 'acme:alice')]);
  expect(results.map((r) => r.text)).toEqual(['you are alice', 'you are alice', 'you are alice']);
  expect(as.refreshCount - before).toBe(1);
  expect((await whoami(newHub(), 'acme:alice')).text).toBe('you are alice');
});

test('revocation or an expired refresh token sends the user back to authorize; a refused consent is reported as such', async () => {
  const hub = newHub();
  as.revokeUser('alice');
  const url = await authorizationNeeded(hub, 'acme:alice');
  as.nextUser = 'deny';
  const back = await consent(url);
  expect(back.page).toContain('refused');
  const denied = await whoami(hub, 'acme:alice').then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(denied).toBeInstanceOf(AuthorizationDeniedError);
  expect(String((denied as Error).message)).toContain('access_denied');

  // After a refusal the next try starts over; this time the user agrees.
  const again = await authorizationNeeded(hub, 'acme:alice');
  expect(again).not.toBe(url);
  as.nextUser = 'alice';
  await consent(again);
  expect((await whoami(hub, 'acme:alice')).text).toBe('you are alice');

  as.expireAccess();
  as.expireRefresh();
  await authorizationNeeded(hub, 'acme:alice');
});

test('the callback refuses unknown states and names nothing secret', async () => {
  const res = await fetch(`${callbackUrl}?state=nope&code=abc`);
  expect(res.status).toBe(400);
  expect(await res.text()).toContain('unknown, expired or already used');
  expect((await fetch(callbackUrl)).status).toBe(400);
});

test('a token for another resource (wrong audience) is refused by the server and never loops: the call fails after bounded attempts', async () => {
  const hub = newHub();
  const url = await authorizationNeeded(hub, 'acme:carol');
  as.nextUser = 'carol';
  await consent(url);
  expect((await whoami(hub, 'acme:carol')).text).toBe('you are carol');
  for (const map of [as.access, as.refresh]) for (const grant of map.values()) if (grant.user === 'carol') grant.resource = 'https://other.example/mcp';
  const before = as.refreshCount;
  const error = await whoami(hub, 'acme:carol').then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(Error);
  expect(as.refreshCount - before).toBeLessThanOrEqual(3);
});
