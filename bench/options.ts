/** Command-line options of the bench, its sections and the targets it reports against (never enforces). */
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ROOT } from '../tests/helpers/system';

export const TARGETS = { addedPerStepP50Ms: 5, durableTurnsPerSecond: 50, pooledSpeedup: 50, firstSseEventP50Ms: 30, addedTtftP50Ms: 50 };
export const SESSION = 'bench';
export const SECTIONS = ['pooling', 'latency', 'api', 'streaming', 'session-hop', 'protocols', 'codec', 'tool-search', 'context', 'revisions', 'throughput', 'scale'] as const;
export type Section = (typeof SECTIONS)[number];

export interface Options {
  turns: number;
  warmup: number;
  total: number;
  levels: number[];
  workers: number;
  pooled: number;
  perCall: number;
  apiTurns: number;
  streamTurns: number;
  streamWarmup: number;
  streamHistoryTurns: number;
  chunkDelayMs: number;
  budgetS: number;
  scaleTurns: number;
  scaleConcurrency: number;
  /** Revisions: warm calls per path (and floor requests per server). */
  revisionCalls: number;
  /** Revisions: first calls of a new pool per path. */
  revisionFirst: number;
  /** `dev`: the Temporal dev server (SQLite); `cluster`: the full server on PostgreSQL (scripts/temporal-cluster.sh). */
  temporal: 'dev' | 'cluster';
  sections: Section[];
  out: string;
  /** A directory where the host's worker and the floor's worker write CPU profiles (node --cpu-prof), or undefined. */
  profile?: string;
}

export function parseOptions(): Options {
  const { values } = parseArgs({
    options: {
      turns: { type: 'string' },
      warmup: { type: 'string' },
      total: { type: 'string' },
      levels: { type: 'string' },
      workers: { type: 'string' },
      pooled: { type: 'string' },
      'per-call': { type: 'string' },
      'api-turns': { type: 'string' },
      'stream-turns': { type: 'string' },
      'stream-warmup': { type: 'string' },
      'stream-history-turns': { type: 'string' },
      'chunk-delay-ms': { type: 'string' },
      'budget-s': { type: 'string' },
      'scale-turns': { type: 'string' },
      'scale-concurrency': { type: 'string' },
      'revision-calls': { type: 'string' },
      'revision-first': { type: 'string' },
      temporal: { type: 'string' },
      sections: { type: 'string' },
      out: { type: 'string' },
      profile: { type: 'string' },
      quick: { type: 'boolean' },
      help: { type: 'boolean' },
    },
  });
  if (values.help) {
    process.stdout.write(
      [
        'usage: npm run bench -- [options]',
        '  --turns N       sequential turns per latency configuration (default 50)',
        '  --warmup N      untimed warm-up turns per configuration (default 8)',
        '  --total N       turns per throughput level (default 100)',
        '  --levels LIST   throughput concurrency levels (default 1,4,16,32)',
        '  --workers N     worker processes for the durable path (default 1)',
        '  --pooled N      pooled MCP calls per server (default 200)',
        '  --per-call N    connect-per-call MCP calls per server (default 20)',
        '  --api-turns N   turns through the HTTP API + SSE (default 30)',
        '  --stream-turns N          streaming: measured turns, each paired with a direct request (default 40)',
        '  --stream-warmup N         streaming: untimed warm-up pairs (default 5)',
        '  --stream-history-turns N  streaming: turns per answer length for the history counts (default 3)',
        '  --chunk-delay-ms N        streaming: demo model pause after each text chunk, both paths (default 2)',
        '  --budget-s N    skip a throughput level that would end after this many seconds (default 250;',
        '                  the streaming section\'s time is not counted)',
        '  --scale-turns N          scale-out: turns per workers x APIs combination (default 40)',
        '  --scale-concurrency N    scale-out: turns in flight (default 8)',
        '  --revision-calls N       revisions: warm tool calls per path and floor (default 200)',
        '  --revision-first N       revisions: first calls of a new pool per path (default 30)',
        '  --temporal dev|cluster   the dev server (default) or the full Temporal server on PostgreSQL',
        `  --sections LIST run only these, comma-separated (default all: ${SECTIONS.join(',')})`,
        '  --out FILE      JSON results (default .data/bench/latest.json)',
        "  --profile DIR   the host's worker and the floor's worker write CPU profiles there (node --cpu-prof; their MCP servers too)",
        '  --quick         a smoke run with small counts',
        '',
      ].join('\n'),
    );
    process.exit(0);
  }
  const quick = values.quick === true;
  const int = (v: string | undefined, fallback: number, name: string): number => {
    if (v === undefined) return fallback;
    const n = Number(v);
    if (!Number.isInteger(n) || n < 0) throw new Error(`--${name}: expected a non-negative integer, got ${v}`);
    return n;
  };
  const levels = (values.levels ?? (quick ? '1,4' : '1,4,16,32')).split(',').map((s) => int(s.trim(), 1, 'levels'));
  if (levels.some((l) => l < 1)) throw new Error('--levels: concurrency levels must be >= 1');
  const sections = (values.sections ?? SECTIONS.join(',')).split(',').map((s) => s.trim()) as Section[];
  const unknown = sections.filter((s) => !SECTIONS.includes(s));
  if (unknown.length > 0) throw new Error(`--sections: unknown ${unknown.join(', ')}; choose from ${SECTIONS.join(', ')}`);
  return {
    turns: Math.max(1, int(values.turns, quick ? 10 : 50, 'turns')),
    warmup: int(values.warmup, quick ? 3 : 8, 'warmup'),
    total: Math.max(1, int(values.total, quick ? 24 : 100, 'total')),
    levels,
    workers: Math.max(1, int(values.workers, 1, 'workers')),
    pooled: Math.max(1, int(values.pooled, quick ? 30 : 200, 'pooled')),
    perCall: Math.max(1, int(values['per-call'], quick ? 3 : 20, 'per-call')),
    apiTurns: int(values['api-turns'], quick ? 5 : 30, 'api-turns'),
    streamTurns: Math.max(1, int(values['stream-turns'], quick ? 10 : 40, 'stream-turns')),
    streamWarmup: int(values['stream-warmup'], quick ? 2 : 5, 'stream-warmup'),
    streamHistoryTurns: Math.max(1, int(values['stream-history-turns'], quick ? 2 : 3, 'stream-history-turns')),
    chunkDelayMs: int(values['chunk-delay-ms'], 2, 'chunk-delay-ms'),
    budgetS: int(values['budget-s'], 250, 'budget-s'),
    scaleTurns: Math.max(1, int(values['scale-turns'], quick ? 8 : 40, 'scale-turns')),
    scaleConcurrency: Math.max(1, int(values['scale-concurrency'], quick ? 4 : 8, 'scale-concurrency')),
    revisionCalls: Math.max(1, int(values['revision-calls'], quick ? 30 : 200, 'revision-calls')),
    revisionFirst: Math.max(1, int(values['revision-first'], quick ? 5 : 30, 'revision-first')),
    temporal: values.temporal === undefined || values.temporal === 'dev' ? 'dev' : values.temporal === 'cluster' ? 'cluster' : bad('--temporal', values.temporal),
    sections,
    out: path.resolve(ROOT, values.out ?? '.data/bench/latest.json'),
    ...(values.profile ? { profile: path.resolve(values.profile) } : {}),
  };
}

function bad(option: string, value: string): never {
  throw new Error(`${option}: expected dev or cluster, got ${value}`);
}

export const log = (msg: string): void => {
  process.stderr.write(`[bench] ${msg}\n`);
};
