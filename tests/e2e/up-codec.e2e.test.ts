/**
 * `npm start` with payload keys: the dev server's web UI is given the API's codec server, and the
 * browser's path works end to end. An admin signed in to the console holds the codec cookie; the UI
 * (its origin, with credentials) posts a turn's history payloads, as the UI's own HTTP API returns
 * them (sealed), to /v1/codec/decode and gets the user's text back. Without the cookie: 401.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DEMO_USERS, requireBuild } from '../helpers/system';
import { startLauncher } from '../helpers/launcher';
import { mintDevToken } from '../../src/api/auth';
import { bearer, postMessage, readSse } from '../helpers/http';
import type { ManagedProcess } from '../../src/cli/processes';

let dir: string;
let up: ManagedProcess | undefined;
beforeAll(() => {
  requireBuild();
  dir = mkdtempSync(path.join(tmpdir(), 'dmh-up-codec-'));
});
afterAll(async () => {
  await up?.stop(30_000);
  rmSync(dir, { recursive: true, force: true });
});

type JsonPayload = { metadata: Record<string, string>; data: string };

test('the Temporal UI reads a sealed history decoded through the API, for a signed-in admin only', async () => {
  const started = await startLauncher(path.join(dir, 'data'), { PAYLOAD_KEYS: `local-1:${randomBytes(32).toString('base64')}` });
  up = started.up;
  const apiUrl = started.apiUrl;
  const ready = up.output().split('\n').map((l) => (l.startsWith('{') ? (JSON.parse(l) as Record<string, string>) : {})).find((l) => l.msg === 'Durable MCP host is up');
  const uiUrl = ready?.temporalUi ?? '';
  expect(ready?.payloads).toMatch(/^sealed under key local-1/);

  // The dev server's UI was started with the codec endpoint.
  const settings = (await (await fetch(`${uiUrl}/api/v1/settings`)).json()) as { Codec?: { Endpoint?: string } };
  expect(settings.Codec?.Endpoint).toBe(`${apiUrl}/v1/codec`);

  const secret = readFileSync(path.join(dir, 'data', 'dev-jwt-secret'), 'utf8').trim();
  const admin = DEMO_USERS.admin;
  const token = await mintDevToken({ secret, sub: admin.sub, role: admin.role, tenant: admin.tenant, scopes: [...admin.scopes] });
  const text = `remember that the gate code is ${randomBytes(4).toString('hex')}`;
  const post = await postMessage(apiUrl, 'codec', text, bearer(token));
  expect(post.status).toBe(202);
  await readSse(`${apiUrl}${post.body.eventsUrl as string}`, { headers: bearer(token), timeoutMs: 60_000 });

  // What the UI fetches: the turn's first event, its input sealed.
  const history = (await (await fetch(`${uiUrl}/api/v1/namespaces/default/workflows/${encodeURIComponent(post.body.turnId)}/history`)).json()) as {
    history: { events: Array<{ workflowExecutionStartedEventAttributes?: { input?: { payloads: JsonPayload[] } } }> };
  };
  const payloads = history.history.events[0]?.workflowExecutionStartedEventAttributes?.input?.payloads ?? [];
  expect(payloads.length).toBe(1);
  expect(Buffer.from(payloads[0]!.data, 'base64').toString('latin1')).not.toContain(text);

  // The console's sign-in sets the cookie; the UI sends it (same site) with its origin.
  const session = await fetch(`${apiUrl}/v1/codec/session`, { method: 'POST', headers: bearer(token) });
  expect(session.status).toBe(200);
  const cookie = (session.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
  const decode = (headers: Record<string, string>) =>
    fetch(`${apiUrl}/v1/codec/decode`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-namespace': 'default', origin: uiUrl, ...headers },
      body: JSON.stringify({ payloads }),
    });
  const res = await decode({ cookie });
  expect(res.status).toBe(200);
  expect(res.headers.get('access-control-allow-origin')).toBe(uiUrl);
  const [decoded] = ((await res.json()) as { payloads: JsonPayload[] }).payloads;
  expect(Buffer.from(decoded!.data, 'base64').toString('utf8')).toContain(text);
  expect((await decode({})).status).toBe(401);
}, 180_000);
