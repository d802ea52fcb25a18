/**
 * The worker's end of the live-text side channel: the callLlm activity hands every text delta to a
 * publisher, which sends them in batches through a transport (./transport.ts): POSTed to the API's
 * ingest route (src/api/routes/live-ingest.ts), failing over between replicas, or published on the
 * PostgreSQL bus directly (./pg-bus.ts) when the worker shares the replicas' database.
 * The turn workflow's sink hands it copies of durable events the same way, so one queue keeps a step's
 * `calling_llm` event ahead of that step's text.
 *
 * Batches leave through a send queue (./send-queue.ts): one request in flight, the first chunk at
 * once, text alone at most once per `minRequestIntervalMs` while anything else goes at once and takes
 * it along (decision 0035). Consecutive deltas of one step coalesce into one chunk while they wait.
 *
 * Best effort by design: the durable answer is in workflow state, so nothing here may slow down or
 * fail an LLM call. Methods never throw; chunks that do not fit in the buffer or whose request fails
 * are dropped and counted (offsets still advance, so the API sees the gap), and a failed request
 * pauses sending briefly instead of hammering an API that is down.
 */
import { scrubSecrets } from '../security/secrets';
import type { PushedTurn, TurnEvent, TurnMemory } from '../shared/turn';
import { createSendQueue, type Pending } from './send-queue';
import { httpLiveTransport, type LiveTransport } from './transport';
import {
  HandedMemorySchema,
  MAX_EVENT_CHARS,
  MAX_MEMORY_CHARS,
  MAX_CHUNK_TEXT_CHARS,
  MAX_NOTICE_CHARS,
  MAX_TURN_ID_CHARS,
  type LiveLogger,
} from './chunk';

export interface LivePublisherStats {
  /** Chunks waiting to be sent. */
  queued: number;
  /** Chunks the API accepted. */
  sent: number;
  /** Chunks given up on: buffer full, request failed or rejected, invalid arguments. */
  dropped: number;
  requests: number;
  failedRequests: number;
}

export interface LivePublisher {
  /** Appends `text` to the step's live text; the first chunk of an attempt > 1 is preceded by a reset. */
  delta(turnId: string, step: number, attempt: number, text: string): void;
  /** The step's text is complete; later deltas of this attempt are ignored. */
  end(turnId: string, step: number, attempt: number): void;
  /** This attempt failed and another follows: `message` (already free of secrets) tells watching clients why and when. */
  notice(turnId: string, step: number, attempt: number, message: string): void;
  /**
   * A durable event of the turn (from the workflow's sink), a copy for streams; one too large to carry
   * (MAX_EVENT_CHARS of JSON) goes as a `poll` hint, so the API reads it from Temporal instead.
   */
  event(turnId: string, event: TurnEvent, turn: PushedTurn): void;
  /**
   * A turn of a chain ended and handed on `memory` (from the workflow's session sink): the API starts
   * the next turn of the session with it. One too large to carry, or not a plain memory, is not sent.
   */
  memory(turnId: string, memory: TurnMemory): void;
  /** A tool call's attempt `attempt` (> 1) starts after an earlier one was lost or failed: `message` says so. */
  toolNotice(turnId: string, toolCallId: string, attempt: number, message: string): void;
  /** A tool call's server reported progress; only the latest report of a call waits in the queue. */
  progress(turnId: string, toolCallId: string, report: { progress: number; total?: number; message?: string }): void;
  /** Resolves once everything queued before the call has been sent (or dropped). Never rejects. */
  flush(): Promise<void>;
  /** Flushes, then ignores further calls. */
  close(): Promise<void>;
  stats(): LivePublisherStats;
}

export interface LivePublisherOptions {
  /**
   * The API's ingest route, e.g. http://127.0.0.1:3000/internal/live, or the same route on several
   * replicas (tried in turn, see ./transport.ts). Ignored when `transport` is given.
   */
  url?: string | readonly string[];
  /** Where batches go instead of `url` (e.g. the PostgreSQL bus). */
  transport?: LiveTransport;
  /** Shared with the API; sent as `authorization: Bearer <secret>` with `url`, and never logged. */
  secret: string;
  logger?: LiveLogger;
  /** Chunks held while a request is in flight or the API is unreachable; beyond that, deltas are dropped. */
  maxBufferedChunks?: number;
  requestTimeoutMs?: number;
  /** Pause after a failed request before the next one. */
  retryDelayMs?: number;
  /** At most one warning per this interval. */
  warnEveryMs?: number;
  /**
   * Text alone is sent at most once per this interval (default 25 ms: well below what a reader can
   * see, and several tokens of a fast model); other chunks are never held back by it.
   */
  minRequestIntervalMs?: number;
}

/** Attempts whose offsets are remembered; far above the LLM calls one worker runs at once. */
const MAX_TRACKED_ATTEMPTS = 10_000;

interface AttemptState {
  /** Characters handed to delta() so far, sent or not. */
  offset: number;
  ended: boolean;
}

export function createLivePublisher(opts: LivePublisherOptions): LivePublisher {
  if (opts.secret === '' && !opts.transport) throw new Error('live publisher: secret must not be empty');
  const requestTimeoutMs = opts.requestTimeoutMs ?? 5_000;
  const transport =
    opts.transport ??
    httpLiveTransport({ urls: typeof opts.url === 'string' ? [opts.url] : [...(opts.url ?? [])], secret: opts.secret, requestTimeoutMs });
  const maxBuffered = Math.max(1, opts.maxBufferedChunks ?? 1000);
  const retryDelayMs = opts.retryDelayMs ?? 1_000;
  const warnEveryMs = opts.warnEveryMs ?? 30_000;

  const attempts = new Map<string, AttemptState>();
  /** The queued delta of each attempt that later contiguous text may still be appended to. */
  const growing = new Map<string, Pending>();
  let closed = false;
  let dropped = 0;
  let lastWarnAt = -Infinity;
  let droppedSinceWarning = 0;

  const scrub = (text: string) => scrubSecrets(text, [opts.secret]);

  const noteDrop = (n: number, reason: string): void => {
    dropped += n;
    droppedSinceWarning += n;
    const now = Date.now();
    if (!opts.logger || now - lastWarnAt < warnEveryMs) return;
    lastWarnAt = now;
    try {
      opts.logger.warn(
        { target: transport.target(), dropped: droppedSinceWarning, droppedTotal: dropped, reason: scrub(reason) },
        'live text: chunks dropped (best effort; clients get the final text)',
      );
    } catch {
      // A broken logger must not break the LLM call either.
    }
    droppedSinceWarning = 0;
  };

  const queue = createSendQueue({
    transport,
    maxBuffered,
    retryDelayMs,
    minIntervalMs: Math.max(0, opts.minRequestIntervalMs ?? 25),
    dropped: noteDrop,
    // Taken chunks are on their way: nothing may be appended to them any more.
    taken: (batch) => {
      for (const p of batch) if (growing.get(p.key) === p) growing.delete(p.key);
    },
  });
  const enqueue = queue.enqueue;

  /** The attempt's state; its first sighting on attempt > 1 queues the reset that tells clients to discard. */
  const begin = (turnId: string, step: number, attempt: number): { key: string; state: AttemptState } | undefined => {
    if (closed || !validIds(turnId, step, attempt)) return undefined;
    const key = `${step}:${attempt}:${turnId}`;
    let state = attempts.get(key);
    if (!state) {
      state = { offset: 0, ended: false };
      attempts.set(key, state);
      if (attempts.size > MAX_TRACKED_ATTEMPTS) {
        const oldest = attempts.keys().next().value;
        if (oldest !== undefined) attempts.delete(oldest);
      }
      if (attempt > 1) enqueue({ turnId, step, attempt, kind: 'reset', offset: 0, text: '' }, key);
    }
    return { key, state };
  };

  return {
    delta(turnId, step, attempt, text) {
      try {
        if (typeof text !== 'string' || text === '') return;
        const found = begin(turnId, step, attempt);
        if (!found) {
          if (!closed) noteDrop(1, 'invalid turnId, step or attempt');
          return;
        }
        const { key, state } = found;
        if (state.ended) return;
        const start = state.offset;
        state.offset += text.length;
        let pos = 0;
        while (pos < text.length) {
          const open = growing.get(key);
          if (open && open.chunk.offset + open.chunk.text.length === start + pos) {
            const n = pieceLength(text, pos, MAX_CHUNK_TEXT_CHARS - open.chunk.text.length);
            if (n > 0) {
              open.chunk.text += text.slice(pos, pos + n);
              pos += n;
              continue;
            }
          }
          const n = Math.max(1, pieceLength(text, pos, MAX_CHUNK_TEXT_CHARS));
          const pending = enqueue({ turnId, step, attempt, kind: 'delta', offset: start + pos, text: text.slice(pos, pos + n) }, key);
          if (pending) growing.set(key, pending);
          else growing.delete(key);
          pos += n;
        }
      } catch {
        // Never throws: see the module comment.
      }
    },

    end(turnId, step, attempt) {
      try {
        const found = begin(turnId, step, attempt);
        if (!found || found.state.ended) return;
        found.state.ended = true;
        growing.delete(found.key);
        enqueue({ turnId, step, attempt, kind: 'end', offset: found.state.offset, text: '' }, found.key);
      } catch {
        // Never throws: see the module comment.
      }
    },

    notice(turnId, step, attempt, message) {
      try {
        if (closed || !validIds(turnId, step, attempt) || typeof message !== 'string' || message === '') return;
        const text = scrub(message).slice(0, MAX_NOTICE_CHARS);
        enqueue({ turnId, step, attempt, kind: 'notice', offset: 0, text }, `${step}:${attempt}:${turnId}:notice`);
      } catch {
        // Never throws: see the module comment.
      }
    },

    event(turnId, event, turn) {
      try {
        if (closed || !validIds(turnId, 1, 1) || !Number.isInteger(event.id) || event.id < 1) return;
        const chars = JSON.stringify(event).length;
        const key = `${turnId}:event:${event.id}`;
        if (chars > MAX_EVENT_CHARS) enqueue({ turnId, step: 1, attempt: 1, kind: 'poll', offset: event.id, text: '' }, key);
        else enqueue({ turnId, step: 1, attempt: 1, kind: 'event', offset: 0, text: '', event, turn }, key, chars);
      } catch {
        // Never throws: see the module comment.
      }
    },

    memory(turnId, memory) {
      try {
        const parsed = HandedMemorySchema.safeParse(memory);
        if (closed || !validIds(turnId, 1, 1) || !parsed.success) return;
        const chars = JSON.stringify(parsed.data).length;
        if (chars <= MAX_MEMORY_CHARS) enqueue({ turnId, step: 1, attempt: 1, kind: 'memory', offset: 0, text: '', memory: parsed.data }, `${turnId}:memory`, chars);
      } catch {
        // Never throws: see the module comment.
      }
    },

    toolNotice(turnId, toolCallId, attempt, message) {
      try {
        if (closed || !validIds(turnId, 1, attempt) || typeof toolCallId !== 'string' || toolCallId === '' || toolCallId.length > 200) return;
        if (typeof message !== 'string' || message === '') return;
        const text = scrub(message).slice(0, MAX_NOTICE_CHARS);
        enqueue({ turnId, step: 1, attempt, kind: 'notice', offset: 0, text, toolCallId }, `${turnId}:${toolCallId}:${attempt}:notice`);
      } catch {
        // Never throws: see the module comment.
      }
    },

    progress(turnId, toolCallId, report) {
      try {
        if (closed || !validIds(turnId, 1, 1) || typeof toolCallId !== 'string' || toolCallId === '' || toolCallId.length > 200) return;
        if (!Number.isFinite(report.progress) || (report.total !== undefined && !Number.isFinite(report.total))) return;
        const text = scrub(report.message ?? '').slice(0, MAX_NOTICE_CHARS);
        const chunk = { turnId, step: 1, attempt: 1, kind: 'progress' as const, offset: 0, text, toolCallId, progress: report.progress };
        enqueue(report.total !== undefined ? { ...chunk, total: report.total } : chunk, `${turnId}:${toolCallId}:progress`);
      } catch {
        // Never throws: see the module comment.
      }
    },

    flush: () => queue.flush(),

    async close() {
      if (closed) return;
      await queue.flush();
      closed = true;
      queue.stop('publisher closed');
    },

    stats: () => ({ ...queue.stats(), dropped }),
  };
}

/** For workers without an API to talk to (no secret configured, tests): same interface, does nothing. */
export function createNoopPublisher(): LivePublisher {
  return {
    delta() {},
    end() {},
    notice() {},
    toolNotice() {},
    event() {},
    memory() {},
    progress() {},
    async flush() {},
    async close() {},
    stats: () => ({ queued: 0, sent: 0, dropped: 0, requests: 0, failedRequests: 0 }),
  };
}

function validIds(turnId: unknown, step: unknown, attempt: unknown): boolean {
  const count = (n: unknown) => typeof n === 'number' && Number.isInteger(n) && n >= 1 && n <= 1_000_000;
  return typeof turnId === 'string' && turnId.length >= 1 && turnId.length <= MAX_TURN_ID_CHARS && count(step) && count(attempt);
}

/** How much of text from pos fits in room, without splitting a surrogate pair when it can help it. */
function pieceLength(text: string, pos: number, room: number): number {
  let n = Math.min(room, text.length - pos);
  if (n > 0 && pos + n < text.length) {
    const code = text.charCodeAt(pos + n - 1);
    if (code >= 0xd800 && code <= 0xdbff) n--;
  }
  return n;
}
