import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/**
 * What every process of the topology holds, from /proc (Linux): resident memory, open file
 * descriptors, and for a worker its MCP connections (its stdio servers, its sockets to the payments
 * server). A process tree (PostgreSQL, a worker's stdio servers) counts as the sum of its processes;
 * for a tree the memory judged is the sum of their PSS, which counts a page shared by several of them
 * (PostgreSQL's shared buffers, the node binary) once, where the sum of RSS counts it once per process.
 */
export interface Sample {
  t: number;
  name: string;
  pid: number;
  rssMb: number;
  /** Trees only: the sum of the processes' proportional set sizes (smaps_rollup `Pss`). */
  pssMb?: number;
  /** Single processes: the part of the RSS that maps files (`RssFile`: the node binary's and libraries' pages, clean, shared). */
  rssFileMb?: number;
  fds: number;
  /** Trees only: how many processes the tree had (PostgreSQL: its backends, one per connection, and its own). */
  processes?: number;
  /** Workers only: stdio MCP server processes + open connections to the HTTP MCP server. */
  mcp?: number;
  /** Workers and APIs, from their GET /metrics: the V8 heap in use (MB). */
  heapUsedMb?: number;
  /** The same, just after the last full collection (MB): the floor of the heap's saw (src/metrics/heap-live.ts). */
  heapLiveMb?: number;
  /** The heap V8 holds from the system (MB, committed): what stays in the RSS when the heap in use falls. */
  heapTotalMb?: number;
  /** Memory of JavaScript objects held outside the V8 heap (Buffers, ArrayBuffers; MB). */
  externalMb?: number;
  /** Workers: the SDK's sticky workflow cache (runs). */
  stickyCache?: number;
  /** APIs: the turns whose live text the replica holds. */
  liveTurns?: number;
}

export interface Watched {
  name: string;
  pid: number;
  /** Sum the whole tree (PostgreSQL forks a process per connection). */
  tree?: boolean;
  /** Only the tree's processes with this command name (e.g. temporal-server under its script). */
  comm?: string;
  worker?: boolean;
  /** Only the descendants, not the process itself (a worker's stdio MCP servers). */
  children?: boolean;
}

const read = (file: string): string | undefined => {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
};

function processTable(): Map<number, { ppid: number; comm: string }> {
  const table = new Map<number, { ppid: number; comm: string }>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = read(`/proc/${entry}/stat`);
    if (!stat) continue;
    const close = stat.lastIndexOf(')');
    const comm = stat.slice(stat.indexOf('(') + 1, close);
    const ppid = Number(stat.slice(close + 2).split(' ')[1]);
    table.set(Number(entry), { ppid, comm });
  }
  return table;
}

function descendants(pid: number, table: Map<number, { ppid: number }>): number[] {
  const out = [pid];
  for (let i = 0; i < out.length; i++) for (const [p, v] of table) if (v.ppid === out[i]) out.push(p);
  return out;
}

const statusKb = (pid: number, key: string): number => Number(new RegExp(`^${key}:\\s+(\\d+)`, 'm').exec(read(`/proc/${pid}/status`) ?? '')?.[1] ?? 0);
const rssKb = (pid: number): number => statusKb(pid, 'VmRSS');
const pssKb = (pid: number): number => Number(/^Pss:\s+(\d+)/m.exec(read(`/proc/${pid}/smaps_rollup`) ?? '')?.[1] ?? 0);
/** One process's proportional set size in MB (0 once it is gone). */
export const pssMbOf = (pid: number): number => pssKb(pid) / 1024;

/** The memory the soak judges and draws: a single process's RSS, a tree's PSS (see Sample). */
export const memoryMb = (s: Sample): number => s.pssMb ?? s.rssMb;
export const memoryKind = (s: Sample): 'RSS' | 'PSS' => (s.pssMb === undefined ? 'RSS' : 'PSS');
function fdLinks(pid: number): string[] {
  try {
    return readdirSync(`/proc/${pid}/fd`).map((fd) => {
      try {
        return readlinkSync(`/proc/${pid}/fd/${fd}`);
      } catch {
        return '';
      }
    });
  } catch {
    return [];
  }
}

/** Socket inodes of established TCP connections to `port` (IPv4 and IPv6). */
function connectionsTo(port: number): Set<string> {
  const inodes = new Set<string>();
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of (read(file) ?? '').split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      const remote = cols[2]?.split(':')[1];
      if (remote && parseInt(remote, 16) === port && cols[3] === '01' && cols[9]) inodes.add(cols[9]);
    }
  }
  return inodes;
}

export function sample(watched: Watched[], mcpHttpPort: number, t = Date.now()): Sample[] {
  const table = processTable();
  const toPayments = connectionsTo(mcpHttpPort);
  const out: Sample[] = [];
  for (const w of watched) {
    if (!table.has(w.pid)) continue;
    let pids = w.tree || w.comm || w.children ? descendants(w.pid, table) : [w.pid];
    if (w.children) pids = pids.slice(1);
    if (w.comm) pids = pids.filter((p) => table.get(p)?.comm === w.comm);
    if (pids.length === 0) continue;
    const links = pids.flatMap(fdLinks);
    const s: Sample = { t, name: w.name, pid: w.children ? w.pid : (pids[0] ?? w.pid), rssMb: pids.reduce((sum, p) => sum + rssKb(p), 0) / 1024, fds: links.length };
    if (w.tree || w.children) {
      s.pssMb = pids.reduce((sum, p) => sum + pssKb(p), 0) / 1024;
      s.processes = pids.length;
    } else s.rssFileMb = statusKb(s.pid, 'RssFile') / 1024;
    if (w.worker) {
      const children = [...table].filter(([, v]) => v.ppid === w.pid).length;
      const sockets = links.filter((l) => toPayments.has(/^socket:\[(\d+)\]$/.exec(l)?.[1] ?? '')).length;
      s.mcp = children + sockets;
    }
    out.push(s);
  }
  return out;
}

/** The sum of a Prometheus metric's samples (all label sets) in an exposition text, or undefined. */
export function metricSum(text: string, name: string): number | undefined {
  let sum: number | undefined;
  for (const line of text.split('\n')) {
    const m = new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.eE+-]+)$`).exec(line);
    if (m) sum = (sum ?? 0) + Number(m[1]);
  }
  return sum;
}

/**
 * Adds what each process's GET /metrics says to its sample: the V8 heap in use and its floor after the
 * last full collection (a worker's or an API's), a worker's sticky cache, an API's live turns. A process that does not answer within 2 s
 * (starting, killed) is left as it is.
 */
export async function addProcessMetrics(samples: Sample[], metricsOf: (pid: number) => { url: string; token?: string } | undefined): Promise<void> {
  await Promise.all(
    samples.map(async (s) => {
      // A tree's row (a worker's stdio servers) shares the worker's pid, not its metrics.
      const endpoint = s.pssMb === undefined ? metricsOf(s.pid) : undefined;
      if (!endpoint) return;
      try {
        const res = await fetch(endpoint.url, { signal: AbortSignal.timeout(2_000), ...(endpoint.token ? { headers: { authorization: `Bearer ${endpoint.token}` } } : {}) });
        if (!res.ok) return;
        const text = await res.text();
        const heap = metricSum(text, 'dmh_worker_nodejs_heap_size_used_bytes') ?? metricSum(text, 'dmh_api_nodejs_heap_size_used_bytes');
        const heapLive = metricSum(text, 'dmh_worker_nodejs_heap_live_bytes') ?? metricSum(text, 'dmh_api_nodejs_heap_live_bytes');
        const heapTotal = metricSum(text, 'dmh_worker_nodejs_heap_size_total_bytes') ?? metricSum(text, 'dmh_api_nodejs_heap_size_total_bytes');
        const external = metricSum(text, 'dmh_worker_nodejs_external_memory_bytes') ?? metricSum(text, 'dmh_api_nodejs_external_memory_bytes');
        const sticky = metricSum(text, 'temporal_sticky_cache_size');
        const live = metricSum(text, 'dmh_live_turns');
        if (heap !== undefined) s.heapUsedMb = heap / (1024 * 1024);
        if (heapLive !== undefined) s.heapLiveMb = heapLive / (1024 * 1024);
        if (heapTotal !== undefined) s.heapTotalMb = heapTotal / (1024 * 1024);
        if (external !== undefined) s.externalMb = external / (1024 * 1024);
        if (sticky !== undefined) s.stickyCache = sticky;
        if (live !== undefined) s.liveTurns = live;
      } catch {
        // Not answering now: no figure for this sample.
      }
    }),
  );
}
