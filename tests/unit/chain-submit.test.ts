import type { Client } from '@temporalio/client';
import { createTemporalGateway, ownerKey as ownerKeyOf } from '../../src/api/gateway';
import { sessionWorkflowId } from '../../src/shared/ids';
import { type LinkEnd, memorySessionIndex } from '../../src/api/sessions/index-store';
import type { ChainInput, SessionSettings } from '../../src/shared/session';
import type { TurnMemory, TurnOptions } from '../../src/shared/turn';

const user = { id: 'ada', role: 'teacher', tenant: 'demo', scopes: [] };
const owner = { id: user.id, tenant: user.tenant };
const sessionSettings: SessionSettings = { history: { maxTokenCount: 800, summarizationThreshold: 600, retainNewestMessages: 2 }, maxQueuedTurns: 4, transcriptLimit: 50, maxTurnsPerRun: 50 };

/** A gateway over a Temporal that counts describes (every turn in it still runs) and records starts. */
async function setup(
  endSeen?: (turnId: string) => LinkEnd | undefined,
  opts: { links?: string[]; maxQueuedTurns?: number; modelByRole?: Record<string, string>; handedOn?: (turnId: string) => TurnMemory | undefined; carriers?: string[] } = {},
) {
  const index = memorySessionIndex();
  for (const id of opts.links ?? ['turn-s-a']) await index.append(owner, 's', id, new Date().toISOString(), 8);
  const described: string[] = [];
  const started: Array<{ workflowId: string; args: Array<{ chain?: ChainInput; options?: TurnOptions }> }> = [];
  const listed: string[] = [];
  const client = {
    workflow: {
      // Visibility: the sessions begun before the chain (decision 0041's carriers).
      list: ({ query }: { query: string }) => {
        listed.push(query);
        return (async function* () {
          for (const workflowId of opts.carriers ?? []) yield { workflowId };
        })();
      },
      getHandle: (id: string) => ({
        describe: async () => {
          described.push(id);
          return { status: { name: 'RUNNING' } };
        },
      }),
      start: async (_type: string, options: (typeof started)[number]) => {
        started.push(options);
      },
    },
  } as unknown as Client;
  const gateway = createTemporalGateway({
    client,
    taskQueue: 'q',
    settings: () => ({ policy: { roles: {}, toolScopes: {} }, turnOptions: { context: { resources: [], prompts: [] } } as unknown as TurnOptions, contextByRole: {}, ...(opts.modelByRole ? { modelByRole: opts.modelByRole } : {}), sessionSettings: { ...sessionSettings, maxQueuedTurns: opts.maxQueuedTurns ?? sessionSettings.maxQueuedTurns } }),
    catalogCacheMs: 0,
    sessions: index,
    ...(endSeen ? { endSeen } : {}),
    ...(opts.handedOn ? { handedOn: opts.handedOn } : {}),
  });
  return { gateway, index, described, started, listed };
}

test('a message behind a turn whose end the API heard reads nothing of that turn from Temporal, and the index keeps the end', async () => {
  const { gateway, index, described, started } = await setup((turnId) => (turnId === 'turn-s-a' ? 'completed' : undefined));
  const outcome = await gateway.submitMessage({ turnId: 'turn-s-b', sessionId: 's', text: 'hi', user });
  expect(outcome).toEqual({ kind: 'accepted', created: true, position: 0, waitingOn: [] });
  expect(described).toEqual([]);
  expect(started.map((s) => [s.workflowId, s.args[0]?.chain?.after])).toEqual([['turn-s-b', ['turn-s-a']]]);
  expect((await index.links(owner, 's', 10)).map((l) => [l.turnId, l.ended])).toEqual([
    ['turn-s-a', 'completed'],
    ['turn-s-b', undefined],
  ]);
});

test('the memory the nearest turn before handed on goes into the new turn\'s input; none heard, none given', async () => {
  const memory: TurnMemory = { summary: 'they met', messages: [{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'hello' }] };
  const heard = new Map([['turn-s-b', memory]]);
  const { gateway, started } = await setup((turnId) => (turnId === 'turn-s-a' || heard.has(turnId) ? 'completed' : undefined), { handedOn: (turnId) => heard.get(turnId) });
  // The first turn's memory was not heard: the new turn reads it from Temporal.
  await gateway.submitMessage({ turnId: 'turn-s-b', sessionId: 's', text: 'hi', user });
  await gateway.submitMessage({ turnId: 'turn-s-c', sessionId: 's', text: 'again', user });
  expect(started.map((s) => [s.workflowId, s.args[0]?.chain?.after, s.args[0]?.chain?.handedOn])).toEqual([
    ['turn-s-b', ['turn-s-a'], undefined],
    ['turn-s-c', ['turn-s-b', 'turn-s-a'], { turnId: 'turn-s-b', memory }],
  ]);
});

test('without a heard end the turn before is described, and a running one is waited on', async () => {
  const { gateway, described } = await setup(() => undefined);
  const outcome = await gateway.submitMessage({ turnId: 'turn-s-b', sessionId: 's', text: 'hi', user });
  expect(outcome).toEqual({ kind: 'accepted', created: true, position: 1, waitingOn: ['turn-s-a'] });
  expect(described).toEqual(['turn-s-a']);
});

test('a full session queue is busy: as many turns ahead as the queue holds, none ended; nothing is appended or started', async () => {
  const { gateway, index, started } = await setup(undefined, { links: ['turn-s-a', 'turn-s-b'], maxQueuedTurns: 1 });
  await expect(gateway.submitMessage({ turnId: 'turn-s-c', sessionId: 's', text: 'hi', user })).resolves.toEqual({ kind: 'busy' });
  expect((await index.links(owner, 's', 10)).map((l) => l.turnId)).toEqual(['turn-s-a', 'turn-s-b']);
  expect(started).toEqual([]);
});

test("a new turn's input carries the model the host config names for the caller's role; other roles name none", async () => {
  const { gateway, started } = await setup(() => 'completed', { modelByRole: { teacher: 'claude', student: 'local' } });
  await gateway.submitMessage({ turnId: 'turn-s-b', sessionId: 's', text: 'hi', user });
  await gateway.submitMessage({ turnId: 'turn-s-c', sessionId: 's', text: 'hi', user: { ...user, role: 'parent' } });
  expect(started.map((s) => [s.workflowId, s.args[0]?.options?.model])).toEqual([
    ['turn-s-b', 'claude'],
    ['turn-s-c', undefined],
  ]);
  expect(started[1]?.args[0]?.options).not.toHaveProperty('model');
});

test("a new session's first turn reaches back only when its id holds a session begun before the chain, listed once", async () => {
  const carrier = sessionWorkflowId(ownerKeyOf(owner), 'old');
  const { gateway, started, listed } = await setup(undefined, { links: [], carriers: [carrier] });
  await gateway.submitMessage({ turnId: 'turn-new-a', sessionId: 'new', text: 'hi', user });
  await gateway.submitMessage({ turnId: 'turn-old-a', sessionId: 'old', text: 'hi again', user });
  // A new session's first turn is told it is one (it reads nothing); the one begun before reads its carrier.
  expect(started.map((s) => [s.workflowId, s.args[0]?.chain])).toEqual([
    ['turn-new-a', expect.objectContaining({ after: [], first: true })],
    ['turn-old-a', expect.objectContaining({ after: [], legacySession: carrier })],
  ]);
  expect(started[0]?.args[0]?.chain?.legacySession).toBeUndefined();
  expect(started[1]?.args[0]?.chain?.first).toBeUndefined();
  // A second message of the new session is not a first turn.
  await gateway.submitMessage({ turnId: 'turn-new-b', sessionId: 'new', text: 'and again', user });
  expect(started[2]?.args[0]?.chain).toEqual(expect.objectContaining({ after: ['turn-new-a'] }));
  expect(started[2]?.args[0]?.chain?.first).toBeUndefined();
  // Carriers and the session workflows the migration missed, by type; read once for the process.
  expect(listed).toEqual(["WorkflowType = 'sessionMemoryWorkflow' OR WorkflowType = 'sessionWorkflow'"]);
});
