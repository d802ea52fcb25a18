import { constants, PerformanceObserver } from 'node:perf_hooks';
import { getHeapStatistics } from 'node:v8';
import { Gauge, type Registry } from 'prom-client';

/**
 * `<prefix>nodejs_heap_live_bytes`: the V8 heap in use just after the last full (mark-compact)
 * collection, read as the collection is reported (a moment after it ends). The heap in use saws up
 * and down between collections, minutes apart under load; this is the floor of that saw, what the
 * process holds on to. A heap that leaks raises it; garbage not collected yet does not (the soak
 * judges memory with it: soak/figures.ts). Until the first full collection, the heap in use.
 */
export function registerHeapLive(registry: Registry, prefix: string): void {
  let live: number | undefined;
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      if (((entry as { detail?: { kind?: number } }).detail)?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) live = getHeapStatistics().used_heap_size;
    }
  });
  observer.observe({ entryTypes: ['gc'] });
  new Gauge({
    name: `${prefix}nodejs_heap_live_bytes`,
    help: 'V8 heap in use just after the last full collection (the floor of the heap between collections).',
    registers: [registry],
    collect() {
      // Before the first full collection nothing is known of the floor: the heap in use (no garbage assumed).
      this.set(live ?? getHeapStatistics().used_heap_size);
    },
  });
}
