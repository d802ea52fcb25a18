/** 1b. Turns through the HTTP API: POST → SSE `done`. */
import { postMessage, readSse } from '../../tests/helpers/http';
import type { TestSystem } from '../../tests/helpers/system';
import { summarize, type Summary } from '../lib/stats';
import { log, SESSION, type Options } from '../options';
import { nextTurn } from '../paths';

export async function apiSection(sys: TestSystem, opts: Options, resetNotes: () => void): Promise<Summary | undefined> {
  if (opts.apiTurns === 0) return undefined;
  resetNotes();
  log(`HTTP API: ${opts.apiTurns} sequential 1-step turns, POST → SSE 'done' (SSE poll 25 ms as set by startSystem)`);
  const latencies: number[] = [];
  for (let i = 0; i < opts.apiTurns + 3; i++) {
    const { text } = nextTurn(1);
    const t0 = performance.now();
    const post = await postMessage(sys.apiUrl, SESSION, text);
    if (post.status !== 202) throw new Error(`POST answered ${post.status}: ${JSON.stringify(post.body)}`);
    const events = await readSse(`${sys.apiUrl}${post.body['eventsUrl'] as string}`, {
      stopAfter: (e) => e.event === 'done' || e.event === 'error',
      timeoutMs: 60_000,
    });
    const last = events[events.length - 1];
    if (last?.event !== 'done') throw new Error(`API turn ended with ${last?.event ?? 'no events'}`);
    if (i >= 3) latencies.push(performance.now() - t0); // the first three are warm-up
  }
  return summarize(latencies);
}

