/**
 * Renaming and deleting a session (decision 0037) through the HTTP routes, over the real gateway and
 * session index (in memory) with a fake Temporal client whose turns end at once with a fixed answer:
 * only the owner reaches a session (another user's is `404`, as for reads), titles are checked, and a
 * deleted session leaves the list and its reads and refuses messages with `409 session_deleted`.
 */
import { type Client, WorkflowNotFoundError } from '@temporalio/client';
import { buildApp } from '../../src/api/app';
import { createTemporalGateway } from '../../src/api/gateway';
import { memoryRateLimiters } from '../../src/api/rate-limits';
import { memorySessionIndex } from '../../src/api/sessions/index-store';
import type { SessionSettings } from '../../src/shared/session';
import type { TurnInput, TurnOptions, TurnState } from '../../src/shared/turn';
import { fakeAuth, openPolicy } from '../helpers/fake-auth';

const ALICE = { authorization: 'Bearer alice@demo' };
const BOB = { authorization: 'Bearer bob@demo' };
const json = { 'content-type': 'application/json' };

async function setup() {
  const started = new Map<string, TurnInput>();
  const client = {
    workflow: {
      // Visibility: no session began before the chain (decision 0048 lists them once).
      list: () => (async function* () {})(),
      start: async (_type: string, { workflowId, args }: { workflowId: string; args: [TurnInput] }) => {
        started.set(workflowId, args[0]);
      },
      getHandle: (id: string) => {
        const input = () => {
          const found = started.get(id);
          if (!found) throw new WorkflowNotFoundError('not found', id, undefined);
          return found;
        };
        return {
          describe: async () => (input(), { status: { name: 'COMPLETED' }, typedSearchAttributes: { get: () => undefined } }),
          result: async (): Promise<TurnState> => {
            const { turnId, sessionId, userText, user } = input();
            const at = new Date().toISOString();
            return { turnId, sessionId, ...(user ? { owner: { id: user.id, tenant: user.tenant } } : {}), userText, status: 'completed', text: `you said ${userText}`, toolCalls: [], events: [{ id: 1, type: 'done', at, data: {} }], steps: 1 };
          },
        };
      },
    },
  } as unknown as Client;
  const sessionSettings: SessionSettings = { history: { maxTokenCount: 800, summarizationThreshold: 600, retainNewestMessages: 2 }, maxQueuedTurns: 4, transcriptLimit: 50, maxTurnsPerRun: 50 };
  const gateway = createTemporalGateway({
    client,
    taskQueue: 'q',
    settings: () => ({ policy: openPolicy, turnOptions: {} as TurnOptions, contextByRole: {}, sessionSettings }),
    catalogCacheMs: 0,
    sessions: memorySessionIndex(),
  });
  const app = await buildApp({ gateway, auth: fakeAuth, policy: () => openPolicy, limiters: memoryRateLimiters({ userPerMinute: 1_000, tenantPerMinute: 1_000 }), maxMessageChars: 100, ssePollMs: 5 });
  const as = (headers: Record<string, string>) => ({
    get: (url: string) => app.inject({ method: 'GET', url, headers }),
    del: (url: string) => app.inject({ method: 'DELETE', url, headers }),
    patch: (url: string, body: unknown) => app.inject({ method: 'PATCH', url, headers: { ...headers, ...json }, payload: typeof body === 'string' ? body : JSON.stringify(body) }),
    say: (session: string, text: string) => app.inject({ method: 'POST', url: `/v1/sessions/${session}/messages`, headers: { ...headers, ...json }, payload: JSON.stringify({ text }) }),
  });
  return { app, alice: as(ALICE), bob: as(BOB), started };
}

test('the owner titles a session: the list, the session and its messages show the title (null before); a new title replaces it', async () => {
  const { alice } = await setup();
  expect((await alice.say('trip', 'hello')).statusCode).toBe(202);
  expect((await alice.get('/v1/sessions')).json().sessions).toEqual([expect.objectContaining({ sessionId: 'trip', title: null })]);
  expect((await alice.get('/v1/sessions/trip/messages')).json()).toMatchObject({ sessionId: 'trip', title: null });

  const renamed = await alice.patch('/v1/sessions/trip', { title: '  Trip to Lyon  ' });
  expect(renamed.statusCode).toBe(200);
  expect(renamed.json()).toEqual({ sessionId: 'trip', title: 'Trip to Lyon', startedAt: expect.any(String), lastAt: expect.any(String), messagesUrl: '/v1/sessions/trip/messages' });
  expect((await alice.get('/v1/sessions')).json().sessions).toEqual([
    expect.objectContaining({ sessionId: 'trip', title: 'Trip to Lyon', lastMessage: expect.objectContaining({ preview: 'you said hello' }) }),
  ]);
  expect((await alice.get('/v1/sessions/trip')).json()).toEqual(renamed.json());
  expect((await alice.get('/v1/sessions/trip/messages')).json()).toMatchObject({ title: 'Trip to Lyon', messages: [{ content: 'hello' }, { content: 'you said hello' }] });
  expect((await alice.patch('/v1/sessions/trip', { title: 'Lyon, day 2' })).json()).toMatchObject({ title: 'Lyon, day 2' });
});

test("another user's session is 404 to GET, PATCH and DELETE, and stays as it was", async () => {
  const { alice, bob } = await setup();
  await alice.say('mine', 'hello');
  await alice.patch('/v1/sessions/mine', { title: 'Mine' });
  for (const res of [await bob.get('/v1/sessions/mine'), await bob.patch('/v1/sessions/mine', { title: 'Taken' }), await bob.del('/v1/sessions/mine')]) {
    expect(res.statusCode).toBe(404);
    expect(res.json().error).toEqual({ code: 'not_found', message: 'session mine not found' });
  }
  expect((await alice.get('/v1/sessions/mine')).json()).toMatchObject({ title: 'Mine' });
  // A session nobody has: the same answer.
  expect((await alice.patch('/v1/sessions/nobody', { title: 'x' })).statusCode).toBe(404);
  expect((await alice.del('/v1/sessions/nobody')).statusCode).toBe(404);
});

test('a title must be one line of 1..200 characters after trimming, in a JSON body with nothing else', async () => {
  const { alice } = await setup();
  await alice.say('s', 'hello');
  const refusals: Array<[unknown, RegExp]> = [
    [{}, /body: title/],
    [{ title: '   ' }, /title: must not be blank/],
    [{ title: 'x'.repeat(201) }, /title: must be at most 200 characters/],
    [{ title: 'two\nlines' }, /title: must be one line/],
    [{ title: 42 }, /title/],
    [{ title: 'ok', extra: true }, /extra/],
  ];
  for (const [body, message] of refusals) {
    const res = await alice.patch('/v1/sessions/s', body);
    expect({ body, status: res.statusCode, code: res.json().error?.code }).toEqual({ body, status: 400, code: 'invalid_request' });
    expect(res.json().error.message).toMatch(message);
  }
  expect((await alice.patch('/v1/sessions/s', '{"title":')).json().error.code).toBe('invalid_json');
  expect((await alice.patch('/v1/sessions/bad%20id', { title: 'x' })).statusCode).toBe(400);
  expect((await alice.patch('/v1/sessions/s', { title: ` ${'y'.repeat(200)} ` })).json().title).toBe('y'.repeat(200));
  expect((await alice.get('/v1/sessions/s')).json().title).toBe('y'.repeat(200));
});

test('a deleted session leaves the list and its reads (404), refuses messages with 409 session_deleted and starts nothing; the others stay', async () => {
  const { alice, bob, started } = await setup();
  await alice.say('keep', 'one');
  await alice.say('gone', 'two');
  await bob.say('gone', 'bob has his own');
  const del = await alice.del('/v1/sessions/gone');
  expect(del.statusCode).toBe(204);
  expect(del.body).toBe('');
  expect((await alice.get('/v1/sessions')).json().sessions.map((s: { sessionId: string }) => s.sessionId)).toEqual(['keep']);
  for (const url of ['/v1/sessions/gone', '/v1/sessions/gone/messages']) expect((await alice.get(url)).statusCode).toBe(404);
  expect((await alice.del('/v1/sessions/gone')).statusCode).toBe(404);
  expect((await alice.patch('/v1/sessions/gone', { title: 'Back?' })).statusCode).toBe(404);

  const turns = started.size;
  const post = await alice.say('gone', 'are you there?');
  expect(post.statusCode).toBe(409);
  expect(post.json().error).toEqual({ code: 'session_deleted', message: expect.stringContaining('start a new session') });
  expect(started.size).toBe(turns);

  // Bob's session of the same name, and Alice's other one, go on.
  expect((await bob.get('/v1/sessions/gone/messages')).json().messages.map((m: { content: string }) => m.content)).toEqual(['bob has his own', 'you said bob has his own']);
  expect((await alice.say('keep', 'still here')).statusCode).toBe(202);
});
