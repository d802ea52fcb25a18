/** Imported first by src/api/main.ts: tracing starts before the modules it instruments load. */
import { startTracing } from './tracing';

export const tracing = startTracing('api');
