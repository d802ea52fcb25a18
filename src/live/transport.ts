/**
 * How a worker's batches leave it (docs/decisions/0020-live-text-without-a-single-target.md): the
 * publisher (./publisher.ts) owns the queue, batching and drop accounting; a transport only delivers
 * one batch, or says why it could not.
 *
 * - Over HTTP to the API's ingest route, with failover between several addresses (LIVE_PUSH_URL may
 *   list every replica): the address that answered last is tried first; one that fails to connect,
 *   times out or answers 5xx hands the same batch to the next, so a dead replica costs one failed
 *   connect, not the live text. A 4xx (wrong secret, invalid batch) is not the address's fault and
 *   goes to no other. Requests go through node:http(s) with a keep-alive agent, not fetch: a push is
 *   a small POST, and fetch's streams cost several times the CPU of the request itself (decision
 *   0035). An idle connection is closed after IDLE_SOCKET_MS, and each new one resolves its host
 *   anew, so a name whose address moved is followed.
 * - On the PostgreSQL bus itself (./pg-bus.ts `notifyChunks`), when the worker shares the replicas'
 *   database: no replica stands between the worker and every replica's hub.
 */
import http from 'node:http';
import https from 'node:https';
import type { LiveChunk } from './chunk';

/** How long a connection may wait for the next push before it is closed (the API's keep-alive lasts longer). */
const IDLE_SOCKET_MS = 4_000;

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
  const odd = urls.find((u) => u.protocol !== 'http:' && u.protocol !== 'https:');
  if (odd) throw new Error(`live transport: ${odd.protocol} addresses are not supported (http or https)`);
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${opts.secret}` };
  const agents = {
    'http:': new http.Agent({ keepAlive: true, maxFreeSockets: 2, timeout: IDLE_SOCKET_MS }),
    'https:': new https.Agent({ keepAlive: true, maxFreeSockets: 2, timeout: IDLE_SOCKET_MS }),
  };
  let current = 0;
  const describe = (u: URL): string => `${u.origin}${u.pathname}`;

  const once = (url: URL, body: Buffer): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      const client = url.protocol === 'https:' ? https : http;
      const agent = url.protocol === 'https:' ? agents['https:'] : agents['http:'];
      const req = client.request(
        url,
        { method: 'POST', headers: { ...headers, 'content-length': body.length }, agent, signal: AbortSignal.timeout(opts.requestTimeoutMs) },
        (res) => {
          const status = res.statusCode ?? 0;
          // Reading the (small) body to its end lets the keep-alive connection be reused.
          res.resume();
          res.on('error', (err) => reject(new AddressFailure(describeError(err))));
          res.on('end', () => {
            if (status >= 500) reject(new AddressFailure(`HTTP ${status}`));
            else if (status < 200 || status >= 300) reject(new Error(`HTTP ${status}`));
            else resolve();
          });
        },
      );
      req.on('error', (err) => reject(new AddressFailure(describeError(err))));
      req.end(body);
    });

  return {
    target: () => describe(urls[current] as URL),
    async post(value) {
      const body = Buffer.from(JSON.stringify(value), 'utf8');
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
