import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';

/**
 * The memory allocator the soak's API replicas and workers run with. The image preloads jemalloc
 * (Dockerfile, decision 0046), so the soak does too: under glibc's malloc a replica kept the memory a
 * load peak took (182 → 252 MB in steps at each kill of the other replica, its V8 heap flat), and
 * with jemalloc it gave it back (219 → 212 MB), 2026-11-26. `SOAK_ALLOCATOR=glibc` runs without it;
 * `SOAK_JEMALLOC` names the library (scripts/soak.sh sets it from scripts/ensure-jemalloc.sh);
 * otherwise the usual places are looked in.
 */
export interface Allocator {
  name: 'jemalloc' | 'glibc malloc';
  /** Added to the processes' environment. */
  env: Record<string, string>;
  /** Why this one, for the log and the report. */
  why: string;
}

const PLACES = ['/usr/lib64', '/usr/lib', '/usr/local/lib'];

function findJemalloc(): string | undefined {
  const dirs = [...PLACES];
  try {
    for (const d of readdirSync('/usr/lib')) if (d.endsWith('-linux-gnu')) dirs.unshift(path.join('/usr/lib', d));
  } catch {
    // No /usr/lib: the fixed places only.
  }
  return dirs.map((d) => path.join(d, 'libjemalloc.so.2')).find((p) => existsSync(p));
}

export function soakAllocator(env: NodeJS.ProcessEnv = process.env, find: () => string | undefined = findJemalloc): Allocator {
  if (env.SOAK_ALLOCATOR === 'glibc') return { name: 'glibc malloc', env: {}, why: 'SOAK_ALLOCATOR=glibc' };
  if (env.SOAK_ALLOCATOR !== undefined && env.SOAK_ALLOCATOR !== '' && env.SOAK_ALLOCATOR !== 'jemalloc') {
    throw new Error(`SOAK_ALLOCATOR must be jemalloc or glibc, not ${JSON.stringify(env.SOAK_ALLOCATOR)}`);
  }
  const named = env.SOAK_JEMALLOC;
  if (named && !existsSync(named)) throw new Error(`SOAK_JEMALLOC names ${named}, which does not exist`);
  const lib = named || find();
  if (lib) return { name: 'jemalloc', env: { LD_PRELOAD: lib }, why: `LD_PRELOAD=${lib}, as the image` };
  if (env.SOAK_ALLOCATOR === 'jemalloc') throw new Error('SOAK_ALLOCATOR=jemalloc, but no libjemalloc.so.2 was found (scripts/ensure-jemalloc.sh installs it)');
  return { name: 'glibc malloc', env: {}, why: 'no libjemalloc.so.2 found (scripts/ensure-jemalloc.sh installs it): unlike the image' };
}
