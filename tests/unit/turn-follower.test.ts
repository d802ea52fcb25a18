import { createLiveTextHub, type LiveTextHub } from '../../src/live/hub';
import type { TurnGateway } from '../../src/api/gateway';
import { followTurn, type FeedItem, type TurnFeed } from '../../src/api/turn-follower';
import type { TurnEvent, TurnState } from '../../src/shared/turn';
import { waitFor } from '../helpers/http';

/** A turn in memory whose events the test appends; getTurn answers like the real gateway (events after an id). */
function fakeTurn(turnId = 'turn-s-1') {
  const state: TurnState = { turnId, sessionId: 's', owner: { id: 'alice', tenant: 'demo' }, status: 'running', toolCalls: [], events: [], steps: 0 };
  let polls = 0;
  /** Runs while a poll is in flight: what happens in the workflow and the hub meanwhile. */
  let duringPoll: (() => void) | undefined;
  const gateway: Pick<TurnGateway, 'getTurn'> = {
    async getTurn(id, after) {
      polls++;
      await new Promise((r) => setTimeout(r, 1));
      duringPoll?.();
      duringPoll = undefined;
      if (id !== turnId) return null;
      return { ...state, events: state.events.filter((e) => e.id > (after ?? 0)) };
    },
  };
  const emit = (type: TurnEvent['type'], data: Record<string, unknown> = {}) => {
    if (type === 'status' && data.phase === 'calling_llm') state.steps = data.step as number;
    state.events.push({ id: state.events.length + 1, type, at: new Date().toISOString(), data });
  };
  /** Emits as the workflow does, and hands the event to the hub as the worker's sink would (unless `lost`). */
  const push = (hub: LiveTextHub, type: TurnEvent['type'], data: Record<string, unknown> = {}, how: 'pushed' | 'lost' | 'too-large' = 'pushed') => {
    emit(type, data);
    const event = state.events.at(-1) as TurnEvent;
    if (type === 'done') state.status = 'completed';
    const turn = { sessionId: state.sessionId, owner: state.owner };
    if (how === 'pushed') hub.ingest([{ turnId, step: 1, attempt: 1, kind: 'event', offset: 0, text: '', event, turn }]);
    if (how === 'too-large') hub.ingest([{ turnId, step: 1, attempt: 1, kind: 'poll', offset: event.id, text: '' }]);
  };
  return { state, gateway, emit, push, polls: () => polls, duringPoll: (fn: () => void) => void (duringPoll = fn) };
}

const llm = (step: number) => ({ status: 'running', phase: 'calling_llm', step });
const delta = (turnId: string, step: number, offset: number, text: string, attempt = 1) =>
  ({ turnId, step, attempt, kind: 'delta' as const, offset, text });

/** The feed's items as short strings: `e<id>:<type>[:step]` for events, `d<step>:<text>` / `r<step>` for live text. */
function label(item: FeedItem): string {
  if (item.type === 'end') return `end:${item.outcome}`;
  if (item.type === 'live') return item.chunk.kind === 'reset' ? `r${item.chunk.step}` : `d${item.chunk.step}:${item.chunk.text}`;
  if (item.type === 'waiting') return `w:${item.waiting.behind}:${item.waiting.status}:${item.waiting.pendingApprovals.length}`;
  const phase = item.event.data.phase === 'calling_llm' ? `:llm${String(item.event.data.step)}` : '';
  return `e${item.event.id}:${item.event.type}${phase}`;
}

/** Reads the feed in the background, keeping every item. */
function collect(feed: TurnFeed) {
  const items: string[] = [];
  const done = (async () => {
    for await (const item of feed) {
      items.push(label(item));
      if (item.type === 'end') break;
    }
  })();
  const until = async (pred: (items: string[]) => boolean, ms = 2_000) => {
    const deadline = Date.now() + ms;
    while (!pred(items)) {
      if (Date.now() > deadline) throw new Error(`timed out; got ${JSON.stringify(items)}`);
      await new Promise((r) => setTimeout(r, 2));
    }
  };
  return { items, done, until };
}

let hub: LiveTextHub;
let feeds: TurnFeed[] = [];
beforeEach(() => {
  hub = createLiveTextHub();
});
afterEach(() => {
  for (const f of feeds) f.stop();
  feeds = [];
  hub.close();
});
const follow = (...args: Parameters<typeof followTurn>) => {
  const feed = followTurn(...args);
  feeds.push(feed);
  return feed;
};

test('live text of a step waits for the durable calling_llm event of that step, and for everything before it', async () => {
  const t = fakeTurn();
  t.emit('status', llm(1));
  t.emit('tool_call_started', { name: 'a__b' });
  const feed = follow({ gateway: t.gateway, live: hub }, { turnId: t.state.turnId, pollMs: 20 });
  const c = collect(feed);
  await c.until((i) => i.includes('e2:tool_call_started'));

  // Step 1's tool call finishes and step 2 starts in the workflow; its text reaches the hub at once,
  // long before the follower's next poll would find the durable events.
  t.emit('tool_call_finished', { name: 'a__b' });
  t.emit('status', llm(2));
  hub.ingest([delta(t.state.turnId, 2, 0, 'Hel'), delta(t.state.turnId, 2, 3, 'lo')]);
  await c.until((i) => i.includes('d2:lo'));
  t.emit('text', { text: 'Hello' });
  t.emit('done', { status: 'completed' });
  t.state.status = 'completed';
  await c.done;

  expect(c.items).toEqual([
    'e1:status:llm1',
    'e2:tool_call_started',
    'e3:tool_call_finished',
    'e4:status:llm2',
    'd2:Hel',
    'd2:lo',
    'e5:text',
    'e6:done',
    'end:finished',
  ]);
});

test('a held chunk wakes the poll: its step goes out long before the poll interval', async () => {
  const t = fakeTurn();
  t.emit('status', llm(1));
  const feed = follow({ gateway: t.gateway, live: hub }, { turnId: t.state.turnId, pollMs: 60_000 });
  const c = collect(feed);
  await c.until((i) => i.length === 1);
  const pollsBefore = t.polls();

  t.emit('status', { status: 'running', phase: 'calling_tools', step: 1 });
  t.emit('status', llm(2));
  const sent = Date.now();
  hub.ingest([delta(t.state.turnId, 2, 0, 'Hi')]);
  await c.until((i) => i.includes('d2:Hi'), 1_000);
  expect(Date.now() - sent).toBeLessThan(1_000);
  expect(t.polls()).toBe(pollsBefore + 1);
  expect(c.items).toEqual(['e1:status:llm1', 'e2:status', 'e3:status:llm2', 'd2:Hi']);
});

test('text of a step already announced goes out at once, between polls', async () => {
  const t = fakeTurn();
  t.emit('status', llm(1));
  const feed = follow({ gateway: t.gateway, live: hub }, { turnId: t.state.turnId, pollMs: 60_000 });
  const c = collect(feed);
  await c.until((i) => i.length === 1);
  const pollsBefore = t.polls();
  hub.ingest([delta(t.state.turnId, 1, 0, 'now')]);
  await c.until((i) => i.includes('d1:now'), 1_000);
  expect(t.polls()).toBe(pollsBefore);
});

test("the turn's last event is the last item: text that arrived during the final poll comes before it", async () => {
  const t = fakeTurn();
  t.emit('status', llm(1));
  const feed = follow({ gateway: t.gateway, live: hub }, { turnId: t.state.turnId, pollMs: 20 });
  const c = collect(feed);
  await c.until((i) => i.length === 1);
  // The step's text reaches the hub while the poll is on its way; the poll answers with the end of the turn.
  t.duringPoll(() => {
    hub.ingest([delta(t.state.turnId, 1, 0, 'bye')]);
    t.emit('text', { text: 'bye' });
    t.emit('done', { status: 'completed' });
    t.state.status = 'completed';
  });
  await c.done;
  expect(c.items).toEqual(['e1:status:llm1', 'd1:bye', 'e2:text', 'e3:done', 'end:finished']);
});

test('a stream opened mid-step (first read, resumed after an id) gets the durable events, then the text so far', async () => {
  const t = fakeTurn();
  t.emit('status', { status: 'running', phase: 'gathering_context' });
  t.emit('status', llm(1));
  t.emit('notice', { code: 'x' });
  hub.ingest([delta(t.state.turnId, 1, 0, 'Hello'), delta(t.state.turnId, 1, 5, ' world')]);
  // The client has events 1 and 2 (the calling_llm event included): the step's text may follow event 3.
  const first = (await t.gateway.getTurn(t.state.turnId, 2)) as TurnState;
  const feed = follow({ gateway: t.gateway, live: hub }, { turnId: t.state.turnId, after: 2, first, pollMs: 20 });
  const c = collect(feed);
  await c.until((i) => i.length >= 2);
  expect(c.items).toEqual(['e3:notice', 'd1:Hello world']);
  const item = feed.liveSnapshot();
  expect(item).toEqual({ turnId: t.state.turnId, step: 1, attempt: 1, kind: 'delta', offset: 0, text: 'Hello world' });
});

test('a retried attempt: the reset and the new text follow in order; liveSnapshot has the new attempt only', async () => {
  const t = fakeTurn();
  t.emit('status', llm(1));
  const feed = follow({ gateway: t.gateway, live: hub }, { turnId: t.state.turnId, pollMs: 20 });
  const c = collect(feed);
  hub.ingest([delta(t.state.turnId, 1, 0, 'par')]);
  hub.ingest([delta(t.state.turnId, 1, 0, 'full', 2)]);
  await c.until((i) => i.includes('d1:full'));
  expect(c.items).toEqual(['e1:status:llm1', 'd1:par', 'r1', 'd1:full']);
  expect(feed.liveSnapshot()).toMatchObject({ attempt: 2, offset: 0, text: 'full' });
});

test('a finished turn subscribes to nothing; a foreign one ends before its events; a missing one is gone', async () => {
  const t = fakeTurn();
  t.emit('status', llm(1));
  t.emit('done', {});
  t.state.status = 'completed';
  const finished = collect(follow({ gateway: t.gateway, live: hub }, { turnId: t.state.turnId, first: t.state, pollMs: 5 }));
  await finished.done;
  expect(finished.items).toEqual(['e1:status:llm1', 'e2:done', 'end:finished']);

  const foreign = collect(follow({ gateway: t.gateway }, { turnId: t.state.turnId, pollMs: 5, accept: () => false }));
  await foreign.done;
  expect(foreign.items).toEqual(['end:foreign']);

  const missing = collect(follow({ gateway: t.gateway }, { turnId: 'turn-s-nope', pollMs: 5, missingPolls: 2 }));
  await missing.done;
  expect(missing.items).toEqual(['end:gone']);
  expect(hub.size()).toBe(0);
});

test('stop() ends the feed promptly, also while it waits for the next poll', async () => {
  const t = fakeTurn();
  t.emit('status', llm(1));
  const feed = follow({ gateway: t.gateway, live: hub }, { turnId: t.state.turnId, pollMs: 60_000 });
  const c = collect(feed);
  await c.until((i) => i.length === 1);
  feed.stop();
  await c.done;
  expect(c.items).toEqual(['e1:status:llm1', 'end:stopped']);
  // Unsubscribed: later text goes nowhere.
  hub.ingest([delta(t.state.turnId, 1, 0, 'late')]);
  expect(c.items).toHaveLength(2);
});

test('a queued turn reports what it waits for when that changes, and stops asking once it runs', async () => {
  const t = fakeTurn();
  t.emit('status', { status: 'running', phase: 'queued' });
  let ahead: { status: 'running' | 'awaiting_approval'; approvals: number } | undefined = { status: 'running', approvals: 0 };
  let asked = 0;
  const waitingOn = async (state: TurnState) => {
    asked++;
    if (!ahead) return undefined;
    const approval = { toolCallId: 'c1', name: 'pay__refund', server: 'pay', tool: 'refund', arguments: {}, requestedAt: '', deadline: '', decideUrl: '/x' };
    return {
      turnId: state.turnId,
      behind: 'turn-s-0',
      status: ahead.status,
      pendingApprovals: Array.from({ length: ahead.approvals }, () => approval),
      cancelUrl: '/v1/turns/turn-s-0/cancel',
    };
  };
  const c = collect(follow({ gateway: t.gateway }, { turnId: t.state.turnId, pollMs: 2, waitingOn, waitingCheckMs: 5 }));
  await c.until((i) => i.includes('w:turn-s-0:running:0'));
  // Unchanged: asked again (twice more), not repeated.
  const before = asked;
  await waitFor(async () => (asked >= before + 2 ? true : undefined), 10_000, 2);
  expect(c.items.filter((i) => i.startsWith('w:'))).toHaveLength(1);

  ahead = { status: 'awaiting_approval', approvals: 1 };
  await c.until((i) => i.includes('w:turn-s-0:awaiting_approval:1'));

  // The turn ahead ended: this one starts, and the feed stops asking.
  ahead = undefined;
  t.emit('status', { status: 'running', phase: 'gathering_context' });
  await c.until((i) => i.includes('e2:status'));
  const settled = asked;
  await new Promise((r) => setTimeout(r, 40));
  expect(asked).toBe(settled);
  expect(c.items.filter((i) => i.startsWith('w:'))).toEqual(['w:turn-s-0:running:0', 'w:turn-s-0:awaiting_approval:1']);
});

describe('durable events pushed through the hub', () => {
  /** A turn whose step 1 began (pushed), followed by a stream that has delivered that event. */
  const followingStep1 = async (quietPollMs = 60_000) => {
    const t = fakeTurn();
    t.push(hub, 'status', llm(1));
    const c = collect(follow({ gateway: t.gateway, live: hub }, { turnId: t.state.turnId, pollMs: 5, quietPollMs, accept: () => true }));
    await c.until((i) => i.length === 1);
    return { t, c };
  };

  test('a stream follows a whole turn from pushed events in order, live text after its calling_llm, without one poll', async () => {
    const t = fakeTurn();
    t.push(hub, 'status', { status: 'running', phase: 'gathering_context' });
    const feed = follow({ gateway: t.gateway, live: hub }, { turnId: t.state.turnId, pollMs: 5, accept: () => true });
    const c = collect(feed);
    await c.until((i) => i.includes('e1:status'));
    t.push(hub, 'status', llm(1));
    t.push(hub, 'tool_call_started', { name: 'a__b' });
    t.push(hub, 'tool_call_finished', { name: 'a__b' });
    // Step 2's text reaches the hub before its calling_llm event (a second worker): held, then released by the push.
    hub.ingest([delta(t.state.turnId, 2, 0, 'Hi')]);
    t.push(hub, 'status', llm(2));
    t.push(hub, 'text', { text: 'Hi' });
    t.push(hub, 'done', { status: 'completed' });
    await c.done;
    expect(c.items).toEqual(['e1:status', 'e2:status:llm1', 'e3:tool_call_started', 'e4:tool_call_finished', 'e5:status:llm2', 'd2:Hi', 'e6:text', 'e7:done', 'end:finished']);
    expect(t.polls()).toBe(0);
  });

  test('a stream opened later, or resumed after an id, starts from what the hub holds: no first read, no poll', async () => {
    const t = fakeTurn();
    t.push(hub, 'status', llm(1));
    t.push(hub, 'notice', { code: 'x' });
    t.push(hub, 'text', { text: 'ok' });
    t.push(hub, 'done', { status: 'completed' });
    const fresh = collect(follow({ gateway: t.gateway, live: hub }, { turnId: t.state.turnId, pollMs: 5, accept: () => true }));
    await fresh.done;
    expect(fresh.items).toEqual(['e1:status:llm1', 'e2:notice', 'e3:text', 'e4:done', 'end:finished']);
    const resumed = collect(follow({ gateway: t.gateway, live: hub }, { turnId: t.state.turnId, after: 2, pollMs: 5, accept: () => true }));
    await resumed.done;
    expect(resumed.items).toEqual(['e3:text', 'e4:done', 'end:finished']);
    expect(t.polls()).toBe(0);
  });

  test('a lost push is a hole in the ids: one poll fills it, then pushes carry on', async () => {
    const { t, c } = await followingStep1();
    t.push(hub, 'tool_call_started', {}, 'lost');
    t.push(hub, 'tool_call_finished', {});
    await c.until((i) => i.includes('e3:tool_call_finished'));
    expect(t.polls()).toBe(1);
    t.push(hub, 'done', { status: 'completed' });
    await c.done;
    expect(c.items).toEqual(['e1:status:llm1', 'e2:tool_call_started', 'e3:tool_call_finished', 'e4:done', 'end:finished']);
    expect(t.polls()).toBe(1);
  });

  test('an event too large to carry arrives as a hint: the follower reads the turn for it at once', async () => {
    const { t, c } = await followingStep1();
    t.push(hub, 'text', { text: 'x'.repeat(10_000) }, 'too-large');
    await c.until((i) => i.includes('e2:text'), 1_000);
    expect(t.polls()).toBe(1);
  });

  test("the safety net: a lost last event is found by a read after quietPollMs, and the stream ends", async () => {
    const { t, c } = await followingStep1(100);
    const lostAt = Date.now();
    t.push(hub, 'done', { status: 'completed' }, 'lost');
    await c.done;
    expect(Date.now() - lostAt).toBeGreaterThanOrEqual(90);
    expect(c.items).toEqual(['e1:status:llm1', 'e2:done', 'end:finished']);
    expect(t.polls()).toBe(1);
  });

  test('the hub says its source was interrupted (a bus reconnect): the follower reads the turn at once, not after quietPollMs', async () => {
    const { t, c } = await followingStep1(60_000);
    // Lost while the bus was deaf: no hole is visible, since nothing after it was pushed either.
    t.push(hub, 'text', { text: 'Hi' }, 'lost');
    t.push(hub, 'done', { status: 'completed' }, 'lost');
    const told = Date.now();
    hub.interrupted();
    await c.done;
    expect(Date.now() - told).toBeLessThan(1_000);
    expect(c.items).toEqual(['e1:status:llm1', 'e2:text', 'e3:done', 'end:finished']);
    expect(t.polls()).toBe(1);
  });

  test('while text flows the safety-net read waits; once it stops, the read comes within quietPollMs, not after a grown back-off', async () => {
    const { t, c } = await followingStep1(150);
    let offset = 0;
    for (let i = 0; i < 20; i++) {
      hub.ingest([delta(t.state.turnId, 1, offset, 'word ')]);
      offset += 5;
      await new Promise((r) => setTimeout(r, 40));
    }
    // Text came all along: no read was needed.
    expect(t.polls()).toBe(0);
    // Its source dies after the turn's last events were lost: found by one read a quiet spell later.
    const silentAt = Date.now();
    t.push(hub, 'text', { text: 'done' }, 'lost');
    t.push(hub, 'done', { status: 'completed' }, 'lost');
    await c.done;
    expect(Date.now() - silentAt).toBeLessThan(1_000);
    expect(t.polls()).toBe(1);
    expect(c.items.slice(-3)).toEqual(['e2:text', 'e3:done', 'end:finished']);
  });

  test('a hub that never saw the turn (another replica, a restart): the follower polls as before', async () => {
    const t = fakeTurn();
    t.emit('status', llm(1));
    const c = collect(follow({ gateway: t.gateway, live: hub }, { turnId: t.state.turnId, pollMs: 5, accept: () => true }));
    await c.until((i) => i.length === 1);
    t.emit('done', { status: 'completed' });
    t.state.status = 'completed';
    await c.done;
    expect(t.polls()).toBeGreaterThanOrEqual(2);
  });

  test('pushed events of a turn that is not the caller\'s never leave: accept sees the hub\'s view first', async () => {
    const t = fakeTurn();
    t.push(hub, 'status', llm(1));
    const c = collect(follow({ gateway: t.gateway, live: hub }, { turnId: t.state.turnId, pollMs: 5, accept: (s) => s.owner?.id === 'mallory' }));
    await c.done;
    expect(c.items).toEqual(['end:foreign']);
  });
});
