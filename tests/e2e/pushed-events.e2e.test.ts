import type { DemoRules } from '../../src/demo-model/rules';
import type { TurnState } from '../../src/shared/turn';
import { postMessage, readSse, type SseEvent } from '../helpers/http';
import { startSystem, type TestSystem } from '../helpers/system';

/**
 * Durable events pushed by the workflow's sink (docs/decisions/0015-durable-events-pushed.md): SSE
 * serves a turn without reading it from Temporal while the live channel works, and falls back to
 * reading it when the channel is cut.
 */
const RULES: DemoRules = {
  model: 'demo-model',
  fallback: 'no script',
  scripts: [{ name: 'tool', match: '^remember', steps: [{ toolCalls: [{ name: 'notes__add_note', arguments: { text: 'milk' } }] }, { text: 'Noted.' }] }],
};

let sys: TestSystem;
beforeAll(async () => {
  // The follower's safety-net reads (a quiet spell, a first push late) are timing: on a loaded machine
  // a turn's step can be silent for seconds. Widened here, a read in the first test can only come from
  // a missing push; the second (no pushes at all) reads after the 10 s grace.
  sys = await startSystem({ rules: RULES, sseSafetyNet: { quietPollMs: 60_000, expectedPushGraceMs: 10_000 } });
}, 120_000);
afterAll(async () => {
  await sys?.stop();
});

/** POST + SSE to the end; what the stream carried, the turn's record (read with the Temporal client, not the API) and the API's reads meanwhile. */
async function streamTurn(session: string) {
  const before = sys.turnReads();
  const { body } = await postMessage(sys.apiUrl, session, 'remember milk');
  const events = await readSse(`${sys.apiUrl}${body.eventsUrl as string}`, { timeoutMs: 60_000 });
  const after = sys.turnReads();
  const record = (await sys.client.workflow.getHandle(body.turnId as string).result()) as TurnState;
  const durable = events.filter((e): e is SseEvent & { id: string } => e.id !== undefined);
  return { events, durable, record, reads: { queries: after.queries - before.queries, describes: after.describes - before.describes, results: after.results - before.results } };
}

test('SSE carries every durable event of a turn, as the record has them, without one Temporal read of the turn', async () => {
  for (let i = 0; i < 3; i++) {
    const { durable, record, reads } = await streamTurn(`pushed-${i}`);
    expect(durable.map((e) => Number(e.id))).toEqual(record.events.map((e) => e.id));
    expect(durable.map((e) => e.event)).toEqual(record.events.map((e) => e.type));
    expect(durable.at(-1)?.event).toBe('done');
    expect(record.toolCalls).toHaveLength(1);
    expect(reads).toEqual({ queries: 0, describes: 0, results: 0 });
  }
}, 120_000);

test('with the live channel cut (a worker with the wrong secret), streams fall back to reading the turn and still get every event', async () => {
  await sys.worker.stop();
  const worker = await sys.startWorker({ LIVE_SECRET: 'not-the-secret-of-this-api' });
  try {
    const { durable, record, reads } = await streamTurn('cut');
    expect(durable.map((e) => Number(e.id))).toEqual(record.events.map((e) => e.id));
    expect(durable.at(-1)?.event).toBe('done');
    expect(reads.queries).toBeGreaterThan(0);
  } finally {
    await worker.stop();
  }
}, 120_000);
