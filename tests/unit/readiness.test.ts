/**
 * The API's readiness (src/health/readiness.ts) on a clock of the test's own: one failed or slow
 * Temporal call never flips it, failures that last do; a bus reconnecting within its grace does not,
 * one that stays deaf does; MCP servers' states never do.
 */
import { createReadiness } from '../../src/health/readiness';
import type { ReceivedReport } from '../../src/health/reports';

const connected: ReceivedReport = {
  worker: 'w1',
  everyMs: 1000,
  reportedAt: '2026-11-25T00:00:00.000Z',
  phase: 'ready',
  servers: [{ server: 'a', transport: 'stdio', state: 'unavailable', toolCount: 0, error: 'spawn failed' }],
};

function setup() {
  const state = { now: 100_000, temporal: { ok: true } as { ok: boolean; error?: string }, bus: { ok: true } as { ok: boolean; downSinceMs?: number }, reports: [connected] };
  const readiness = createReadiness(
    { temporal: async () => state.temporal, bus: () => state.bus, workers: async () => state.reports },
    { graceMs: 5_000, busGraceMs: 1_000, now: () => state.now },
  );
  return { state, ready: () => readiness.ready() };
}

test('one failed Temporal call is tolerated and said; failures lasting the grace flip readiness; a success flips it back', async () => {
  const { state, ready } = setup();
  expect((await ready()).status).toBe('ready');
  state.temporal = { ok: false, error: 'deadline exceeded' };
  const once = await ready();
  expect(once.status).toBe('ready');
  expect(once.checks.temporal).toEqual({ ok: true, detail: 'one failed call tolerated: deadline exceeded' });
  // Still failing, but not for long enough.
  state.now += 4_000;
  expect((await ready()).status).toBe('ready');
  state.now += 1_000;
  const down = await ready();
  expect(down.status).toBe('not_ready');
  expect(down.pending).toEqual(['Temporal: deadline exceeded']);
  state.temporal = { ok: true };
  expect((await ready()).status).toBe('ready');
  // A fresh failure starts a fresh grace.
  state.temporal = { ok: false, error: 'unavailable' };
  state.now += 60_000;
  expect((await ready()).status).toBe('ready');
});

test('Temporal never reached: not ready from the first answer (nothing to be lenient about)', async () => {
  const { state, ready } = setup();
  state.temporal = { ok: false, error: 'connection refused' };
  expect((await ready()).pending).toEqual(['Temporal: connection refused']);
});

test('the bus: reconnecting within its grace is ready, deaf beyond it is not; MCP servers down are detail only', async () => {
  const { state, ready } = setup();
  state.bus = { ok: false, downSinceMs: 400 };
  const blip = await ready();
  expect(blip.status).toBe('ready');
  expect(blip.checks.bus).toEqual({ ok: true, detail: 'reconnecting its LISTEN connection' });
  expect(blip.mcp.ok).toBe(false);
  state.bus = { ok: false, downSinceMs: 2_500 };
  expect((await ready()).pending).toEqual(['live-text bus: not listening for live text for 3 s (reconnecting)']);
  state.bus = { ok: false };
  expect((await ready()).pending).toEqual(['live-text bus: not listening for live text yet']);
});

test('workers: a connecting one says what it does; one ready among them is enough; unreadable reports say why', async () => {
  const { state, ready } = setup();
  const starting: ReceivedReport = { ...connected, worker: 'w2', phase: 'connecting', servers: [], detail: 'connecting 3 MCP servers: a, b, c' };
  state.reports = [starting];
  const r = await ready();
  expect(r.checks.workers).toEqual({ ok: false, ready: 0, connecting: 1, detail: 'worker w2 is starting: connecting 3 MCP servers: a, b, c' });
  expect(r.mcp.error).toBe('worker w2 is starting: connecting 3 MCP servers: a, b, c');
  state.reports = [connected, starting];
  expect((await ready()).checks.workers).toEqual({ ok: true, ready: 1, connecting: 1 });
  // A report without a phase comes from a worker that reports only once connected.
  state.reports = [{ ...connected, phase: undefined } as unknown as ReceivedReport];
  expect((await ready()).status).toBe('ready');
});
