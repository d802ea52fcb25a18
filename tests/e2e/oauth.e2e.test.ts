/**
 * A remote MCP server behind OAuth, through whole turns: the real worker, API and Temporal, and the
 * example authorization server (examples/servers/protected-server.ts). The host's listing is
 * authorized once (the link is in /v1/servers); a user's first call pauses the turn with an
 * `authorization_required` event; the worker is SIGKILLed while the turn waits; the user consents in
 * "the browser" (fetch, consent page included), the API's callback resumes the turn, and the call
 * runs for that user exactly once. The next turn needs nothing, and one after the access token expired
 * refreshes it. No token reaches the history, and no token, code or PKCE verifier the flows used
 * reaches the worker's or the API's log.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import type { DemoRules } from '../../src/demo-model/rules';
import { startProtectedServer, type ProtectedServer } from '../../examples/servers/protected-server';
import type { ManagedProcess } from '../../src/cli/processes';
import { oauthKeys, type PendingAuthorization, SealedFileOAuthStore } from '../../src/security/oauth-store';
import { getJson, postMessage, readSse, waitFor } from '../helpers/http';
import { EXAMPLE_RULES, startSystem, type TestSystem } from '../helpers/system';

const SEAL_KEY = 'oauth-e2e-seal-key-0123456789abcdef-xyz';

let sys: TestSystem;
let remote: ProtectedServer;
/** Every worker of the run, the SIGKILLed one too: their logs are scanned for secrets at the end. */
const workers: ManagedProcess[] = [];
/** The real secrets of the flows below: tokens as issued, codes as redirected, verifiers as stored. */
const secrets = { tokens: new Set<string>(), codes: new Set<string>(), verifiers: new Set<string>() };

beforeAll(async () => {
  remote = await startProtectedServer();
  // Tokens as the authorization server issues them (a refresh token is gone from its maps once used).
  const auth = remote.auth;
  const keep = <T extends { access_token: string; refresh_token?: string }>(tokens: T): T => {
    for (const token of [tokens.access_token, tokens.refresh_token]) if (token) secrets.tokens.add(token);
    return tokens;
  };
  const exchangeCode = auth.exchangeAuthorizationCode.bind(auth);
  const exchangeRefresh = auth.exchangeRefreshToken.bind(auth);
  auth.exchangeAuthorizationCode = async (...args) => keep(await exchangeCode(...args));
  auth.exchangeRefreshToken = async (...args) => keep(await exchangeRefresh(...args));
  const base = JSON.parse(readFileSync(EXAMPLE_RULES, 'utf8')) as DemoRules;
  const rules: DemoRules = {
    ...base,
    scripts: [
      {
        name: 'private-note',
        match: '(?i)^save privately (.+)$',
        steps: [{ toolCalls: [{ name: 'private__add_private_note', arguments: { text: '{{match.1}}' } }] }, { text: 'Private: {{tool:private__add_private_note}}' }],
      },
      {
        name: 'private-list',
        match: '(?i)^my private notes$',
        steps: [{ toolCalls: [{ name: 'private__list_private_notes', arguments: {} }] }, { text: 'Yours: {{tool:private__list_private_notes}}' }],
      },
      ...(base.scripts ?? []),
    ],
  };
  sys = await startSystem({
    rules,
    tokenSealKey: SEAL_KEY,
    // Everything either process logs, at its most talkative, is scanned for secrets at the end.
    workerEnv: { LOG_LEVEL: 'debug' },
    captureApiLog: true,
    extraServers: { private: { url: remote.mcpUrl, transport: 'streamable-http', auth: { type: 'oauth' } } },
  });
  workers.push(sys.worker);
}, 120_000);

afterAll(async () => {
  await sys?.stop();
  await remote?.close();
});

/** The user's browser: the consent page, the answer, the redirect to the host's callback page. */
async function consent(authorizationUrl: string, user: string): Promise<string> {
  // The PKCE verifier, as the worker stored it for this authorization (sealed, in the shared store).
  const state = new URL(authorizationUrl).searchParams.get('state') ?? '';
  const pending = await new SealedFileOAuthStore(path.join(sys.dir, 'oauth'), SEAL_KEY).get<PendingAuthorization>(oauthKeys.pending(state));
  if (!pending?.codeVerifier) throw new Error(`no pending authorization for state ${state}`);
  secrets.verifiers.add(pending.codeVerifier);
  const page = await (await fetch(authorizationUrl)).text();
  const request = /data-request="([^"]+)"/.exec(page)?.[1];
  if (!request) throw new Error(`no consent form in: ${page.slice(0, 200)}`);
  const answer = await fetch(`${remote.url}/consent?request=${request}&user=${user}&allow=1`, { redirect: 'manual' });
  const callback = answer.headers.get('location');
  if (!callback?.startsWith(`${sys.apiUrl}/v1/oauth/callback?`)) throw new Error(`unexpected redirect: ${String(callback)}`);
  secrets.codes.add(new URL(callback).searchParams.get('code') ?? '');
  const back = await fetch(callback);
  expect(back.status).toBe(200);
  return await back.text();
}

test("the host's listing is authorized once from the link in /v1/servers", async () => {
  const servers = await getJson(`${sys.apiUrl}/v1/servers`);
  const status = servers.body.servers.find((s: { server: string }) => s.server === 'private');
  expect(status).toMatchObject({ state: 'unavailable', error: 'needs authorization' });
  expect(new URL(status.authorizationUrl as string).searchParams.get('resource')).toBe(remote.mcpUrl);
  expect(await consent(status.authorizationUrl as string, 'operator')).toContain('Authorized');
  const tools = await waitFor(async () => {
    const listed = await getJson(`${sys.apiUrl}/v1/tools`);
    const names = (listed.body.tools as Array<{ name: string }>).map((t) => t.name);
    return names.includes('private__add_private_note') ? names : undefined;
  }, 15_000);
  expect(tools).toEqual(expect.arrayContaining(['private__whoami', 'private__list_private_notes']));
});

test("a user's first call waits for their consent across a worker SIGKILL, then runs once, for them", async () => {
  const post = await postMessage(sys.apiUrl, 'oauth', 'save privately the vault code is in the blue book');
  expect(post.status).toBe(202);
  const seen = await readSse(`${sys.apiUrl}/v1/turns/${post.body.turnId}/events`, { stopAfter: (e) => e.event === 'authorization_required', timeoutMs: 60_000 });
  const asked = seen.find((e) => e.event === 'authorization_required');
  expect(asked?.data).toMatchObject({ server: 'private', name: 'private__add_private_note' });
  const url = asked?.data.authorizationUrl as string;
  expect(new URL(url).searchParams.get('code_challenge_method')).toBe('S256');

  await sys.worker.kill();
  sys.worker = await sys.startWorker();
  workers.push(sys.worker);
  expect(await consent(url, 'ada')).toContain('Authorized');

  const events = await readSse(`${sys.apiUrl}/v1/turns/${post.body.turnId}/events`, { timeoutMs: 90_000 });
  expect(events.at(-1)?.event).toBe('done');
  expect(events.find((e) => e.event === 'authorization_completed')?.data).toMatchObject({ server: 'private', outcome: 'authorized' });
  const turn = (await getJson(`${sys.apiUrl}/v1/turns/${post.body.turnId}`)).body;
  expect(turn.text).toBe('Private: saved for ada');

  // The next turn needs no consent; the note was saved once, under the user who consented.
  const next = await postMessage(sys.apiUrl, 'oauth', 'my private notes');
  const nextEvents = await readSse(`${sys.apiUrl}/v1/turns/${next.body.turnId}/events`, { timeoutMs: 60_000 });
  expect(nextEvents.some((e) => e.event === 'authorization_required')).toBe(false);
  expect((await getJson(`${sys.apiUrl}/v1/turns/${next.body.turnId}`)).body.text).toBe('Yours: ["the vault code is in the blue book"]');

  // No access or refresh token, and no code, in the turn's history.
  const history = historyToJSON(await sys.client.workflow.getHandle(post.body.turnId).fetchHistory());
  for (const token of [...remote.auth.access.keys(), ...remote.auth.refresh.keys()]) expect(history).not.toContain(token);
  expect(history).not.toMatch(/[?&]code=/);
});

test("no token, authorization code or PKCE verifier of these flows is in the worker's or the API's log", async () => {
  // One more turn after the access tokens expired: a refresh, with its tokens, is logged about too.
  remote.auth.expireAccess();
  const refreshesBefore = remote.auth.refreshCount;
  const post = await postMessage(sys.apiUrl, 'oauth', 'my private notes');
  const events = await readSse(`${sys.apiUrl}/v1/turns/${post.body.turnId}/events`, { timeoutMs: 60_000 });
  expect(events.at(-1)?.event).toBe('done');
  expect(remote.auth.refreshCount).toBeGreaterThan(refreshesBefore);

  // The listing's and the user's authorizations, each with its code, and the tokens of both plus a refresh.
  expect(secrets.verifiers.size).toBe(2);
  expect([...secrets.codes].filter(Boolean)).toHaveLength(2);
  expect(secrets.tokens.size).toBeGreaterThanOrEqual(6);
  const clientSecrets = [...remote.auth.clients.values()].flatMap((c) => (c.client_secret ? [c.client_secret] : []));
  const logs = { api: sys.apiLog(), ...Object.fromEntries(workers.map((w, i) => [`worker ${i + 1}`, w.output()])) };
  // The logs are there and whole: both workers', the callback requests, nothing cut off.
  expect(workers).toHaveLength(2);
  expect(logs.api).toContain('/v1/oauth/callback');
  for (const w of workers) expect(w.output().length).toBeLessThan(200_000);
  for (const [name, log] of Object.entries(logs)) {
    expect(log.length).toBeGreaterThan(0);
    for (const secret of [...secrets.tokens, ...secrets.codes, ...secrets.verifiers, ...clientSecrets]) {
      if (log.includes(secret)) throw new Error(`the ${name} log contains a secret of the OAuth flow: ${secret.slice(0, 6)}…`);
    }
  }
});
