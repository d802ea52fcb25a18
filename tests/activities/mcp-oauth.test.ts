/**
 * User OAuth through the worker's pool against a real authorization server and a protected MCP server
 * (examples/servers/protected-server.ts, on the SDK's server-side OAuth). The user's browser is played
 * by fetch, consent page included; the API's callback route is the real one (on a bare Fastify). Covers
 * first use, consent, the code exchange on the next attempt, refresh (single-flight within a worker and
 * across two), revocation, a refused consent, an expired refresh token, a token for another resource,
 * tokens kept apart per user, and a code sent back in another issuer's name (RFC 9207).
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import { startProtectedServer, type ExampleAuthServer, type ProtectedServer } from '../../examples/servers/protected-server';
import { oauthCallbackRoutes } from '../../src/api/routes/oauth-callback';
import { parseMcpConfig } from '../../src/mcp/config';
import { AuthorizationDeniedError, AuthorizationRequiredError } from '../../src/mcp/oauth';
import { McpServerHub } from '../../src/mcp/pool';
import { withCaller } from '../../src/mcp/user-token';
import { MemoryOAuthStore, SealedFileOAuthStore } from '../../src/security/oauth-store';

const SEAL_KEY = 'oauth-test-seal-key-0123456789abcdef-xyz';

let as: ExampleAuthServer;
let protectedServer: ProtectedServer;
let mcpUrl: string;
let callbackApp: FastifyInstance;
let callbackUrl: string;
let storeDir: string;
let store: SealedFileOAuthStore;
const hubs: McpServerHub[] = [];

beforeAll(async () => {
  protectedServer = await startProtectedServer();
  as = protectedServer.auth;
  mcpUrl = protectedServer.mcpUrl;
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
  await protectedServer?.close();
  rmSync(storeDir, { recursive: true, force: true });
});

/** A worker's hub; another worker process would have its own store object on the same directory. */
function newHub(hubStore: SealedFileOAuthStore = store): McpServerHub {
  const config = parseMcpConfig({ mcpServers: { notes: { url: mcpUrl, transport: 'streamable-http', auth: { type: 'oauth' } } } }, {}, os.tmpdir(), 'test');
  const hub = new McpServerHub(config, { oauth: { store: hubStore, redirectUrl: callbackUrl, clientName: 'durable-mcp-host' } });
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

/** The user's browser: the consent page, the answer, then the redirect to the host's callback page. */
async function consent(authorizationUrl: string, user: string, allow = true, iss?: string): Promise<{ status: number; page: string }> {
  const page = await (await fetch(authorizationUrl)).text();
  const request = /data-request="([^"]+)"/.exec(page)?.[1];
  expect(request).toBeDefined();
  const answer = await fetch(`${protectedServer.url}/consent?request=${request as string}&user=${user}&allow=${allow ? 1 : 0}`, { redirect: 'manual' });
  const location = answer.headers.get('location');
  expect(location?.startsWith(callbackUrl)).toBe(true);
  // A mix-up attack's redirect: the code arrives named as another authorization server's.
  const back = await fetch(iss === undefined ? (location as string) : `${location as string}&iss=${encodeURIComponent(iss)}`);
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

  const back = await consent(url, 'alice');
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
  await consent(url, 'bob');
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

/**
 * Counts the refresh requests that reach the authorization server (refused ones too: the server
 * rotates refresh tokens, so a second concurrent refresh fails rather than counting as a success),
 * and holds each for a while, so that concurrent callers all see the expired token before any
 * refresh ends. Returns the count so far and puts the server back.
 */
function slowRefreshes(holdMs = 400): { attempts: () => number; restore: () => void } {
  let attempts = 0;
  const original = as.exchangeRefreshToken.bind(as);
  as.exchangeRefreshToken = async (...args) => {
    attempts++;
    await new Promise((r) => setTimeout(r, holdMs));
    return await original(...args);
  };
  return { attempts: () => attempts, restore: () => void (as.exchangeRefreshToken = original) };
}

/** Two workers' hubs connected for `user`, then their concurrent calls with the access token expired. */
async function concurrentCallsAfterExpiry(hubStores: SealedFileOAuthStore[], user: string) {
  const twoWorkers = hubStores.map((s) => newHub(s));
  // Connected first, so that every call below sends the expired token at once.
  for (const hub of twoWorkers) expect((await whoami(hub, user)).text).toBe(`you are ${user.split(':')[1] ?? '?'}`);
  as.expireAccess();
  const refreshes = slowRefreshes();
  try {
    const results = await Promise.allSettled(twoWorkers.flatMap((hub) => [whoami(hub, user), whoami(hub, user)]));
    return { results, attempts: refreshes.attempts() };
  } finally {
    refreshes.restore();
  }
}

test('two workers (two hubs, each with its own store object on one directory) refresh an expired token once between them', async () => {
  const { results, attempts } = await concurrentCallsAfterExpiry([store, new SealedFileOAuthStore(storeDir, SEAL_KEY)], 'acme:alice');
  expect(results.map((r) => (r.status === 'fulfilled' ? r.value.text : String(r.reason)))).toEqual(Array(4).fill('you are alice'));
  expect(attempts).toBe(1);
});

test('control: stores that lock only within their own process let both workers refresh (the test above can fail)', async () => {
  /** The file store without its lock file: what the cross-worker test would see if the lock were per process. */
  class ProcessLocalLocks extends SealedFileOAuthStore {
    private readonly local = new MemoryOAuthStore();
    override withLock<T>(key: string, fn: () => Promise<T>): Promise<T> {
      return this.local.withLock(key, fn);
    }
  }
  // A user of its own: the losing refresh spends a rotated token and may send them back to authorize.
  await consent(await authorizationNeeded(newHub(), 'acme:dave'), 'dave');
  const { attempts } = await concurrentCallsAfterExpiry([new ProcessLocalLocks(storeDir, SEAL_KEY), new ProcessLocalLocks(storeDir, SEAL_KEY)], 'acme:dave');
  expect(attempts).toBeGreaterThanOrEqual(2);
});

test('revocation or an expired refresh token sends the user back to authorize; a refused consent is reported as such', async () => {
  const hub = newHub();
  as.revokeUser('alice');
  const url = await authorizationNeeded(hub, 'acme:alice');
  const back = await consent(url, 'alice', false);
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
  await consent(again, 'alice');
  expect((await whoami(hub, 'acme:alice')).text).toBe('you are alice');

  as.expireAccess();
  as.expireRefresh();
  await authorizationNeeded(hub, 'acme:alice');
});

test("a code sent back in another issuer's name (RFC 9207 `iss`) is not exchanged; the next authorization is clean", async () => {
  const hub = newHub();
  const url = await authorizationNeeded(hub, 'acme:dave');
  expect((await consent(url, 'dave', true, 'https://elsewhere.test')).status).toBe(200);
  const refused: unknown = await whoami(hub, 'acme:dave').catch((e: unknown) => e);
  expect(refused).toBeInstanceOf(AuthorizationDeniedError);
  expect(String((refused as Error).message)).toContain('came from issuer "https://elsewhere.test"');
  const again = await authorizationNeeded(hub, 'acme:dave');
  expect(again).not.toBe(url);
  await consent(again, 'dave');
  expect((await whoami(hub, 'acme:dave')).text).toBe('you are dave');
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
  await consent(url, 'carol');
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
