/**
 * Progress of a long tool call reaches the user while it runs: `server-everything`'s
 * `trigger-long-running-operation` reports progress; the worker pushes each report to the API's live
 * channel, and SSE and WebSocket clients get `tool_progress` (no event id: like live text, it never
 * moves Last-Event-ID) before the call finishes.
 */
import { postMessage, readSse } from '../helpers/http';
import { startSystem, type TestSystem } from '../helpers/system';

let sys: TestSystem;

beforeAll(async () => {
  sys = await startSystem();
}, 120_000);

afterAll(async () => {
  await sys?.stop();
});

test('a long tool call shows its progress as tool_progress events before it finishes', async () => {
  const post = await postMessage(sys.apiUrl, 'progress', 'run a long operation');
  const events = await readSse(`${sys.apiUrl}/v1/turns/${post.body.turnId}/events`, { timeoutMs: 60_000 });
  expect(events.at(-1)?.event).toBe('done');
  const started = events.findIndex((e) => e.event === 'tool_call_started');
  const finished = events.findIndex((e) => e.event === 'tool_call_finished');
  const progress = events.map((e, i) => ({ e, i })).filter(({ e }) => e.event === 'tool_progress');
  expect(progress.length).toBeGreaterThanOrEqual(2);
  for (const { e, i } of progress) {
    expect(i).toBeGreaterThan(started);
    expect(i).toBeLessThan(finished);
    expect(e.id).toBeUndefined();
    expect(e.data).toMatchObject({ turnId: post.body.turnId, toolCallId: events[started]?.data.toolCallId, total: 4 });
  }
  expect(progress.map(({ e }) => e.data.progress)).toEqual([...progress.map(({ e }) => e.data.progress)].sort());
});
