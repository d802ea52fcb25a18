/** Imported first by src/worker.ts: tracing starts before the modules it instruments load. */
import { startTracing } from './tracing';

export const tracing = startTracing('worker');
