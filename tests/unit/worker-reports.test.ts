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

test('the reporter posts at once and then on schedule, with the secret; an API that fails is logged once and retried', async () => {
  const bodies: unknown[] = [];
  let fail = false;
  const server = createServer((req: IncomingMessage, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      if (req.headers.authorization !== 'Bearer s3cret-s3cret-s3cret') return void res.writeHead(401).end();
      if (fail) return void res.writeHead(500).end();
      bodies.push(JSON.parse(body));
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  const warnings: Array<Record<string, unknown>> = [];
  let calls = 0;
  const reporter = startWorkerReporter({
    url: `http://127.0.0.1:${port}/internal/workers`,
    secret: 's3cret-s3cret-s3cret',
    worker: '42@host',
    everyMs: 100,
    status: async () => [up(`call-${++calls}`)],
    logger: { warn: (obj) => warnings.push(obj) },
  });
  try {
    const until = async (ok: () => boolean) => {
      for (let i = 0; i < 100 && !ok(); i++) await new Promise((r) => setTimeout(r, 20));
      expect(ok()).toBe(true);
    };
    await until(() => bodies.length >= 3);
    expect(bodies[0]).toEqual({ worker: '42@host', everyMs: 100, servers: [up('call-1')] });
    fail = true;
    await until(() => warnings.length === 1 && calls >= bodies.length + 3);
    expect(warnings).toHaveLength(1);
    expect(JSON.stringify(warnings)).not.toContain('s3cret');
    expect(warnings[0]?.err).toMatch(/HTTP 500/);
    fail = false;
    const before = bodies.length;
    await reporter.reportNow();
    expect(bodies.length).toBe(before + 1);
  } finally {
    reporter.stop();
    await new Promise((r) => server.close(r));
  }
});
