import type { DemoRules } from '../../src/demo-model/rules';
import { bearer, getJson, postMessage, waitFor } from '../helpers/http';
import { startSystem, type TestSystem } from '../helpers/system';

/**
 * GET /v1/sessions on real parts (Temporal's visibility): the caller's sessions only, newest first,
 * paged with the cursor; a session whose workflow continued as new is listed once, with its newest run.
 */
const RULES: DemoRules = { model: 'demo-model', fallback: 'no script', scripts: [{ name: 'say', match: '^say (.+)$', steps: [{ text: 'you said {{match.1}}' }] }] };

let sys: TestSystem;
beforeAll(async () => {
  sys = await startSystem({ rules: RULES, servers: () => ({}), host: { sessions: { maxTurnsPerRun: 2 } } });
}, 120_000);
afterAll(async () => {
  await sys?.stop();
});

type Listed = { sessionId: string; open: boolean; lastMessage?: { role: string; preview: string; at: string }; messagesUrl: string };
const list = async (query = '', headers: Record<string, string> = {}) => (await getJson(`${sys.apiUrl}/v1/sessions${query}`, headers)).body as { sessions: Listed[]; nextCursor?: string };
const ids = (page: { sessions: Listed[] }) => page.sessions.map((s) => s.sessionId);

/** Sends `text` to `session` and waits until the session has answered it. */
async function say(session: string, text: string): Promise<void> {
  expect((await postMessage(sys.apiUrl, session, `say ${text}`)).status).toBe(202);
  await waitFor(async () => {
    const s = (await getJson(`${sys.apiUrl}/v1/sessions/${session}/messages`)).body;
    return s.messages?.at(-1)?.content === `you said ${text}` && !s.activeTurnId ? true : undefined;
  }, 60_000, 100);
}

test("the caller's sessions, newest first, each with its last message; paged; another user sees none of them", async () => {
  for (const s of ['list-a', 'list-b', 'list-c']) await say(s, `hello ${s}`);
  // Visibility lags a moment behind the workflows.
  const all = await waitFor(async () => {
    const page = await list();
    return page.sessions.length === 3 ? page : undefined;
  }, 30_000, 200);
  expect(ids(all)).toEqual(['list-c', 'list-b', 'list-a']);
  expect(all.nextCursor).toBeUndefined();
  expect(all.sessions[0]).toMatchObject({ sessionId: 'list-c', open: true, messagesUrl: '/v1/sessions/list-c/messages', lastMessage: { role: 'assistant', preview: 'you said hello list-c' } });

  const first = await list('?limit=2');
  expect(ids(first)).toEqual(['list-c', 'list-b']);
  expect(first.nextCursor).toEqual(expect.any(String));
  const second = await list(`?limit=2&cursor=${first.nextCursor}`);
  expect(ids(second)).toEqual(['list-a']);
  expect(second.nextCursor).toBeUndefined();

  const other = await list('', bearer(await sys.token('teacher')));
  expect(other).toEqual({ sessions: [] });
  const bad = await getJson(`${sys.apiUrl}/v1/sessions?cursor=${Buffer.from('o 2026-13-45T00:00:00.000Z').toString('base64url')}`);
  expect(bad.status).toBe(400);
  expect(bad.body.error).toMatchObject({ code: 'invalid_request', message: expect.stringContaining('cursor') });
});

test('a session that continued as new is listed once, first, with its newest message', async () => {
  // Two turns per run: the second one makes the session continue as new.
  await say('list-a', 'again');
  await say('list-a', 'and again');
  const page = await waitFor(async () => {
    const p = await list();
    return p.sessions[0]?.sessionId === 'list-a' && p.sessions[0].lastMessage?.preview === 'you said and again' ? p : undefined;
  }, 30_000, 200);
  expect(ids(page)).toEqual(['list-a', 'list-c', 'list-b']);
});
