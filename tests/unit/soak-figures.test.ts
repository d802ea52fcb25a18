import { growth, growthProblem, turnFigures, type Growth } from '../../soak/figures';
import { addProcessMetrics, metricSum, sample, type Sample } from '../../soak/sampler';
import type { TurnRecord } from '../../soak/users';

const turn = (over: Partial<TurnRecord>): TurnRecord =>
  ({ user: 1, kind: 'pay', via: 'sse', sessionId: 's', submittedAt: 0, outcome: 'completed', ids: [1, 2, 3], reconnects: 0, turnId: 't', lastEventId: 3, streamEnded: true, ...over }) as TurnRecord;

test("the soak judges a stream whole when it brought the turn's end, and up to its last event when the client stopped at the run's deadline", () => {
  const f = turnFigures([
    turn({ turnId: 'whole' }),
    turn({ turnId: 'tail-missed', ids: [1, 2], lastEventId: 3 }),
    turn({ turnId: 'cut', ids: [1, 2], lastEventId: 5, streamEnded: false }),
    turn({ turnId: 'cut-with-gap', ids: [1, 3], lastEventId: 5, streamEnded: false }),
    turn({ turnId: 'repeat', ids: [1, 2, 2, 3] }),
  ]);
  expect(f.streamFaults.map((s) => [s.turnId, s.problem])).toEqual([
    ['tail-missed', 'missed 3'],
    ['cut-with-gap', 'missed 2'],
    ['repeat', 'repeated 2'],
  ]);
  expect(f.streamsCutAtDeadline).toBe(2);
});

// A 10-minute run sampled every 4 s: warm-up 2 min, judged when watched 4 min past its warm-up.
const MIN = 60_000;
const window = { warmUpEnd: 2 * MIN, warmUpMs: 2 * MIN, minSpanMs: 4 * MIN };
const series = (name: string, pid: number, from: number, to: number, mb: (t: number, i: number) => number, extra: Partial<Sample> = {}): Sample[] =>
  Array.from({ length: Math.floor((to - from) / 4_000) + 1 }, (_, i) => {
    const t = from + i * 4_000;
    return { t, name, pid, rssMb: mb(t, i), fds: 50, ...extra };
  });
const judge = (samples: Sample[]) => growth(samples, window).map((g) => ({ g, problem: growthProblem(g) }));

test('a steady climb after warm-up fails the soak; the same memory reached during warm-up and then flat does not', () => {
  const [leak] = judge(series('api-1', 1, 0, 10 * MIN, (t) => 200 + (t / MIN) * 8));
  expect(leak?.problem).toMatch(/api-1 \(pid 1\): RSS \d+ → \d+ MB/);
  const [settled] = judge(series('api-1', 1, 0, 10 * MIN, (t) => (t < 2 * MIN ? 150 + (t / MIN) * 25 : 200)));
  expect(settled?.problem).toBeUndefined();
  expect(settled?.g).toMatchObject({ memKind: 'RSS', memFrom: 200, memTo: 200 });
});

test('a process restarted during the run is judged after a warm-up of its own, not from its first minute', () => {
  // Started at 3 min; its heap fills for 2 min (+20 %), then holds.
  const restarted = series('worker-1', 2, 3 * MIN, 10 * MIN, (t) => (t < 5 * MIN ? 250 + ((t - 3 * MIN) / MIN) * 50 : 350));
  const [g] = judge(restarted);
  expect(g?.g.skipped).toBeUndefined();
  expect(g?.g.windowMs).toBeGreaterThanOrEqual(5 * MIN - 4_000);
  expect(g?.problem).toBeUndefined();
  expect(g?.g.memFrom).toBe(350);
  // Started at 6 min: not watched 4 min past its own warm-up, so shown and not judged.
  const [late] = judge(series('worker-1', 5, 6 * MIN, 10 * MIN, (t) => 250 + ((t - 6 * MIN) / MIN) * 50));
  expect(late?.g.skipped).toMatch(/lived \d+ s after its warm-up/);
  expect(late?.problem).toBeUndefined();
});

test("a heap's sawtooth is judged by the medians of a quarter of the window, not by the samples at its ends", () => {
  // Collected every 40 s: 300 up to 380, then down again; flat on average. The last sample is a peak.
  const saw = series('worker-2', 3, 0, 10 * MIN + 36_000, (_t, i) => 300 + (i % 10) * 9);
  const [g] = judge(saw);
  expect(saw.at(-1)?.rssMb).toBeGreaterThan(370);
  expect(g?.problem).toBeUndefined();
  expect(Math.abs((g?.g.memTo ?? 0) - (g?.g.memFrom ?? 0))).toBeLessThan(20);
});

test("a heap that saws for minutes is judged by what the process holds, its RSS less the garbage not collected yet; a heap that leaks still fails", () => {
  // As api-2 on 2026-11-26: a full collection every 4 min, the heap 55 → 125 MB between them, RSS with it.
  // The quarters (2 min) catch different phases: the last sits at the top of a saw.
  const sawing = (leak: number) =>
    series('api-2', 7, 0, 10 * MIN, (t) => 160 + ((t + 2 * MIN) % (4 * MIN)) / MIN * 17.5 + (t / MIN) * leak).map((s) => {
      const garbage = ((s.t + 2 * MIN) % (4 * MIN)) / MIN * 17.5;
      return { ...s, heapUsedMb: 55 + garbage + (s.t / MIN) * leak, heapLiveMb: 55 + (s.t / MIN) * leak };
    });
  const raw = (samples: Sample[]) => judge(samples.map(({ heapLiveMb: _live, ...s }) => s))[0];
  // Without the heap's floor, the phase decides: a flat process fails.
  expect(raw(sawing(0))?.problem).toMatch(/api-2 \(pid 7\): RSS \d+ → \d+ MB/);
  const [flat] = judge(sawing(0));
  expect(flat?.g.memKind).toBe('RSS held');
  expect(flat?.problem).toBeUndefined();
  expect(flat?.g).toMatchObject({ heapLiveFrom: 55, heapLiveTo: 55 });
  expect(flat?.g.heapTotalFrom).toBeUndefined();
  // 3 MB a minute kept: the floor rises, and so does what is held.
  expect(judge(sawing(3))[0]?.problem).toMatch(/api-2 \(pid 7\): RSS held \d+ → \d+ MB/);
});

test("a process tree is judged by the sum of its PSS, which counts a page its processes share once", () => {
  // PostgreSQL: each backend touches more of the shared buffers, so the summed RSS climbs; PSS holds.
  const pg = series("Temporal's PostgreSQL", 4, 0, 10 * MIN, (t) => 800 + (t / MIN) * 120).map((s) => ({ ...s, pssMb: 300 }));
  const [g] = judge(pg);
  expect(g?.g).toMatchObject({ memKind: 'PSS', memFrom: 300, memTo: 300 });
  expect(g?.problem).toBeUndefined();
  const growing = pg.map((s) => ({ ...s, pssMb: 300 + ((s.t - 0) / MIN) * 10 }));
  expect(judge(growing)[0]?.problem).toMatch(/PSS \d+ → \d+ MB/);
});

test("a PostgreSQL whose backends cap their files: descriptors may grow to processes × the cap; more processes, or more than that, fail", () => {
  // As Temporal's on 2026-11-26: 36-37 processes all run, descriptors 1467 → 1624 as backends touch more tables.
  const pg = (processes: (t: number) => number, fds: (t: number) => number) =>
    series("Temporal's PostgreSQL", 4, 0, 10 * MIN, () => 800, { pssMb: 90 }).map((x) => ({ ...x, processes: processes(x.t), fds: fds(x.t) }));
  const capped = (samples: Sample[]) => growth(samples, window).map((g) => growthProblem({ ...g, fdsCapPerProcess: 64 }))[0];
  const filling = pg(() => 37, (t) => 1200 + (t / MIN) * 80);
  // Judged as any process, the filling caches fail the flat rule.
  expect(judge(filling)[0]?.problem).toMatch(/fds \d+ → \d+/);
  expect(capped(filling)).toBeUndefined();
  expect(growth(filling, window)[0]).toMatchObject({ processesFrom: 37, processesTo: 37 });
  // Connections that keep coming: more backends.
  expect(capped(pg((t) => 30 + Math.floor(t / MIN) * 2, (t) => 1400 + (t / MIN) * 25))).toMatch(/processes \d+ → \d+/);
  // More descriptors than the cap allows: not PostgreSQL's cache.
  expect(capped(pg(() => 20, (t) => 1000 + (t / MIN) * 60))).toMatch(/fds \d+, over 20 processes × 64/);
});

test("a worker's stdio servers are judged against a fresh set on the run's final data: growth the data explains passes, more fails", () => {
  // Their store grows all run: 130 → 180 MB of PSS.
  const servers = series('worker-3 stdio MCP servers', 6, 0, 10 * MIN, (t) => 120 + (t / MIN) * 6).map((s) => ({ ...s, pssMb: 120 + (s.t / MIN) * 6 }));
  const [g] = growth(servers, window);
  expect(growthProblem({ ...(g as Growth) })).toMatch(/PSS \d+ → \d+ MB/);
  // A fresh set on the final store needs 175 MB: within 10 % of it.
  expect(growthProblem({ ...(g as Growth), freshMb: 175 })).toBeUndefined();
  // One that needs 140 MB leaves 40 MB the data does not explain.
  expect(growthProblem({ ...(g as Growth), freshMb: 140 })).toMatch(/PSS \d+ → \d+ MB \(a fresh set on the final data: 140 MB\)/);
});

test("a worker's metrics are read from its Prometheus text, every label set summed; its heap and sticky cache are reported by quarters", () => {
  const text = [
    '# HELP temporal_sticky_cache_size Current number of cached workflows',
    'temporal_sticky_cache_size{namespace="default",task_queue="durable-mcp-host"} 12',
    'temporal_sticky_cache_size{namespace="other",task_queue="x"} 3',
    'dmh_worker_nodejs_heap_size_used_bytes 104857600',
    'dmh_worker_nodejs_heap_live_bytes 52428800',
    'temporal_sticky_cache_size_total 99',
  ].join('\n');
  expect(metricSum(text, 'temporal_sticky_cache_size')).toBe(15);
  expect(metricSum(text, 'dmh_worker_nodejs_heap_size_used_bytes')).toBe(104857600);
  expect(metricSum(text, 'dmh_worker_nodejs_heap_live_bytes')).toBe(52428800);
  expect(metricSum(text, 'absent')).toBeUndefined();
  const worker = series('worker-3', 6, 0, 10 * MIN, () => 350, { mcp: 7 }).map((s, i) => ({ ...s, heapUsedMb: 100 + i / 10, stickyCache: Math.min(40, i) }));
  const [g] = judge(worker);
  expect(g?.g.heapFrom).toBeGreaterThan(100);
  expect(g?.g.heapTo).toBeGreaterThan(g?.g.heapFrom ?? Infinity);
  expect(g?.g).toMatchObject({ stickyFrom: 40, stickyTo: 40 });
});

test("each process's metrics come from its own endpoint, an API's with its token: heap, sticky cache, live turns; one that does not answer keeps its sample as it was", async () => {
  const { createServer } = await import('node:http');
  const token = 'soak-metrics-token';
  const server = createServer((req, res) => {
    if (req.url === '/worker') return void res.end('dmh_worker_nodejs_heap_size_used_bytes 52428800\ndmh_worker_nodejs_heap_live_bytes 20971520\ndmh_worker_nodejs_heap_size_total_bytes 83886080\ndmh_worker_nodejs_external_memory_bytes 4194304\ntemporal_sticky_cache_size{task_queue="q"} 7\n');
    if (req.url === '/api' && req.headers.authorization === `Bearer ${token}`) return void res.end('dmh_api_nodejs_heap_size_used_bytes 31457280\ndmh_live_turns 12\n');
    res.statusCode = 401;
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  try {
    const at = (name: string, pid: number): Sample => ({ t: 0, name, pid, rssMb: 100, fds: 10 });
    const samples = [at('worker-1', 1), at('api-1', 2), at('api-2', 3), at('payments', 4)];
    const endpoints: Record<number, { url: string; token?: string }> = { 1: { url: `${base}/worker` }, 2: { url: `${base}/api`, token }, 3: { url: `${base}/api`, token: 'wrong' } };
    await addProcessMetrics(samples, (pid) => endpoints[pid]);
    expect(samples.map(({ name, heapUsedMb, stickyCache, liveTurns }) => ({ name, heapUsedMb, stickyCache, liveTurns }))).toEqual([
      { name: 'worker-1', heapUsedMb: 50, stickyCache: 7, liveTurns: undefined },
      { name: 'api-1', heapUsedMb: 30, stickyCache: undefined, liveTurns: 12 },
      { name: 'api-2', heapUsedMb: undefined, stickyCache: undefined, liveTurns: undefined },
      { name: 'payments', heapUsedMb: undefined, stickyCache: undefined, liveTurns: undefined },
    ]);
    expect(samples.map((s) => s.heapLiveMb)).toEqual([20, undefined, undefined, undefined]);
    expect(samples.map((s) => s.heapTotalMb)).toEqual([80, undefined, undefined, undefined]);
    expect(samples.map((s) => s.externalMb)).toEqual([4, undefined, undefined, undefined]);
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
});

test("a single process's sample splits its RSS: the pages of mapped files (the node binary's among them) beside the whole", () => {
  const [me] = sample([{ name: 'jest', pid: process.pid }], 1);
  expect(me?.rssMb).toBeGreaterThan(0);
  // This very process runs the node binary: part of its RSS maps that file.
  expect(me?.rssFileMb).toBeGreaterThan(1);
  expect(me?.rssFileMb).toBeLessThan(me?.rssMb ?? 0);
  expect(me?.pssMb).toBeUndefined();
  expect(me?.processes).toBeUndefined();
  // As a tree (PostgreSQL's way): PSS summed, and its processes counted.
  const [tree] = sample([{ name: 'jest tree', pid: process.pid, tree: true }], 1);
  expect(tree?.pssMb).toBeGreaterThan(0);
  expect(tree?.processes).toBeGreaterThanOrEqual(1);
  expect(tree?.rssFileMb).toBeUndefined();
});
