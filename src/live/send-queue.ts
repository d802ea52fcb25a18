/**
 * The publisher's queue (./publisher.ts): what it has made of its calls waits here, in order, and
 * leaves in batches through a transport (./transport.ts). The publisher keeps what a chunk means
 * (offsets, coalescing, drop accounting); this keeps when and how much is sent:
 *
 * - At most one request in flight. The first chunk leaves at once (on the next turn of the event
 *   loop, so a synchronous burst still shares a request, and a workflow's completion is not held up
 *   by it); whatever arrives meanwhile goes in the next batch.
 * - Text (deltas, progress) and the durable events a turn makes on its way (status, tool calls
 *   started and finished, its final text) also wait until `minIntervalMs` has passed since the
 *   previous request started, so a model streaming steadily costs a request per interval, not one
 *   per token, and a turn's steps share requests. A step's end, a reset, a notice, a memory and the
 *   events that end a turn or wait for the user go at once and take the waiting chunks along
 *   (decisions 0035, 0048).
 * - A failed request pauses sending for `retryDelayMs`; `flush()` skips the pause and the interval.
 */
import { MAX_BATCH_CHUNKS, type LiveChunk } from './chunk';
import { describeError, type LiveTransport } from './transport';

/** Text per request, so a batch stays well inside the ingest route's body limit. */
const MAX_BATCH_TEXT_CHARS = 256 * 1024;

export interface Pending {
  /** The publisher may still append text to a queued delta's chunk, until the batch takes it. */
  chunk: LiveChunk;
  key: string;
  seq: number;
  /** JSON characters of an event chunk's event (counted against MAX_BATCH_TEXT_CHARS like text). */
  eventChars?: number;
}

export interface SendQueueOptions {
  transport: LiveTransport;
  maxBuffered: number;
  retryDelayMs: number;
  minIntervalMs: number;
  /** Chunks given up on (buffer full, request failed): the publisher counts and reports them. */
  dropped(n: number, reason: string): void;
  /** A batch is on its way: nothing may be appended to its chunks any more. */
  taken(batch: readonly Pending[]): void;
}

export interface SendQueue {
  /** Queues a chunk; undefined when the buffer is full (reset, end and events get twice the room of text). */
  enqueue(chunk: LiveChunk, key: string, eventChars?: number): Pending | undefined;
  /** Resolves once everything queued before the call has been sent (or dropped). Never rejects. */
  flush(): Promise<void>;
  /** Stops the timers and drops what is still queued. */
  stop(reason: string): void;
  stats(): { queued: number; sent: number; requests: number; failedRequests: number };
}

/** Durable events that go at once: the turn's end, and what the user must answer. */
const URGENT_EVENTS: ReadonlySet<string> = new Set(['done', 'error', 'cancelled', 'approval_required', 'input_required', 'authorization_required']);
const mayWait = (chunk: LiveChunk): boolean =>
  chunk.kind === 'delta' || chunk.kind === 'progress' || (chunk.kind === 'event' && chunk.event !== undefined && !URGENT_EVENTS.has(chunk.event.type));

export function createSendQueue(opts: SendQueueOptions): SendQueue {
  const queue: Pending[] = [];
  let seq = 0;
  let settledSeq = 0;
  let inFlight: Promise<void> | undefined;
  let scheduled = false;
  let stopped = false;
  let pause: NodeJS.Timeout | undefined;
  /** Queued chunks that may wait, waiting for minIntervalMs since the last request. */
  let linger: NodeJS.Timeout | undefined;
  let lastRequestAt = -Infinity;
  /** Queued chunks that may not wait: they are sent without lingering. */
  let urgent = 0;
  const counts = { sent: 0, requests: 0, failedRequests: 0 };

  const stopTimers = (): void => {
    if (pause) clearTimeout(pause);
    if (linger) clearTimeout(linger);
    pause = undefined;
    linger = undefined;
  };

  const schedule = (): void => {
    if (scheduled || inFlight || pause || queue.length === 0) return;
    const wait = urgent === 0 ? lastRequestAt + opts.minIntervalMs - performance.now() : 0;
    if (wait > 0) {
      if (!linger) {
        linger = setTimeout(() => {
          linger = undefined;
          schedule();
        }, Math.ceil(wait));
        linger.unref();
      }
      return;
    }
    stopTimers();
    scheduled = true;
    // On the next turn of the event loop, not in a microtask: a chunk queued by a workflow's sink or an
    // activity's last words would otherwise build its request before the worker hands the workflow's
    // completion (or the activity's result) to Temporal, and delay it by that much.
    setImmediate(() => {
      scheduled = false;
      if (!inFlight && !pause && queue.length > 0) sendNext();
    });
  };

  const takeBatch = (): Pending[] => {
    let n = 0;
    let chars = 0;
    while (n < queue.length && n < MAX_BATCH_CHUNKS) {
      const size = (queue[n] as Pending).chunk.text.length + ((queue[n] as Pending).eventChars ?? 0);
      if (n > 0 && chars + size > MAX_BATCH_TEXT_CHARS) break;
      chars += size;
      n++;
    }
    const batch = queue.splice(0, n);
    for (const p of batch) if (!mayWait(p.chunk)) urgent--;
    opts.taken(batch);
    return batch;
  };

  const post = async (batch: Pending[]): Promise<void> => {
    counts.requests++;
    lastRequestAt = performance.now();
    let failure: string | undefined;
    try {
      await opts.transport.send(batch.map((p) => p.chunk));
    } catch (err) {
      failure = describeError(err);
    }
    if (failure === undefined) {
      counts.sent += batch.length;
      return;
    }
    counts.failedRequests++;
    opts.dropped(batch.length, failure);
    if (!stopped && opts.retryDelayMs > 0) {
      pause = setTimeout(() => {
        pause = undefined;
        schedule();
      }, opts.retryDelayMs);
      pause.unref();
    }
  };

  const sendNext = (): void => {
    const batch = takeBatch();
    const last = batch.at(-1);
    if (!last) return;
    inFlight = post(batch)
      .catch(() => undefined)
      .finally(() => {
        inFlight = undefined;
        settledSeq = Math.max(settledSeq, last.seq);
        schedule();
      });
  };

  return {
    enqueue(chunk, key, eventChars) {
      const limit = chunk.kind === 'delta' ? opts.maxBuffered : opts.maxBuffered * 2;
      if (queue.length >= limit) {
        opts.dropped(1, 'buffer full');
        return undefined;
      }
      const pending: Pending = { chunk, key, seq: ++seq, ...(eventChars !== undefined ? { eventChars } : {}) };
      queue.push(pending);
      if (!mayWait(chunk)) urgent++;
      schedule();
      return pending;
    },

    async flush() {
      try {
        const wanted = seq;
        while (settledSeq < wanted) {
          if (inFlight) {
            await inFlight;
            continue;
          }
          if (queue.length === 0) break;
          // Whoever flushes wants delivery now, not after the pause or the interval.
          stopTimers();
          sendNext();
        }
      } catch {
        // Never rejects: see SendQueue.flush.
      }
    },

    stop(reason) {
      stopped = true;
      stopTimers();
      if (queue.length > 0) opts.dropped(queue.splice(0).length, reason);
      urgent = 0;
    },

    stats: () => ({ queued: queue.length, ...counts }),
  };
}
