import { constants, PerformanceObserver } from 'node:perf_hooks';
import { runInNewContext } from 'node:vm';
import { setFlagsFromString } from 'node:v8';
import { Registry } from 'prom-client';
import { registerHeapLive } from '../../src/metrics/heap-live';

/** The heap's floor (src/metrics/heap-live.ts): the heap in use until a full collection, then what it left in use. */
test('the heap in use after the last full collection is reported once one has run, below the heap before it', async () => {
  const registry = new Registry();
  registerHeapLive(registry, 'test_');
  const read = async () => Number((await registry.getSingleMetricAsString('test_nodejs_heap_live_bytes')).split('\n').find((l) => l.startsWith('test_nodejs_heap_live_bytes '))?.split(' ')[1]);
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  // Garbage first, so the floor is visibly below the heap in use before the collection.
  let junk: unknown[] | undefined = Array.from({ length: 200_000 }, (_, i) => ({ i, s: `x${i}` }));
  const before = process.memoryUsage().heapUsed;
  // No full collection seen yet: the heap in use, garbage and all.
  expect(await read()).toBeGreaterThan(before - 8_000_000);
  junk = undefined;
  void junk;
  // The collection is reported a moment after it ends, to every observer in turn (the gauge's first).
  const reported = new Promise<void>((resolve) => {
    const seen = new PerformanceObserver((list) => {
      if (list.getEntries().some((e) => (e as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR)) {
        seen.disconnect();
        resolve();
      }
    });
    seen.observe({ entryTypes: ['gc'] });
  });
  gc();
  await reported;
  // Then the floor, without the garbage.
  const live = await read();
  expect(live).toBeLessThan(before - 8_000_000);
  expect(live).toBeGreaterThan(1_000_000);
  // A floor, not the heap now: more in use since then does not move it until the next full collection.
  // (A few MB, well under what starts the next full collection.)
  const kept = Array.from({ length: 40_000 }, (_, i) => ({ i, s: `y${i}` }));
  expect(process.memoryUsage().heapUsed).toBeGreaterThan(live + 1_000_000);
  expect(await read()).toBe(live);
  expect(kept).toHaveLength(40_000);
});
