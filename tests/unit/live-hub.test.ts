import { createLiveTextHub, type LiveTextHub, type LiveTextHubOptions } from '../../src/live/hub';
import { LiveBatchSchema, LiveChunkSchema, type LiveChunk } from '../../src/live/chunk';
import { waitFor } from '../helpers/http';

const T = 'turn-1';

const delta = (offset: number, text: string, step = 1, attempt = 1, turnId = T): LiveChunk => ({
  turnId, step, attempt, kind: 'delta', offset, text,
});
const end = (offset: number, step = 1, attempt = 1, turnId = T): LiveChunk => ({ turnId, step, attempt, kind: 'end', offset, text: '' });
const reset = (step: number, attempt: number, turnId = T): LiveChunk => ({ turnId, step, attempt, kind: 'reset', offset: 0, text: '' });

let hubs: LiveTextHub[] = [];
afterEach(() => {
  for (const h of hubs) h.close();
  hubs = [];
});

/** A hub on a fake clock, with a listener on T recording what clients would see. */
function setup(opts: LiveTextHubOptions = {}) {
  let now = 1_000_000;
  const hub = createLiveTextHub({ ...opts, now: () => now });
  hubs.push(hub);
  const seen: LiveChunk[] = [];
  const unsubscribe = hub.subscribe(T, (c) => seen.push(c));
  return { hub, seen, unsubscribe, advance: (ms: number) => (now += ms) };
}

/** What a client rebuilds from the normalized chunks, checking every offset as it goes. */
function replay(chunks: LiveChunk[]): string {
  let text = '';
  for (const c of chunks) {
    if (c.kind === 'reset') text = '';
    if (c.kind === 'delta') {
      expect(c.offset).toBe(text.length);
      text += c.text;
    }
  }
  return text;
}

test('in-order deltas build the text; listeners see them as is, then end', () => {
  const { hub, seen } = setup();
  hub.ingest([delta(0, 'Hel'), delta(3, 'lo, '), delta(7, 'world')]);
  expect(hub.snapshot(T)).toEqual({ step: 1, attempt: 1, text: 'Hello, world', ended: false, gap: false, truncated: false });
  expect(seen.map((c) => [c.kind, c.offset, c.text])).toEqual([
    ['delta', 0, 'Hel'],
    ['delta', 3, 'lo, '],
    ['delta', 7, 'world'],
  ]);
  hub.ingest([end(12)]);
  expect(hub.snapshot(T)?.ended).toBe(true);
  expect(seen.at(-1)).toEqual(end(12));
  expect(hub.size()).toBe(1);
});

test('overlapping deltas are trimmed to what is new; duplicates and empty deltas are ignored', () => {
  const { hub, seen } = setup();
  hub.ingest([delta(0, 'abc'), delta(1, 'bcde'), delta(0, 'abcde'), delta(2, 'c'), delta(5, ''), delta(5, 'f')]);
  expect(hub.snapshot(T)?.text).toBe('abcdef');
  expect(seen.map((c) => [c.offset, c.text])).toEqual([
    [0, 'abc'],
    [3, 'de'],
    [5, 'f'],
  ]);
  expect(replay(seen)).toBe('abcdef');
  expect(hub.snapshot(T)?.gap).toBe(false);
});

test('a delta leaving a gap is dropped and the buffer marked; later contiguous text still comes through', () => {
  const { hub, seen } = setup();
  hub.ingest([delta(0, 'abc'), delta(6, 'ghi')]);
  expect(hub.snapshot(T)).toMatchObject({ text: 'abc', gap: true });
  expect(seen).toHaveLength(1);
  // The missing piece arrives late (e.g. reordered): the text continues, the mark stays.
  hub.ingest([delta(3, 'def')]);
  expect(hub.snapshot(T)).toMatchObject({ text: 'abcdef', gap: true });
  expect(replay(seen)).toBe('abcdef');
});

test('an end beyond the known text marks the lost tail as a gap', () => {
  const { hub, seen } = setup();
  hub.ingest([delta(0, 'abc'), end(10)]);
  expect(hub.snapshot(T)).toMatchObject({ text: 'abc', ended: true, gap: true });
  // Listeners get the end at the offset they can rely on.
  expect(seen.at(-1)).toMatchObject({ kind: 'end', offset: 3 });
  // Nothing more for an ended attempt.
  hub.ingest([delta(3, 'def'), end(6)]);
  expect(hub.snapshot(T)?.text).toBe('abc');
  expect(seen.filter((c) => c.kind === 'end')).toHaveLength(1);
});

test('joining mid-step (an API restart) leaves a gap instead of wrong text', () => {
  const { hub, seen } = setup();
  hub.ingest([delta(40, 'tail')]);
  expect(hub.snapshot(T)).toMatchObject({ step: 1, attempt: 1, text: '', gap: true });
  expect(seen).toEqual([]);
});

test('a new attempt of the same step resets: listeners get one reset, then the new text', () => {
  const { hub, seen } = setup();
  hub.ingest([delta(0, 'first try, part')]);
  hub.ingest([reset(1, 2), delta(0, 'second ', 1, 2), delta(7, 'try', 1, 2)]);
  expect(hub.snapshot(T)).toEqual({ step: 1, attempt: 2, text: 'second try', ended: false, gap: false, truncated: false });
  expect(seen.map((c) => [c.kind, c.attempt, c.offset, c.text])).toEqual([
    ['delta', 1, 0, 'first try, part'],
    ['reset', 2, 0, ''],
    ['delta', 2, 0, 'second '],
    ['delta', 2, 7, 'try'],
  ]);
  expect(replay(seen)).toBe('second try');

  // The reset chunk may be lost: the attempt change alone resets too.
  hub.ingest([delta(0, 'third', 1, 3)]);
  expect(seen.slice(-2).map((c) => [c.kind, c.attempt, c.text])).toEqual([
    ['reset', 3, ''],
    ['delta', 3, 'third'],
  ]);
  // A straggler of an older attempt changes nothing.
  hub.ingest([delta(10, ' late', 1, 2), end(15, 1, 2)]);
  expect(hub.snapshot(T)).toMatchObject({ attempt: 3, text: 'third', ended: false });
  expect(seen).toHaveLength(6);
});

test('a newer step replaces the buffer; chunks of older steps are ignored', () => {
  const { hub, seen } = setup();
  hub.ingest([delta(0, 'step one'), end(8)]);
  hub.ingest([delta(0, 'step two', 2, 1)]);
  expect(hub.snapshot(T)).toEqual({ step: 2, attempt: 1, text: 'step two', ended: false, gap: false, truncated: false });
  hub.ingest([delta(8, ' more', 1, 1), delta(0, 'x', 1, 5)]);
  expect(hub.snapshot(T)?.text).toBe('step two');
  // A new step on attempt 1 needs no reset; clients tell steps apart by `step`.
  expect(seen.map((c) => [c.step, c.kind])).toEqual([
    [1, 'delta'],
    [1, 'end'],
    [2, 'delta'],
  ]);
});

test('turns are independent; unsubscribing stops delivery; a throwing listener does not starve others', () => {
  const { hub, seen, unsubscribe } = setup();
  const other: LiveChunk[] = [];
  hub.subscribe('turn-2', () => {
    throw new Error('broken client');
  });
  hub.subscribe('turn-2', (c) => other.push(c));
  hub.ingest([delta(0, 'a'), delta(0, 'b', 1, 1, 'turn-2'), delta(1, 'c')]);
  expect(hub.snapshot(T)?.text).toBe('ac');
  expect(hub.snapshot('turn-2')?.text).toBe('b');
  expect(other.map((c) => c.text)).toEqual(['b']);
  unsubscribe();
  hub.ingest([delta(2, 'd')]);
  expect(seen.map((c) => c.text)).toEqual(['a', 'c']);
  expect(hub.snapshot('nope')).toBeUndefined();
  expect(hub.size()).toBe(2);
});

test('text beyond maxTextChars is cut and marked truncated', () => {
  const { hub, seen } = setup({ maxTextChars: 5 });
  hub.ingest([delta(0, 'abc'), delta(3, 'defg'), delta(7, 'h')]);
  expect(hub.snapshot(T)).toMatchObject({ text: 'abcde', truncated: true, gap: false });
  expect(replay(seen)).toBe('abcde');
  hub.ingest([end(8)]);
  expect(hub.snapshot(T)).toMatchObject({ ended: true, gap: false });
});

test('ended turns are evicted after retainMs; idle ones after idleMs; a new step revives an ended turn', () => {
  const { hub, advance } = setup({ retainMs: 1_000, idleMs: 5_000 });
  hub.ingest([delta(0, 'done'), end(4), delta(0, 'busy', 1, 1, 'turn-2')]);
  advance(999);
  expect(hub.snapshot(T)?.text).toBe('done');
  advance(1);
  expect(hub.snapshot(T)).toBeUndefined();
  expect(hub.snapshot('turn-2')?.text).toBe('busy');
  advance(4_000);
  expect(hub.snapshot('turn-2')).toBeUndefined();
  expect(hub.size()).toBe(0);

  hub.ingest([delta(0, 'one'), end(3)]);
  advance(500);
  hub.ingest([delta(0, 'two', 2)]);
  advance(10_000 - 1);
  // Not ended, so retainMs does not apply; idleMs (5 s) has passed though.
  expect(hub.snapshot(T)).toBeUndefined();
});

test('the unref-ed sweeper evicts without anyone reading', async () => {
  const hub = createLiveTextHub({ retainMs: 20 });
  hubs.push(hub);
  hub.ingest([delta(0, 'x'), end(1)]);
  expect(hub.size()).toBe(1);
  await waitFor(async () => (hub.size() === 0 ? true : undefined), 10_000, 10);
});

test('beyond maxTurns the least recently active turns go first', () => {
  const { hub } = setup({ maxTurns: 3 });
  hub.ingest([delta(0, 'a', 1, 1, 'a'), delta(0, 'b', 1, 1, 'b'), delta(0, 'c', 1, 1, 'c')]);
  hub.ingest([delta(1, 'a', 1, 1, 'a')]); // a is active again: b is now the oldest
  hub.ingest([delta(0, 'd', 1, 1, 'd')]);
  expect(hub.size()).toBe(3);
  expect(hub.snapshot('b')).toBeUndefined();
  expect(['a', 'c', 'd'].map((id) => hub.snapshot(id)?.text)).toEqual(['aa', 'c', 'd']);
});

test('duplicated and overlapping re-sent chunks still yield exact text for listeners and snapshot', () => {
  const { hub, seen } = setup();
  const text = 'The quick brown fox jumps over the lazy dog. '.repeat(20);
  const pieces: LiveChunk[] = [];
  for (let i = 0; i < text.length; i += 7) pieces.push(delta(i, text.slice(i, i + 7)));
  // Every piece twice, and overlapping re-sends of larger windows.
  const stream = pieces.flatMap((p, i) => (i % 5 === 0 ? [p, p, delta(p.offset, text.slice(p.offset, p.offset + 20))] : [p]));
  hub.ingest(stream);
  expect(hub.snapshot(T)).toMatchObject({ text, gap: false });
  expect(replay(seen)).toBe(text);
});

test('close drops everything and ignores later chunks', () => {
  const { hub, seen } = setup();
  hub.ingest([delta(0, 'a')]);
  hub.close();
  hub.ingest([delta(1, 'b')]);
  expect(hub.size()).toBe(0);
  expect(seen).toHaveLength(1);
});

test('the wire schema bounds what it accepts', () => {
  expect(LiveChunkSchema.safeParse(delta(0, 'x')).success).toBe(true);
  expect(LiveChunkSchema.safeParse({ ...delta(0, 'x'), turnId: 'x'.repeat(201) }).success).toBe(false);
  expect(LiveChunkSchema.safeParse(delta(0, 'x'.repeat(64 * 1024))).success).toBe(true);
  expect(LiveChunkSchema.safeParse(delta(0, 'x'.repeat(64 * 1024 + 1))).success).toBe(false);
  expect(LiveChunkSchema.safeParse({ ...delta(0, 'x'), step: 0 }).success).toBe(false);
  expect(LiveChunkSchema.safeParse({ ...delta(0, 'x'), attempt: 1.5 }).success).toBe(false);
  expect(LiveChunkSchema.safeParse(delta(-1, 'x')).success).toBe(false);
  expect(LiveChunkSchema.safeParse({ ...end(3), text: 'x' }).success).toBe(false);
  expect(LiveChunkSchema.safeParse({ ...delta(0, 'x'), kind: 'other' }).success).toBe(false);
  expect(LiveBatchSchema.safeParse({ chunks: Array.from({ length: 1000 }, () => delta(0, 'x')) }).success).toBe(true);
  expect(LiveBatchSchema.safeParse({ chunks: Array.from({ length: 1001 }, () => delta(0, 'x')) }).success).toBe(false);
});

test('a notice goes to listeners as is, changes no text, and is kept for late joiners until a later attempt speaks', () => {
  const { hub, seen, advance } = setup({ idleMs: 60_000 });
  const notice: LiveChunk = { turnId: T, step: 1, attempt: 1, kind: 'notice', offset: 0, text: 'HTTP 503; retrying (attempt 2 of 3)' };
  hub.ingest([delta(0, 'par'), notice]);
  expect(seen.at(-1)).toEqual(notice);
  expect(hub.snapshot(T)?.text).toBe('par');
  expect(hub.lastNotice(T)).toEqual(notice);
  advance(10_000);
  expect(hub.lastNotice(T)).toEqual(notice);
  // The next attempt speaks: the notice no longer holds.
  hub.ingest([delta(0, 'fresh', 1, 2)]);
  expect(hub.lastNotice(T)).toBeUndefined();
  // A notice of an attempt older than the text already shown is stale and dropped.
  hub.ingest([{ ...notice, attempt: 1 }]);
  expect(hub.lastNotice(T)).toBeUndefined();
  hub.ingest([{ ...notice, attempt: 2, text: 'again' }]);
  advance(60_000);
  expect(hub.lastNotice(T)).toBeUndefined();
});

test("a tool call's notice goes to listeners whatever the step's text, and is not kept", () => {
  const { hub, seen } = setup({ idleMs: 60_000 });
  hub.ingest([delta(0, 'step three', 3, 1)]);
  const notice: LiveChunk = { turnId: T, step: 1, attempt: 2, kind: 'notice', offset: 0, text: 'retrying a__b on another worker (attempt 2)', toolCallId: 'call-1' };
  hub.ingest([notice]);
  expect(seen.at(-1)).toEqual(notice);
  expect(hub.lastNotice(T)).toBeUndefined();
  expect(hub.snapshot(T)?.text).toBe('step three');
});

test('a notice is validated like any chunk: text required to be short', () => {
  const ok = { turnId: T, step: 1, attempt: 1, kind: 'notice', offset: 0, text: 'why' };
  expect(LiveChunkSchema.safeParse(ok).success).toBe(true);
  expect(LiveChunkSchema.safeParse({ ...ok, text: 'x'.repeat(1_001) }).success).toBe(false);
});
