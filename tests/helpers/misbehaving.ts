/**
 * The misbehaving MCP server (tests/fixtures/misbehaving-server.ts, run from dist/) as the tests
 * use it: over stdio as a config entry, over HTTP as a process of its own with its counters.
 */
import path from 'node:path';
import { spawnManaged, type ManagedProcess } from '../../src/cli/processes';
import { DIST } from './system';

export const MISBEHAVING_SERVER = path.join(DIST, 'tests/fixtures/misbehaving-server.js');

/** What the HTTP server saw (GET /stats). */
export interface MisbehavingStats {
  calls: number;
  hugeBytesWritten: number;
  trickling: number;
  cancelled: number;
  openResponses: number;
}

export interface MisbehavingHttp {
  url: string;
  proc: ManagedProcess;
  stats(): Promise<MisbehavingStats>;
}

export async function startMisbehavingHttp(): Promise<MisbehavingHttp> {
  const { proc, match } = await spawnManaged('misbehaving-http', process.execPath, [MISBEHAVING_SERVER, '--http'], { readyLine: /^listening (\S+)/ });
  const url = match?.[1];
  if (!url) throw new Error(`the misbehaving server did not say where it listens: ${proc.output()}`);
  return {
    url,
    proc,
    stats: async () => (await (await fetch(new URL('/stats', url))).json()) as MisbehavingStats,
  };
}

/** The largest resident set size seen while `run` runs, above the one before it, in MB. */
export async function peakRssGrowthMb<T>(run: () => Promise<T>): Promise<{ value: T; growthMb: number }> {
  const before = process.memoryUsage().rss;
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 5);
  try {
    const value = await run();
    peak = Math.max(peak, process.memoryUsage().rss);
    return { value, growthMb: (peak - before) / (1024 * 1024) };
  } finally {
    clearInterval(sampler);
  }
}
