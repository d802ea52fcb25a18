/**
 * What a misbehaving server can cost the worker, bounded where bytes arrive (decision 0025):
 *
 * - HTTP: every response body the SDK reads goes through `limitedFetch`, which counts bytes as they
 *   are read (a JSON answer in total, an SSE stream per event) and fails the body past the limit, so
 *   a 50 MB answer is never buffered; the stream of a request we cancelled (our timeout, the user's
 *   cancel) is ended at once instead of being read for as long as the server trickles it.
 * - stdio: the SDK's line buffer is capped at the same limit (`maxBufferSize`), and a run of lines
 *   that are not JSON-RPC (a server logging to stdout) ends the connection instead of being parsed
 *   forever while the call waits.
 *
 * Either way the fault is reported as a `TransportFault`: the connection is dropped with its reason,
 * and the calls on it fail with that reason rather than a bare timeout.
 */
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';

/** 10 MiB: the SDK's own stdio default, ample for text and a few images. */
export const DEFAULT_MAX_MESSAGE_BYTES = 10 * 1024 * 1024;
export const MIN_MAX_MESSAGE_BYTES = 1024;
export const MAX_MAX_MESSAGE_BYTES = 256 * 1024 * 1024;
/** Lines on a stdio server's stdout in a row that are not JSON-RPC before the connection is dropped. */
export const MAX_GARBAGE_LINES = 100;

/** The server broke the transport's limits; the connection it came on is dropped. */
export class TransportFault extends Error {
  override readonly name = 'TransportFault';
}

/**
 * The response of a request this client already gave up on (its timeout, a cancel) was dropped: what
 * the SDK's read of it fails with. Nothing is wrong with the connection.
 */
export class DroppedResponse extends Error {
  override readonly name = 'DroppedResponse';
  constructor() {
    super('the request was cancelled; its response was dropped');
  }
}

export const oversizeFault = (maxBytes: number): TransportFault =>
  new TransportFault(`the server sent a message larger than ${maxBytes} bytes (maxMessageBytes); it was discarded and the connection dropped`);

const NULL_BODY_STATUS = new Set([101, 103, 204, 205, 304]);

/** The JSON-RPC message a POST carries, as far as the limits care. */
function messageOf(body: unknown): { id?: unknown; method?: unknown; params?: { requestId?: unknown } } | undefined {
  if (typeof body !== 'string') return undefined;
  try {
    const parsed: unknown = JSON.parse(body);
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/**
 * `inner` (or the platform's fetch) with response bodies capped at `maxBytes` (per SSE event for
 * `text/event-stream`), and the response of a request ended as soon as the client sends its
 * `notifications/cancelled`. `onFault` hears an oversized body (the read also fails with the fault).
 */
export function limitedFetch(inner: FetchLike | undefined, maxBytes: number, onFault: (fault: TransportFault) => void): FetchLike {
  // Responses still being read, by the JSON-RPC id of the request they answer.
  const open = new Map<string, AbortController>();
  return async (url, init) => {
    const message = messageOf(init?.body);
    if (message?.method === 'notifications/cancelled') {
      const id = message.params?.requestId;
      open.get(JSON.stringify(id))?.abort();
    }
    const key = message && message.id !== undefined && typeof message.method === 'string' ? JSON.stringify(message.id) : undefined;
    const cancel = new AbortController();
    const signal = init?.signal ? AbortSignal.any([init.signal, cancel.signal]) : cancel.signal;
    if (key) open.set(key, cancel);
    const forget = (): void => {
      if (key && open.get(key) === cancel) open.delete(key);
    };
    let response: Response;
    try {
      response = await (inner ?? fetch)(url, { ...init, signal });
    } catch (error) {
      forget();
      throw cancel.signal.aborted && !init?.signal?.aborted ? new DroppedResponse() : error;
    }
    if (!response.body || NULL_BODY_STATUS.has(response.status)) {
      forget();
      return response;
    }
    const perEvent = (response.headers.get('content-type') ?? '').toLowerCase().includes('text/event-stream');
    const body = cappedBody(response.body, { maxBytes, perEvent, cancel: cancel.signal, onFault, onEnd: forget });
    const capped = new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
    // What the SDK reads of a redirect (fetchWithinOrigin) stays as the platform said.
    for (const prop of ['url', 'redirected', 'type'] as const) Object.defineProperty(capped, prop, { value: response[prop] });
    return capped;
  };
}

interface CapOptions {
  maxBytes: number;
  /** Count the bytes of each SSE event (ended by a blank line) rather than of the whole body. */
  perEvent: boolean;
  /** Fired when the request was cancelled: the body ends there. */
  cancel: AbortSignal;
  onFault(fault: TransportFault): void;
  onEnd(): void;
}

function cappedBody(source: ReadableStream<Uint8Array>, opts: CapOptions): ReadableStream<Uint8Array> {
  const reader = source.getReader();
  let count = 0;
  let afterNewline = false;
  let ended = false;
  const end = (): void => {
    if (ended) return;
    ended = true;
    opts.onEnd();
    opts.cancel.removeEventListener('abort', onCancel);
  };
  let controllerRef: ReadableStreamDefaultController<Uint8Array> | undefined;
  function onCancel(): void {
    // The request is over on our side: whatever else the server sends is not wanted. An SSE stream
    // just ends (the SDK reads that as the stream being done); a JSON body could not be parsed, so it
    // fails as dropped.
    end();
    void reader.cancel().catch(() => undefined);
    try {
      if (opts.perEvent) controllerRef?.close();
      else controllerRef?.error(new DroppedResponse());
    } catch {
      // Already closed or errored.
    }
  }
  opts.cancel.addEventListener('abort', onCancel, { once: true });
  /** Counts `chunk`; true once the body (or the current event) is over the limit. */
  const over = (chunk: Uint8Array): boolean => {
    if (!opts.perEvent) {
      count += chunk.length;
      return count > opts.maxBytes;
    }
    for (const byte of chunk) {
      if (byte === 0x0a) {
        // A blank line ends an event: its size starts over.
        if (afterNewline) count = 0;
        afterNewline = true;
      } else if (byte !== 0x0d) {
        afterNewline = false;
        if (++count > opts.maxBytes) return true;
      }
    }
    return false;
  };
  return new ReadableStream<Uint8Array>({
    start(controller) {
      controllerRef = controller;
    },
    async pull(controller) {
      let next: Awaited<ReturnType<typeof reader.read>>;
      try {
        next = await reader.read();
      } catch (error) {
        end();
        if (opts.cancel.aborted) return;
        controller.error(error);
        return;
      }
      if (ended) return;
      if (next.done) {
        end();
        controller.close();
        return;
      }
      if (over(next.value)) {
        const fault = oversizeFault(opts.maxBytes);
        end();
        controller.error(fault);
        void reader.cancel(fault).catch(() => undefined);
        opts.onFault(fault);
        return;
      }
      controller.enqueue(next.value);
    },
    cancel(reason) {
      end();
      return reader.cancel(reason);
    },
  });
}

/** The SDK's stdio line buffer reports going over `maxBufferSize` with this message (pinned by tests). */
export const isStdioOverflow = (error: Error): boolean => /^ReadBuffer exceeded maximum size/.test(error.message);

/** A line on stdout that is not JSON-RPC: the SDK's parse (JSON.parse, then the message schema) failed. */
export const isUnparsableLine = (error: Error): boolean => error instanceof SyntaxError || /^\$?ZodError$/.test(error.name);

/**
 * Counts lines on a stdio server's stdout that are not JSON-RPC since its last real message: past
 * MAX_GARBAGE_LINES in a row the server is not speaking the protocol on stdout, and the caller
 * drops the connection.
 */
export class GarbageCounter {
  private run = 0;

  /** A JSON-RPC message arrived. */
  message(): void {
    this.run = 0;
  }

  /** A line failed to parse; a fault once too many came in a row. */
  garbage(): TransportFault | undefined {
    this.run += 1;
    if (this.run !== MAX_GARBAGE_LINES) return undefined;
    return new TransportFault(
      `the server wrote ${MAX_GARBAGE_LINES} lines in a row to stdout that are not JSON-RPC (stdout is the protocol channel; logs belong on stderr); the connection was dropped`,
    );
  }
}
