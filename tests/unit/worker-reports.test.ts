/**
 * Worker reports (src/health): the registry forgets a worker that missed three reports, the summary
 * does not depend on which worker is asked, and the reporter posts on schedule and survives an API
 * that is down.
 */
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { memoryWorkerReports, summarize, type ReceivedReport } from '../../src/health/reports';
import { reportUrlFrom, startWorkerReporter } from '../../src/health/reporter';
import type { ServerStatus } from '../../src/shared/tool-types';

const up = (server: string): ServerStatus => ({ server, transport: 'stdio', state: 'connected', toolCount: 2 });
const down = (server: string, error = 'connection refused'): ServerStatus => ({ server, transport: 'streamable-http', state: 'unavailable', toolCount: 0, error });
const report = (worker: string, servers: ServerStatus[]): ReceivedReport => ({ worker, everyMs: 1000, servers, reportedAt: '2026-11-25T00:00:00.000Z' });

test('a worker that misses three reports drops out; the others stay, sorted by name', async () => {
  let now = 10_000;
  const reports = memoryWorkerReports(() => now);
  await reports.record({ worker: 'w2', everyMs: 1000, servers: [up('a')] });
  await reports.record({ worker: 'w1', everyMs: 5000, servers: [up('a')] });
  expect((await reports.current()).map((r) => r.worker)).toEqual(['w1', 'w2']);
  now += 3000;
  expect((await reports.current()).map((r) => r.worker)).toEqual(['w1', 'w2']);
  now += 1;
  expect((await reports.current()).map((r) => r.worker)).toEqual(['w1']);
  // A new report brings it back, with the time the API received it.
  await reports.record({ worker: 'w2', everyMs: 1000, servers: [down('a')] });
  const w2 = (await reports.current()).find((r) => r.worker === 'w2');
  expect(w2?.reportedAt).toBe(new Date(now).toISOString());
  expect(w2?.servers[0]?.state).toBe('unavailable');
});

test('the summary: a server is unavailable if any worker cannot use it, whatever the order of the reports', () => {
  const reports = [report('w1', [up('a'), up('b')]), report('w2', [up('a'), down('b')]), report('w3', [up('a'), up('b')])];
  const summary = summarize(reports);
  expect(summary).toEqual(summarize([...reports].reverse()));
  expect(summary.ok).toBe(false);
  expect(summary.servers.map((s) => [s.server, s.state])).toEqual([['a', 'connected'], ['b', 'unavailable']]);
  expect(summary.servers[1]?.error).toBe('unavailable on 1 of 3 workers: connection refused');

  expect(summarize([report('w1', [up('a'), down('b', 'circuit open')])]).servers[1]?.error).toBe('circuit open');
  expect(summarize([report('w1', [up('a')]), report('w2', [up('a')])])).toEqual({ ok: true, servers: [up('a')] });
  const none = summarize([]);
  expect(none.ok).toBe(false);
  expect(none.error).toMatch(/no worker has reported/);
});

test('the report route sits beside the live route', () => {
  expect(reportUrlFrom('http://127.0.0.1:3000/internal/live')).toBe('http://127.0.0.1:3000/internal/workers');
  expect(reportUrlFrom('https://api.example.com/host/internal/live')).toBe('https://api.example.com/host/internal/workers');
});

/**
 * The report route on a real port. Tests wait on what it received (`until`, checked at every request),
 * never on a duration: a loaded machine only makes them slower.
 */
async function fakeApi() {
  const bodies: Array<{ worker: string; everyMs: number; servers: ServerStatus[] }> = [];
  const state = { fail: false, failed: 0 };
  const checks = new Set<() => void>();
  const server = createServer((req: IncomingMessage, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      if (req.headers.authorization !== 'Bearer s3cret-s3cret-s3cret') res.writeHead(401).end();
      else if (state.fail) {
        state.failed++;
        res.writeHead(500).end();
      } else {
        bodies.push(JSON.parse(body));
        res.writeHead(204).end();
      }
      for (const check of checks) check();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/internal/workers`,
    bodies,
    state,
    until: (ok: () => boolean) =>
      new Promise<void>((resolve) => {
        const check = () => {
          if (!ok()) return;
          checks.delete(check);
          resolve();
        };
        checks.add(check);
        check();
      }),
    close: () => new Promise((r) => server.close(r)),
  };
}

test('the reporter posts at once and then on schedule, with the secret; an API that fails is logged once and retried', async () => {
  const api = await fakeApi();
  const warnings: Array<Record<string, unknown>> = [];
  let calls = 0;
  const reporter = startWorkerReporter({
    url: api.url,
    secret: 's3cret-s3cret-s3cret',
    worker: '42@host',
    everyMs: 100,
    status: async () => [up(`call-${++calls}`)],
    logger: { warn: (obj) => warnings.push(obj) },
  });
  try {
    await api.until(() => api.bodies.length >= 3);
    expect(api.bodies[0]).toEqual({ worker: '42@host', everyMs: 100, servers: [up('call-1')] });
    api.state.fail = true;
    // Retried on schedule; reportNow() then returns after every report begun before it has ended.
    await api.until(() => api.state.failed >= 3);
    await reporter.reportNow();
    expect(warnings).toHaveLength(1);
    expect(JSON.stringify(warnings)).not.toContain('s3cret');
    expect(warnings[0]?.err).toMatch(/HTTP 500/);
    api.state.fail = false;
    const asked = calls;
    await reporter.reportNow();
    expect(api.bodies.at(-1)?.servers).toEqual([up(`call-${asked + 1}`)]);
  } finally {
    reporter.stop();
    await api.close();
  }
});

test('reportNow while a report is on its way sends one more, with the states read after the call', async () => {
  const api = await fakeApi();
  let state = 'before';
  let release = () => {};
  const held = new Promise<void>((r) => (release = r));
  let reads = 0;
  const reporter = startWorkerReporter({
    url: api.url,
    secret: 's3cret-s3cret-s3cret',
    worker: '42@host',
    everyMs: 60_000,
    status: async () => {
      const seen = state;
      if (++reads === 1) await held;
      return [up(seen)];
    },
    logger: { warn: () => {} },
  });
  try {
    // The first report has read its states and is held on its way: what changes now is not in it.
    expect(reads).toBe(1);
    state = 'after';
    const asked = [reporter.reportNow(), reporter.reportNow()];
    release();
    await Promise.all(asked);
    // Both callers share the one report that follows, and nothing else was sent.
    expect(api.bodies.map((b) => b.servers)).toEqual([[up('before')], [up('after')]]);
  } finally {
    reporter.stop();
    await api.close();
  }
});

test('a worker still connecting reports what it does without waiting for its servers, then its states the moment it asks', async () => {
  const api = await fakeApi();
  let phase: { phase: 'connecting' | 'ready'; detail?: string } = { phase: 'connecting', detail: 'connecting 2 MCP servers: a, b' };
  let statusCalls = 0;
  const reporter = startWorkerReporter({
    url: [api.url],
    secret: 's3cret-s3cret-s3cret',
    worker: '42@host',
    // Long: only the first report and reportNow() can explain what the API receives.
    everyMs: 60_000,
    status: async () => (statusCalls++, [up('a'), up('b')]),
    phase: () => phase,
    logger: { warn: () => {} },
  });
  try {
    await api.until(() => api.bodies.length >= 1);
    expect(api.bodies[0]).toEqual({ worker: '42@host', everyMs: 60_000, servers: [], phase: 'connecting', detail: 'connecting 2 MCP servers: a, b' });
    // The connecting report did not ask the pool (which would wait for the connections).
    expect(statusCalls).toBe(0);
    phase = { phase: 'ready' };
    await reporter.reportNow();
    expect(api.bodies.at(-1)).toEqual({ worker: '42@host', everyMs: 60_000, servers: [up('a'), up('b')], phase: 'ready' });
    expect(summarize([{ ...report('42@host', []), phase: 'connecting', detail: 'connecting 2 MCP servers: a, b' }]).error).toBe(
      'worker 42@host is starting: connecting 2 MCP servers: a, b',
    );
  } finally {
    reporter.stop();
    await api.close();
  }
});
