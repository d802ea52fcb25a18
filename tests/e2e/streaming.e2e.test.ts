import type { DemoRules } from '../../src/demo-model/rules';
import { postMessage, readSse, type SseEvent } from '../helpers/http';
import { startSystem, type TestSystem } from '../helpers/system';

/** Token streaming on real parts: demo model → LLM activity → API live hub → SSE. */
const LONG = Array.from({ length: 300 }, (_, i) => `word${i}`).join(' ');
const RULES: DemoRules = {
  model: 'demo-model',
  fallback: 'no script',
  scripts: [
    { name: 'long', match: '^long', steps: [{ text: LONG }] },
    { name: 'short', match: '^short', steps: [{ text: 'ok' }] },
  ],
};

let sys: TestSystem;
beforeAll(async () => {
  sys = await startSystem({ rules: RULES, servers: () => ({}) });
}, 120_000);
afterAll(async () => {
  await sys?.stop();
});

/** Rebuilds the live text of the last attempt from text_delta / text_reset events, checking offsets. */
function liveText(events: SseEvent[]): string {
  let text = '';
  for (const e of events) {
    if (e.event === 'text_reset') text = '';
    if (e.event !== 'text_delta') continue;
    const offset = e.data.offset as number;
    const piece = e.data.text as string;
    if (offset > text.length) throw new Error(`gap: offset ${offset} after ${text.length} characters`);
    text = text.slice(0, offset) + piece;
  }
  return text;
}

async function historyEvents(turnId: string): Promise<number> {
  const history = await sys.client.workflow.getHandle(turnId).fetchHistory();
  return history.events?.length ?? 0;
}

test('text deltas reach the SSE stream while the model writes, and add up to the final text', async () => {
  sys.model.setFaults([{ chunkDelayMs: 5, times: 1 }]);
  const { body } = await postMessage(sys.apiUrl, 'stream', 'long please');
  const events = await readSse(`${sys.apiUrl}${body.eventsUrl as string}`, { timeoutMs: 60_000 });
  const deltas = events.filter((e) => e.event === 'text_delta');
  const finalIndex = events.findIndex((e) => e.event === 'text');
  expect(deltas.length).toBeGreaterThan(5);
  // Live: most of the text arrived before the durable final text event.
  expect(events.findIndex((e) => e.event === 'text_delta')).toBeLessThan(finalIndex);
  expect(liveText(events)).toBe(LONG);
  expect(events[finalIndex]?.data.text).toBe(LONG);
  // Deltas carry no SSE id: Last-Event-ID keeps naming durable events only.
  expect(deltas.every((e) => e.id === undefined)).toBe(true);
}, 60_000);

test("the stream opens with the API's own `turn` event, before the workflow's first event; it has no id and a reconnect gets its own", async () => {
  const { body } = await postMessage(sys.apiUrl, 'opening', 'short');
  const url = `${sys.apiUrl}${body.eventsUrl as string}`;
  const events = await readSse(url, { timeoutMs: 60_000 });
  expect(events[0]).toEqual({ event: 'turn', data: { turnId: body.turnId, sessionId: 'opening', status: 'running', position: 0, at: expect.any(String) } });
  expect(events.filter((e) => e.event === 'turn')).toHaveLength(1);
  // The durable events keep their ids, dense from 1: the opening event took none of them.
  const durable = events.filter((e) => e.id !== undefined);
  expect(durable.map((e) => Number(e.id))).toEqual(durable.map((_, i) => i + 1));
  expect(durable.at(-1)?.event).toBe('done');
  // On a finished turn: the opening event (its end), then the rest after Last-Event-ID.
  const rest = await readSse(url, { lastEventId: String(durable.length - 1), timeoutMs: 10_000 });
  expect(rest.map((e) => [e.event, e.id])).toEqual([['turn', undefined], ['done', String(durable.length)]]);
  expect(rest[0]?.data).toMatchObject({ status: 'completed' });
  expect(rest[0]?.data.position).toBeUndefined();
}, 60_000);

test('history events per turn do not grow with the length of the answer', async () => {
  const short = await postMessage(sys.apiUrl, 'flat-short', 'short');
  await readSse(`${sys.apiUrl}${short.body.eventsUrl as string}`, { timeoutMs: 60_000 });
  const long = await postMessage(sys.apiUrl, 'flat-long', 'long');
  await readSse(`${sys.apiUrl}${long.body.eventsUrl as string}`, { timeoutMs: 60_000 });
  const [a, b] = [await historyEvents(short.body.turnId), await historyEvents(long.body.turnId)];
  // ~2 characters vs ~2,700 characters (about 600 streamed chunks): the same number of events.
  expect(b).toBe(a);
}, 60_000);

test('a retried LLM attempt tells clients to discard the partial text', async () => {
  // The first attempt streams a few chunks and hangs up; Temporal retries the activity.
  sys.model.setFaults([{ hangup: true, afterChunks: 20, chunkDelayMs: 10, times: 1 }, { chunkDelayMs: 2, times: 1 }]);
  const { body } = await postMessage(sys.apiUrl, 'retry', 'long again');
  const events = await readSse(`${sys.apiUrl}${body.eventsUrl as string}`, { timeoutMs: 60_000 });
  const reset = events.find((e) => e.event === 'text_reset');
  expect(reset?.data).toMatchObject({ step: 1, attempt: 2, reason: 'llm_retry' });
  // Before the reset the client had partial text of attempt 1; after it, only attempt 2 counts.
  const before = events.slice(0, events.indexOf(reset as SseEvent)).filter((e) => e.event === 'text_delta');
  expect(before.length).toBeGreaterThan(0);
  expect(before.every((e) => e.data.attempt === 1)).toBe(true);
  expect(liveText(events)).toBe(LONG);
  expect(events.find((e) => e.event === 'text')?.data.text).toBe(LONG);
}, 60_000);

test('reconnecting mid-turn with Last-Event-ID loses and repeats no durable event; live text restarts from a snapshot', async () => {
  sys.model.setFaults([{ chunkDelayMs: 10, times: 1 }]);
  const { body } = await postMessage(sys.apiUrl, 'reconnect', 'long one more time');
  const url = `${sys.apiUrl}${body.eventsUrl as string}`;
  // Disconnect after some live text has arrived.
  let seenDeltas = 0;
  const part1 = await readSse(url, { stopAfter: (e) => e.event === 'text_delta' && ++seenDeltas >= 10, timeoutMs: 60_000 });
  const lastId = [...part1].reverse().find((e) => e.id !== undefined)?.id;
  expect(lastId).toBeDefined();
  const part2 = await readSse(url, { lastEventId: lastId, timeoutMs: 60_000 });
  const ids = [...part1, ...part2].filter((e) => e.id !== undefined).map((e) => Number(e.id));
  expect(ids).toEqual(Array.from({ length: ids.length }, (_, i) => i + 1));
  expect(part2.at(-1)?.event).toBe('done');
  // The second connection starts its live text with everything so far (offset 0), then continues.
  const firstDelta = part2.find((e) => e.event === 'text_delta');
  if (firstDelta) expect(firstDelta.data.offset).toBe(0);
  expect(liveText(part2) === LONG || part2.some((e) => e.event === 'text' && e.data.text === LONG)).toBe(true);
  expect(part2.find((e) => e.event === 'text')?.data.text).toBe(LONG);
}, 60_000);
