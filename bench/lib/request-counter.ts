/**
 * Counts the HTTP requests a client sends, by what they carry: a fetch that notes each request (its
 * JSON-RPC method, or the HTTP method of a bodiless GET/DELETE) before handing it to the real fetch.
 * Both MCP SDKs send through the platform's fetch (src/mcp/transport-limits.ts calls it at request
 * time), so installing it as `globalThis.fetch` sees every request the pool makes. It keeps the last
 * request of each label too, so the bench can send the very same bytes again without any SDK.
 */

export interface SeenRequest {
  /** `tools/call`, `initialize`, `notifications/initialized`, `GET`, `DELETE`, `a+b` for a batch, `response` for an answer to the server. */
  label: string;
  url: string;
  init: RequestInit;
}

type Fetch = typeof fetch;

/** What a request is, from its HTTP method and body. */
export function labelOf(httpMethod: string | undefined, body: unknown): string {
  const method = (httpMethod ?? 'GET').toUpperCase();
  if (method !== 'POST') return method;
  if (typeof body !== 'string') return 'POST';
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return 'POST';
  }
  const one = (message: unknown): string => {
    if (typeof message !== 'object' || message === null) return 'POST';
    const m = (message as { method?: unknown }).method;
    if (typeof m === 'string') return m;
    return 'result' in message || 'error' in message ? 'response' : 'POST';
  };
  return Array.isArray(parsed) ? parsed.map(one).join('+') : one(parsed);
}

const urlOf = (input: Parameters<Fetch>[0]): string => (typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);

export class RequestCounter {
  private readonly seen: SeenRequest[] = [];
  private readonly last = new Map<string, SeenRequest>();
  /** The fetch that counts; `inner` does the work. */
  readonly fetch: Fetch;

  constructor(readonly inner: Fetch) {
    this.fetch = (input, init) => {
      const request: SeenRequest = { label: labelOf(init?.method ?? (input instanceof Request ? input.method : undefined), init?.body), url: urlOf(input), init: init ?? {} };
      this.seen.push(request);
      this.last.set(`${request.label} ${request.url}`, request);
      return inner(input, init);
    };
  }

  /** A point in the count: `since(mark)` lists the requests sent after it. */
  mark(): number {
    return this.seen.length;
  }

  since(mark: number): string[] {
    return this.seen.slice(mark).map((r) => r.label);
  }

  /**
   * Sends the last request labelled `label` to `url` again, with no SDK (counted like any other): the
   * same URL, headers and body; resolves when its whole answer is read.
   */
  async replay(label: string, url: string): Promise<void> {
    const request = this.last.get(`${label} ${url}`);
    if (!request) throw new Error(`no ${label} request was sent to ${url}`);
    const { method, headers, body } = request.init;
    const response = await this.fetch(request.url, { ...(method ? { method } : {}), ...(headers ? { headers } : {}), ...(body !== undefined ? { body } : {}) });
    await response.text();
    if (!response.ok) throw new Error(`${label} replayed: HTTP ${response.status}`);
  }
}

/** Counts every request of this process until `restore()`. */
export function installCounter(): { counter: RequestCounter; restore(): void } {
  const original = globalThis.fetch;
  const counter = new RequestCounter(original);
  globalThis.fetch = counter.fetch;
  return {
    counter,
    restore: () => {
      globalThis.fetch = original;
    },
  };
}
