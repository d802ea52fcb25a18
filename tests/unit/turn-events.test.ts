import { LiveChunkSchema, type LiveChunk } from '../../src/live/chunk';
import { createLiveTextHub, type LiveTextHub } from '../../src/live/hub';
import { MAX_PAYLOAD_BYTES, toPayloads } from '../../src/live/pg-bus';
import type { TurnEvent } from '../../src/shared/turn';

const T = 'turn-s-1';
const turn = { sessionId: 's', owner: { id: 'alice', tenant: 'demo' } };
const ev = (id: number, type: TurnEvent['type'] = 'status', data: Record<string, unknown> = {}): LiveChunk => ({
  turnId: T, step: 1, attempt: 1, kind: 'event', offset: 0, text: '', event: { id, type, at: `2026-01-01T00:00:0${id % 10}Z`, data }, turn,
});
const hint = (id: number): LiveChunk => ({ turnId: T, step: 1, attempt: 1, kind: 'poll', offset: id, text: '' });

let hubs: LiveTextHub[] = [];
afterEach(() => {
  for (const h of hubs) h.close();
  hubs = [];
});
function setup(opts: Parameters<typeof createLiveTextHub>[0] = {}) {
  let now = 1_000_000;
  const hub = createLiveTextHub({ ...opts, now: () => now });
  hubs.push(hub);
  const seen: LiveChunk[] = [];
  hub.subscribe(T, (c) => seen.push(c));
  return { hub, seen, advance: (ms: number) => (now += ms) };
}

test('pushed events are kept in id order and passed on once: the first copy of an id wins', () => {
  const { hub, seen } = setup();
  hub.ingest([ev(1), ev(3, 'notice'), ev(2, 'status', { phase: 'calling_llm', step: 1 })]);
  // A retried workflow task pushes id 2 again, with a later timestamp: ignored.
  hub.ingest([{ ...ev(2, 'notice'), event: { id: 2, type: 'notice', at: 'later', data: {} } }]);
  expect(seen.map((c) => c.event?.id)).toEqual([1, 3, 2]);
  expect(hub.events.read(T, 1)?.events.map((e) => [e.id, e.type])).toEqual([[2, 'status'], [3, 'notice']]);
  expect(hub.events.read('turn-s-other', 0)).toBeUndefined();
});

test('streamView answers only when every event from id 1 on is held, with owner, status and steps', () => {
  const { hub } = setup();
  hub.ingest([ev(2, 'status', { phase: 'calling_llm', step: 1 })]);
  expect(hub.events.streamView(T, 0)).toBeUndefined(); // id 1 missing
  hub.ingest([ev(1)]);
  expect(hub.events.streamView(T, 1)).toMatchObject({ turnId: T, sessionId: 's', owner: turn.owner, status: 'running', steps: 1, events: [{ id: 2 }] });
  // A hint says event 3 exists but was too large to carry: the view is incomplete until a read fills it.
  hub.ingest([hint(3)]);
  expect(hub.events.streamView(T, 0)).toBeUndefined();
  expect(hub.events.read(T, 2)).toEqual({ events: [], lastKnownId: 3 });
});

test("a turn the API just accepted is held with its position until its first push (a stream's opening event says it)", () => {
  const { hub } = setup();
  hub.events.expect(T, turn, 2);
  expect(hub.events.read(T, 0)).toEqual({ events: [], lastKnownId: 0, acceptedPosition: 2 });
  expect(hub.events.streamView(T, 0)).toMatchObject({ sessionId: 's', owner: turn.owner, status: 'running', events: [] });
  // Once the turn speaks, its events say where it stands.
  hub.ingest([ev(1, 'status', { phase: 'queued' })]);
  expect(hub.events.read(T, 0)).toEqual({ events: [expect.objectContaining({ id: 1 })], lastKnownId: 1 });
  // A turn the API did not accept (pushed only) has no position.
  hub.ingest([{ ...ev(1), turnId: 'turn-s-2' }]);
  expect(hub.events.read('turn-s-2', 1)).toEqual({ events: [], lastKnownId: 1 });
});

test('the final event gives the status; a finished turn is let go after retainMs, an idle one after idleMs', () => {
  const { hub, advance } = setup({ retainMs: 1_000, idleMs: 10_000 });
  hub.ingest([ev(1), ev(2, 'cancelled')]);
  expect(hub.events.streamView(T, 0)?.status).toBe('cancelled');
  advance(1_000);
  expect(hub.events.read(T, 0)).toBeUndefined();
  hub.ingest([{ ...ev(1), turnId: 'turn-s-2' }]);
  advance(9_999);
  expect(hub.events.read('turn-s-2', 0)?.events).toHaveLength(1);
  advance(1);
  expect(hub.events.read('turn-s-2', 0)).toBeUndefined();
});

test('bounds: beyond maxEventsPerTurn the oldest go (no complete view any more); beyond the character budget, the oldest turns', () => {
  const { hub } = setup({ maxEventsPerTurn: 2, maxEventChars: 400 });
  hub.ingest([ev(1), ev(2), ev(3)]);
  expect(hub.events.read(T, 0)?.events.map((e) => e.id)).toEqual([2, 3]);
  expect(hub.events.streamView(T, 0)).toBeUndefined();
  // Each event is ~70 characters of JSON: a second turn pushes the first past the budget.
  for (let i = 1; i <= 2; i++) hub.ingest([{ ...ev(i), turnId: 'turn-s-2', event: { id: i, type: 'text', at: '', data: { text: 'x'.repeat(120) } } }]);
  expect(hub.events.read(T, 0)).toBeUndefined();
  expect(hub.events.read('turn-s-2', 0)?.events).toHaveLength(2);
});

test('the wire schema: an event chunk carries an event of a known type, a poll chunk names its id', () => {
  expect(LiveChunkSchema.safeParse(ev(1)).success).toBe(true);
  expect(LiveChunkSchema.safeParse(hint(4)).success).toBe(true);
  expect(LiveChunkSchema.safeParse({ ...ev(1), event: undefined }).success).toBe(false);
  expect(LiveChunkSchema.safeParse({ ...ev(1), event: { id: 1, type: 'nope', at: '', data: {} } }).success).toBe(false);
  expect(LiveChunkSchema.safeParse({ ...hint(1), offset: 0 }).success).toBe(false);
  expect(LiveChunkSchema.safeParse({ turnId: T, step: 1, attempt: 1, kind: 'delta', offset: 0, text: 'x', event: ev(1).event }).success).toBe(false);
});

test('on the PostgreSQL bus an event too large for one NOTIFY becomes a poll hint, never split or lost', () => {
  const big = { ...ev(5, 'text'), event: { id: 5, type: 'text' as const, at: '', data: { text: 'é'.repeat(8_000) } } };
  const payloads = toPayloads([ev(4), big, ev(6, 'done')]);
  const chunks = payloads.flatMap((p) => (JSON.parse(p) as { chunks: LiveChunk[] }).chunks);
  expect(chunks.map((c) => [c.kind, c.event?.id ?? c.offset])).toEqual([['event', 4], ['poll', 5], ['event', 6]]);
  expect(payloads.every((p) => Buffer.byteLength(p) <= MAX_PAYLOAD_BYTES)).toBe(true);
});

test("justEnded names the owner's latest turn of a session for a moment after its final event, and only then", () => {
  const { hub, advance } = setup();
  const owner = turn.owner;
  hub.events.expect(T, turn);
  hub.ingest([ev(1)]);
  expect(hub.events.justEnded(owner, 's', 2_000)).toBeUndefined(); // still running
  hub.ingest([ev(2, 'done')]);
  expect(hub.events.justEnded(owner, 's', 2_000)).toBe(T);
  expect(hub.events.justEnded({ id: 'bob', tenant: 'demo' }, 's', 2_000)).toBeUndefined(); // another owner's session
  expect(hub.events.justEnded(owner, 'other', 2_000)).toBeUndefined();
  advance(2_500);
  expect(hub.events.justEnded(owner, 's', 2_000)).toBeUndefined(); // long enough ago
  // A newer turn of the session, still running, is the latest: nothing ended just now.
  hub.events.expect('turn-s-2', turn);
  expect(hub.events.justEnded(owner, 's', 60_000)).toBeUndefined();
});

test('a memory chunk is kept for the next message of the session, never passed to streams; one for a turn not held is dropped', () => {
  const { hub, seen } = setup();
  const memory = { summary: 'they met', messages: [{ role: 'user' as const, content: 'hi' }, { role: 'assistant' as const, content: 'hello' }] };
  const handed = (turnId: string): LiveChunk => LiveChunkSchema.parse({ turnId, step: 1, attempt: 1, kind: 'memory', offset: 0, text: '', memory });
  hub.ingest([ev(1), handed(T), ev(2, 'done')]);
  expect(hub.events.memoryOf(T)).toEqual(memory);
  expect(hub.events.endOf(T)).toBe('completed');
  expect(seen.map((c) => c.kind)).toEqual(['event', 'event']);
  hub.ingest([handed('turn-s-unheard')]);
  expect(hub.events.memoryOf('turn-s-unheard')).toBeUndefined();
  // The wire schema: a memory chunk carries a plain memory, and only it carries one.
  expect(LiveChunkSchema.safeParse({ ...handed(T), memory: { messages: [{ role: 'tool', content: 'x' }] } }).success).toBe(false);
  expect(LiveChunkSchema.safeParse({ ...handed(T), memory: undefined }).success).toBe(false);
  expect(LiveChunkSchema.safeParse({ ...ev(3), memory }).success).toBe(false);
  // On the PostgreSQL bus a memory too large for one payload is left out, not split.
  const big = { ...handed(T), memory: { messages: [{ role: 'user' as const, content: 'x'.repeat(MAX_PAYLOAD_BYTES) }] } };
  expect(toPayloads([ev(4), big]).map((p) => (JSON.parse(p) as { chunks: LiveChunk[] }).chunks.map((c) => c.kind))).toEqual([['event']]);
  expect(toPayloads([handed(T)]).length).toBe(1);
});

test('endOf says how a held turn ended once its final event came, and nothing before', () => {
  const { hub } = setup();
  hub.events.expect(T, turn);
  hub.ingest([ev(1)]);
  expect(hub.events.endOf(T)).toBeUndefined();
  hub.ingest([ev(2, 'error')]);
  expect(hub.events.endOf(T)).toBe('failed');
  expect(hub.events.endOf('turn-s-unknown')).toBeUndefined();
  hub.events.expect('turn-s-3', turn);
  hub.ingest([{ ...ev(1), turnId: 'turn-s-3' }, { ...ev(2, 'done'), turnId: 'turn-s-3' }]);
  expect(hub.events.endOf('turn-s-3')).toBe('completed');
});
