/**
 * Which tool calls may be sent again after a lost answer (src/mcp/repeat-safety.ts), on the real
 * hub against a server that applies every call and ignores the idempotency key. The connection is cut
 * after the server applied the call: a write that nothing vouches for is never retried ("outcome
 * unknown", one application); a read-only tool, or the same tool on a server configured as honouring
 * the key, stays retryable; a request that never reached the server stays retryable too.
 */
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createActivities } from '../../src/activities';
import { createNoopPublisher } from '../../src/live/publisher';
import { parseMcpConfig, type McpConfig } from '../../src/mcp/config';
import { McpServerHub } from '../../src/mcp/pool';
import { Failure } from '../../src/shared/failures';
import { startApplyingServer, type ApplyingServer } from '../helpers/applying-server';
import { waitFor } from '../helpers/http';
import { openSocketsTo } from '../helpers/sockets';
import { toolActivities } from '../helpers/tool-activities';

let server: ApplyingServer;
let hub: McpServerHub;
let acts: ReturnType<typeof createActivities>;
let config: McpConfig;

beforeAll(async () => {
  server = await startApplyingServer();
  config = parseMcpConfig(
    {
      mcpServers: {
        // Nothing vouches for `apply` here: the server is third-party, the tool annotated destructive.
        applying: { url: server.url, timeouts: { callMs: 5_000 } },
        // The same server, configured as deduplicating on the idempotency key.
        dedupes: { url: server.url, honoursIdempotencyKey: true, timeouts: { callMs: 5_000 } },
        // The same server, with `apply` vouched for as read-only by the config.
        vouched: { url: server.url, readOnlyTools: ['app*'], timeouts: { callMs: 5_000 } },
      },
    },
    {},
    process.cwd(),
  );
  ({ hub, acts } = toolActivities(config));
  await hub.catalog();
});

afterAll(async () => {
  await hub?.close();
  await server?.close();
});

const call = (srv: string, tool: string, key = `k-${Math.random()}`) => ({
  turnId: 'turn-r-1',
  server: srv,
  tool,
  llmName: `${srv}__${tool}`,
  arguments: {},
  idempotencyKey: key,
});

/** Runs the activity and returns its failure (it must fail). */
async function failure(env: MockActivityEnvironment, input: ReturnType<typeof call>, activities = acts): Promise<ApplicationFailure> {
  const err = await env.run(activities.callTool, input).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApplicationFailure);
  return err as ApplicationFailure;
}

test('a write whose answer was cut after the server applied it: outcome unknown, never retried, applied once', async () => {
  const env = new MockActivityEnvironment();
  const beats: unknown[] = [];
  env.on('heartbeat', (d: unknown) => beats.push(d));
  const before = server.applied();
  server.cutNextAnswers(1);
  const err = await failure(env, call('applying', 'apply'));
  expect(err.type).toBe(Failure.McpOutcomeUnknown);
  expect(err.nonRetryable).toBe(true);
  expect(err.message).toMatch(/^outcome unknown: the request was sent and the answer was lost .*applying\/apply may or may not have taken effect\. It was not sent again: the tool is not known to be read-only or idempotent/);
  expect(server.applied()).toBe(before + 1);
  // The attempt told Temporal, before sending, that the request was going out.
  expect(beats).toContainEqual(expect.objectContaining({ sent: true }));
});

test('a later attempt after a worker died with the request sent does not send it again', async () => {
  const before = server.applied();
  const env = new MockActivityEnvironment({ attempt: 2, heartbeatDetails: { sent: true } });
  const err = await failure(env, call('applying', 'apply'));
  expect(err.type).toBe(Failure.McpOutcomeUnknown);
  expect(err.message).toContain('attempt 1 sent the request and stopped');
  expect(server.applied()).toBe(before);
});

test('a later attempt whose predecessor never sent the request calls the tool', async () => {
  const before = server.applied();
  const out = (await new MockActivityEnvironment({ attempt: 2, heartbeatDetails: undefined }).run(acts.callTool, call('applying', 'apply'))) as { isError: boolean };
  expect(out.isError).toBe(false);
  expect(server.applied()).toBe(before + 1);
});

test('a call that may be sent again does not heartbeat as it is sent; one that must not be sent twice does, before sending', async () => {
  const beatsOf = async (server: string) => {
    const env = new MockActivityEnvironment();
    const beats: unknown[] = [];
    env.on('heartbeat', (d: unknown) => beats.push(d));
    const out = (await env.run(acts.callTool, call(server, 'apply'))) as { isError: boolean };
    expect(out.isError).toBe(false);
    return beats;
  };
  // Its server dedupes on the idempotency key: a later attempt may send it again, so no record is
  // needed, and its completion does not wait for a heartbeat's round trip.
  expect(await beatsOf('dedupes')).toEqual([]);
  expect(await beatsOf('applying')).toEqual([expect.objectContaining({ sent: true })]);
});

test("a later attempt tells the turn's streams that the call goes on, and where; its heartbeats name its worker", async () => {
  const notices: unknown[][] = [];
  const live = { ...createNoopPublisher(), toolNotice: (...args: unknown[]) => void notices.push(args) };
  const { hub: ownHub, acts: ownActs } = toolActivities(config, { live, workerId: '12@here' });
  try {
    const env = new MockActivityEnvironment({ attempt: 2, heartbeatDetails: { worker: '11@gone' } });
    const beats: unknown[] = [];
    env.on('heartbeat', (d: unknown) => beats.push(d));
    await env.run(ownActs.callTool, { ...call('applying', 'apply'), toolCallId: 'call-7' });
    expect(notices).toEqual([['turn-r-1', 'call-7', 2, 'retrying applying__apply on another worker (attempt 2)']]);
    expect(beats).toContainEqual(expect.objectContaining({ sent: true, worker: '12@here' }));
    // The first attempt says nothing.
    await new MockActivityEnvironment().run(ownActs.callTool, { ...call('applying', 'apply'), toolCallId: 'call-8' });
    expect(notices).toHaveLength(1);
  } finally {
    await ownHub.close();
  }
});

test.each([
  ['a read-only tool', 'applying', 'read'],
  ['a write on a server that honours the idempotency key', 'dedupes', 'apply'],
  ['a write the config vouches for as read-only', 'vouched', 'apply'],
])('%s whose answer was cut stays retryable', async (_name, srv, tool) => {
  server.cutNextAnswers(1);
  const err = await failure(new MockActivityEnvironment(), call(srv, tool));
  expect(err.type).toBe(Failure.McpTransientError);
  expect(err.nonRetryable).toBe(false);
});

test('a request that provably never reached the server (connection refused) stays retryable', async () => {
  const doomed = await startApplyingServer();
  const config = parseMcpConfig({ mcpServers: { doomed: { url: doomed.url } } }, {}, process.cwd());
  const { hub: doomedHub, acts: doomedActs } = toolActivities(config);
  try {
    await doomedHub.catalog(); // connected and listed: the tool is known
    await doomed.close(); // now every request is refused at connect time
    // Wait until the client has seen its idle keep-alive socket close: a request written to a socket
    // the peer is closing may have arrived, and is rightly counted as sent.
    const port = Number(new URL(doomed.url).port);
    await waitFor(async () => (openSocketsTo(port) === 0 ? true : undefined), 10_000, 20);
    const err = await doomedHub.callTool({ server: 'doomed', tool: 'apply', arguments: {} }).then(
      () => undefined,
      (e: unknown) => e as { requestSent?: boolean; name?: string },
    );
    expect(err?.name).toBe(Failure.McpTransientError);
    expect(err?.requestSent).toBe(false);
    const viaActivity = await failure(new MockActivityEnvironment(), { ...call('doomed', 'apply') }, doomedActs);
    expect(viaActivity.nonRetryable).toBe(false);
    expect(viaActivity.type).not.toBe(Failure.McpOutcomeUnknown);
  } finally {
    await doomedHub.close();
  }
});
