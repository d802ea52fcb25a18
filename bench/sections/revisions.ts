/**
 * 10. A tool call on each MCP revision (issue 22 §4, decision 0024): one `tools/call` through the
 * pool (McpServerHub.callTool, the path of the worker's callTool activity) to a 2025-11-25 server
 * (the v1 SDK, with sessions) and to a 2026-07-28 server (the v2 server package), both over
 * Streamable HTTP in a process of their own (bench/lib/revision-servers.ts), so this process's CPU is
 * the client's. Per path: latency, client CPU per call, and the HTTP requests per call as the client
 * sent them (a counting fetch, bench/lib/request-counter.ts), on a warm connection and for a new
 * pool's first call (connect and discovery included; its close is not counted). Each server's floor
 * is the warm call's own `tools/call` request sent again by a bare fetch: the same bytes to the same
 * server, no SDK. Warm paths and floors are interleaved one by one, and so are the first-call paths.
 */
import path from 'node:path';
import { parseMcpConfig } from '../../src/mcp/config';
import { McpServerHub } from '../../src/mcp/pool';
import { spawnManaged } from '../../src/cli/processes';
import { ROOT } from '../../tests/helpers/system';
import { READY_LINE } from '../lib/revision-servers';
import { installCounter, type RequestCounter } from '../lib/request-counter';
import { ms, summarize, table, type Summary } from '../lib/stats';
import { log, type Options } from '../options';

type Revision = '2025' | '2026';
type PathName = 'floor2025' | 'warm2025' | 'first2025' | 'auto2025' | 'floor2026' | 'warm2026' | 'first2026' | 'auto2026';
// A floor replays its warm path's last request: the warm path goes first.
const WARM: readonly PathName[] = ['warm2025', 'floor2025', 'warm2026', 'floor2026'];
const FIRST: readonly PathName[] = ['first2025', 'auto2025', 'first2026', 'auto2026'];
const ORDER: readonly PathName[] = ['floor2025', 'warm2025', 'first2025', 'auto2025', 'floor2026', 'warm2026', 'first2026', 'auto2026'];
const REVISION: Record<PathName, Revision> = {
  floor2025: '2025', warm2025: '2025', first2025: '2025', auto2025: '2025',
  floor2026: '2026', warm2026: '2026', first2026: '2026', auto2026: '2026',
};
const LABEL: Record<PathName, string> = {
  floor2025: 'floor: that tools/call POST again, bare fetch (2025 server, its session)',
  warm2025: '2025-11-25 (v1 SDK), warm connection',
  first2025: '2025-11-25 pinned, a new pool\'s first call',
  auto2025: 'auto on the 2025 server, a new pool\'s first call',
  floor2026: 'floor: that tools/call POST again, bare fetch (2026 server)',
  warm2026: '2026-07-28 (v2 client), warm connection',
  first2026: '2026-07-28 pinned, a new pool\'s first call',
  auto2026: 'auto on the 2026 server, a new pool\'s first call',
};
const NAME = 'Ada';

export interface RevisionPath {
  latency: Summary;
  /** Client CPU (this process, user + system) per call, ms. */
  cpuMs: number;
  requestsPerCall: number;
  /** The requests of the most frequent call, in order, and how many calls sent exactly those. */
  requests: string[];
  callsLikeThat: number;
}

export interface RevisionsResult {
  warmCalls: number;
  firstCalls: number;
  paths: Record<PathName, RevisionPath>;
}

interface Sample {
  ms: number;
  cpuMs: number;
  requests: string[];
}

const cpuNow = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

/** The hub's config: both servers, each pinned to its revision or left to `auto` (no `protocol`). */
function hubFor(urls: Record<Revision, string>, pinned: boolean): McpServerHub {
  const entry = (url: string, protocol: string) => ({ url, ...(pinned ? { protocol } : {}) });
  const config = parseMcpConfig({ mcpServers: { s2025: entry(urls['2025'], '2025-11-25'), s2026: entry(urls['2026'], '2026-07-28') } }, {}, ROOT, 'bench (generated config)');
  return new McpServerHub(config);
}

async function call(hub: McpServerHub, revision: Revision): Promise<void> {
  const outcome = await hub.callTool({ server: `s${revision}`, tool: 'greet', arguments: { name: NAME } });
  if (outcome.isError || !outcome.text.includes(`${revision === '2025' ? '2025-11-25' : '2026-07-28'} server`)) throw new Error(`revisions: s${revision} greet answered ${outcome.text}`);
}

/** Times `run`, with this process's CPU and the requests sent meanwhile. */
async function measure(counter: RequestCounter, run: () => Promise<void>): Promise<Sample> {
  const mark = counter.mark();
  const cpu0 = cpuNow();
  const t0 = performance.now();
  await run();
  const elapsed = performance.now() - t0;
  const cpu = cpuNow() - cpu0;
  return { ms: elapsed, cpuMs: cpu, requests: counter.since(mark) };
}

/**
 * A new pool's first call: connect (and discovery) included. Its requests are those sent from the
 * call's start until the pool is closed (a stream the connection opens beside the call counts); the
 * close's own requests do not.
 */
async function firstCall(counter: RequestCounter, urls: Record<Revision, string>, p: PathName): Promise<Sample> {
  const hub = hubFor(urls, p.startsWith('first'));
  try {
    const mark = counter.mark();
    const sample = await measure(counter, () => call(hub, REVISION[p]));
    await new Promise((resolve) => setImmediate(resolve));
    return { ...sample, requests: counter.since(mark) };
  } finally {
    await hub.close();
  }
}

function reduce(samples: readonly Sample[]): RevisionPath {
  const shapes = new Map<string, number>();
  for (const s of samples) shapes.set(s.requests.join(','), (shapes.get(s.requests.join(',')) ?? 0) + 1);
  const [common, count] = [...shapes.entries()].sort((a, b) => b[1] - a[1])[0] ?? ['', 0];
  return {
    latency: summarize(samples.map((s) => s.ms)),
    cpuMs: samples.reduce((a, s) => a + s.cpuMs, 0) / Math.max(1, samples.length),
    requestsPerCall: samples.reduce((a, s) => a + s.requests.length, 0) / Math.max(1, samples.length),
    requests: common ? common.split(',') : [],
    callsLikeThat: count,
  };
}

export async function revisionsSection(opts: Options): Promise<RevisionsResult> {
  const servers = await spawnManaged('revision-servers', process.execPath, [path.join(__dirname, '..', 'lib', 'revision-servers.js')], { readyLine: READY_LINE, readyTimeoutMs: 30_000 });
  const { counter, restore } = installCounter();
  try {
    const listening = JSON.parse(servers.match?.[1] ?? '{}') as { legacy: string; modern: string };
    const urls: Record<Revision, string> = { '2025': listening.legacy, '2026': listening.modern };
    const hub = hubFor(urls, true);
    const samples = Object.fromEntries(ORDER.map((p) => [p, [] as Sample[]])) as Record<PathName, Sample[]>;
    const run = async (p: PathName): Promise<Sample> => {
      if (p.startsWith('floor')) return await measure(counter, () => counter.replay('tools/call', urls[REVISION[p]]));
      if (p.startsWith('warm')) return await measure(counter, () => call(hub, REVISION[p]));
      return await firstCall(counter, urls, p);
    };
    try {
      log(`revisions: ${opts.warmup} warm-up + ${opts.revisionCalls} calls per warm path and floor, interleaved`);
      for (let i = 0; i < Math.max(1, opts.warmup); i++) for (const p of WARM) await run(p);
      for (let i = 0; i < opts.revisionCalls; i++) for (let j = 0; j < WARM.length; j++) {
        const p = WARM[(i + j) % WARM.length] as PathName;
        samples[p].push(await run(p));
      }
      log(`revisions: 1 untimed + ${opts.revisionFirst} first calls of a new pool per path, interleaved`);
      for (const p of FIRST) await run(p);
      for (let i = 0; i < opts.revisionFirst; i++) for (let j = 0; j < FIRST.length; j++) {
        const p = FIRST[(i + j) % FIRST.length] as PathName;
        samples[p].push(await run(p));
      }
    } finally {
      await hub.close();
    }
    return {
      warmCalls: opts.revisionCalls,
      firstCalls: opts.revisionFirst,
      paths: Object.fromEntries(ORDER.map((p) => [p, reduce(samples[p])])) as Record<PathName, RevisionPath>,
    };
  } finally {
    restore();
    await servers.proc.stop();
  }
}

export function renderRevisions(r: RevisionsResult): string {
  const x = (a: number, b: number) => `${(a / b).toFixed(1)}x`;
  const rows = ORDER.map((p) => {
    const m = r.paths[p];
    const floor = r.paths[REVISION[p] === '2025' ? 'floor2025' : 'floor2026'];
    const shape = m.requests.join(', ') + (m.callsLikeThat < m.latency.n ? ` (${m.callsLikeThat} of ${m.latency.n} calls)` : '');
    return [LABEL[p], m.requestsPerCall.toFixed(1), ms(m.latency.p50), ms(m.latency.p95), x(m.latency.p50, floor.latency.p50), ms(m.cpuMs), x(m.cpuMs, floor.cpuMs), shape];
  });
  return [
    `10. A tool call on each MCP revision, Streamable HTTP on loopback, servers in a process of their own: ${r.warmCalls} warm calls per path, ` +
      `${r.firstCalls} first calls of a new pool per path; CPU is the client's (ms per call); ratios to the floor of the same server`,
    table(['path', 'HTTP requests/call', 'p50 ms', 'p95 ms', 'p50/floor', 'client CPU ms', 'CPU/floor', 'requests of a call'], rows),
    'A GET (2025-11-25) or subscriptions/listen (2026-07-28) is the stream a new connection opens for what the server sends on its own: ' +
      'started beside the call, not awaited by it. The close of a new pool (a DELETE of its 2025 session) is not counted.',
  ].join('\n');
}
