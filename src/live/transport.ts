/**
 * How a worker's batches leave it (docs/decisions/0020-live-text-without-a-single-target.md): the
 * publisher (./publisher.ts) owns the queue, batching and drop accounting; a transport only delivers
 * one batch, or says why it could not.
 *
 * - Over HTTP to the API's ingest route, with failover between several addresses (LIVE_PUSH_URL may
 *   list every replica): the address that answered last is tried first; one that fails to connect,
 *   times out or answers 5xx hands the same batch to the next, so a dead replica costs one failed
 *   connect, not the live text. A 4xx (wrong secret, invalid batch) is not the address's fault and
 *   goes to no other. Each request resolves its host anew, so a name whose address moved follows it.
 * - On the PostgreSQL bus itself (./pg-bus.ts `notifyChunks`), when the worker shares the replicas'
 *   database: no replica stands between the worker and every replica's hub.
 */
import type { LiveChunk } from './chunk';

export interface LiveTransport {
  /** Where batches go now, for log lines: never credentials or a query. */
  target(): string;
  /** Delivers one batch in order; rejects (with a reason fit for a log line) when it could not. */
  send(chunks: readonly LiveChunk[]): Promise<void>;
}

export interface FailoverPostOptions {
  /** One or more addresses of the same route on different replicas, in order of preference. */
  urls: readonly string[];
  /** Sent as `authorization: Bearer <secret>`, never logged. */
  secret: string;
  requestTimeoutMs: number;
}

/** A failure the next address may not share: no connection, no answer in time, or a 5xx. */
class AddressFailure extends Error {}

/** POSTs JSON bodies to the first address that takes them, starting from the one that took the last. */
export function createFailoverPost(opts: FailoverPostOptions): { post(body: unknown): Promise<void>; target(): string } {
  if (opts.urls.length === 0) throw new Error('live transport: at least one URL is needed');
  if (opts.secret === '') throw new Error('live transport: secret must not be empty');
  const urls = opts.urls.map((u) => new URL(u));
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${opts.secret}` };
  let current = 0;
  const describe = (u: URL): string => `${u.origin}${u.pathname}`;

  const once = async (url: URL, body: string): Promise<void> => {
    let res: Response;
    try {
      res = await fetch(url, { method: 'POST', headers, body, signal: AbortSignal.timeout(opts.requestTimeoutMs) });
    } catch (err) {
      throw new AddressFailure(describeError(err));
    }
    // Reading the (small) body lets the keep-alive connection be reused.
    await res.arrayBuffer().catch(() => undefined);
    if (res.status >= 500) throw new AddressFailure(`HTTP ${res.status}`);
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
  };

  return {
    target: () => describe(urls[current] as URL),
    async post(value) {
      const body = JSON.stringify(value);
      const failures: string[] = [];
      for (let i = 0; i < urls.length; i++) {
        const at = (current + i) % urls.length;
        const url = urls[at] as URL;
        try {
          await once(url, body);
          current = at;
          return;
        } catch (err) {
          if (!(err instanceof AddressFailure)) throw err;
          failures.push(urls.length > 1 ? `${describe(url)}: ${err.message}` : err.message);
        }
      }
      throw new Error(failures.join('; '));
    },
  };
}

/** The ingest route (src/api/routes/live-ingest.ts) on any of `urls`. */
export function httpLiveTransport(opts: FailoverPostOptions): LiveTransport {
  const poster = createFailoverPost(opts);
  return { target: poster.target, send: (chunks) => poster.post({ chunks }) };
}

/** Splits LIVE_PUSH_URL's comma-separated list (the config validates each entry). */
export function splitUrls(value: string): string[] {
  return value
    .split(',')
    .map((u) => u.trim())
    .filter((u) => u !== '');
}

export function describeError(err: unknown): string {
  // Duck-typed: fetch's errors may come from another realm (a test runner's), where instanceof fails.
  if (err && typeof err === 'object' && typeof (err as { message?: unknown }).message === 'string') {
    const e = err as { name?: unknown; message: string; cause?: unknown };
    if (e.name === 'TimeoutError' || e.name === 'AbortError') return 'request timed out';
    const code = e.cause && typeof e.cause === 'object' && 'code' in e.cause ? String((e.cause as { code: unknown }).code) : undefined;
    return code ? `${e.message} (${code})` : e.message;
  }
  return String(err);
}
