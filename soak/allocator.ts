import { existsSync } from 'node:fs';

/**
 * The memory allocator the soak's API replicas and workers run with. The image preloads jemalloc
 * (Dockerfile, decision 0046), so the soak does too: under glibc's malloc a replica kept the memory a
 * load peak took (182 → 252 MB in steps at each kill of the other replica, its V8 heap flat), and
 * with jemalloc it gave it back (219 → 212 MB), 2026-11-26. `SOAK_ALLOCATOR=glibc` runs without it.
 * `SOAK_JEMALLOC` names the library: scripts/soak.sh and scripts/test.sh set it from the one finder,
 * scripts/ensure-jemalloc.sh.
 */
export interface Allocator {
  name: 'jemalloc' | 'glibc malloc';
  /** Added to the processes' environment. */
  env: Record<string, string>;
  /** Why this one, for the log and the report. */
  why: string;
}

export function soakAllocator(env: NodeJS.ProcessEnv = process.env): Allocator {
  if (env.SOAK_ALLOCATOR === 'glibc') return { name: 'glibc malloc', env: {}, why: 'SOAK_ALLOCATOR=glibc' };
  if (env.SOAK_ALLOCATOR !== undefined && env.SOAK_ALLOCATOR !== '' && env.SOAK_ALLOCATOR !== 'jemalloc') {
    throw new Error(`SOAK_ALLOCATOR must be jemalloc or glibc, not ${JSON.stringify(env.SOAK_ALLOCATOR)}`);
  }
  const lib = env.SOAK_JEMALLOC;
  if (lib && !existsSync(lib)) throw new Error(`SOAK_JEMALLOC names ${lib}, which does not exist`);
  if (lib) return { name: 'jemalloc', env: { LD_PRELOAD: lib }, why: `LD_PRELOAD=${lib}, as the image` };
  if (env.SOAK_ALLOCATOR === 'jemalloc') throw new Error('SOAK_ALLOCATOR=jemalloc, but SOAK_JEMALLOC names no library (scripts/ensure-jemalloc.sh finds or installs it)');
  return { name: 'glibc malloc', env: {}, why: 'SOAK_JEMALLOC not set (scripts/ensure-jemalloc.sh finds or installs it): unlike the image' };
}
