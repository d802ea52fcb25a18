import { sseEvents, type SseEvent } from '../../src/shared/sse';

export type { SseEvent };

let defaultHeaders: Record<string, string> = {};

/** The bearer token every helper call sends unless a call passes its own `authorization`. */
export function setDefaultToken(token: string | undefined): void {
  defaultHeaders = token ? { authorization: `Bearer ${token}` } : {};
}

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

export async function postMessage(apiUrl: string, sessionId: string, text: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${apiUrl}/v1/sessions/${sessionId}/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...defaultHeaders, ...headers },
    body: JSON.stringify({ text }),
  });
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, any> & { turnId: string } };
}

// Tests read loosely shaped JSON and assert on it; a precise type per route would only restate the assertions.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function getJson(url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
  const res = await fetch(url, { headers: { ...defaultHeaders, ...headers } });
  return { status: res.status, body: await res.json() };
}

/**
 * Reads an SSE stream until it ends, `stopAfter` returns true, or the timeout passes.
 * A real HTTP client over the network, not an inject shortcut.
 */
export async function readSse(
  url: string,
  opts: { lastEventId?: string; stopAfter?: (e: SseEvent) => boolean; timeoutMs?: number; headers?: Record<string, string> } = {},
): Promise<SseEvent[]> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), opts.timeoutMs ?? 30_000);
  const events: SseEvent[] = [];
  try {
    const res = await fetch(url, {
      headers: {
        accept: 'text/event-stream',
        ...defaultHeaders,
        ...opts.headers,
        ...(opts.lastEventId ? { 'last-event-id': opts.lastEventId } : {}),
      },
      signal: controller.signal,
    });
    if (res.status !== 200 || !res.body) throw new Error(`SSE ${url}: HTTP ${res.status}: ${await res.text()}`);
    for await (const e of sseEvents(res.body as unknown as AsyncIterable<Uint8Array>)) {
      events.push(e);
      if (opts.stopAfter?.(e)) {
        controller.abort();
        return events;
      }
    }
    return events;
  } catch (err) {
    if ((err as Error).name === 'AbortError') return events;
    throw err;
  } finally {
    clearTimeout(timer);
  }
}

export async function waitFor<T>(fn: () => Promise<T | undefined>, timeoutMs = 30_000, everyMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** Waits on a turn's live stream until `predicate` sees an event; fails if the turn ends without one. */
export async function waitForTurnEvent(apiUrl: string, turnId: string, predicate: (e: SseEvent) => boolean, headers?: Record<string, string>): Promise<void> {
  const events = await readSse(`${apiUrl}/v1/turns/${turnId}/events`, { stopAfter: predicate, timeoutMs: 60_000, ...(headers ? { headers } : {}) });
  if (!events.some(predicate)) throw new Error(`turn ${turnId} ended without the awaited event: ${events.map((e) => e.event).join(',')}`);
}

/**
 * Waits until the server running the turn's call of `name` reports progress on it (the school
 * servers' delayed tools do, every 200 ms): the request is at the server and its answer not back yet.
 */
export async function waitForToolProgress(apiUrl: string, turnId: string, name: string, headers?: Record<string, string>): Promise<void> {
  const calls = new Set<unknown>();
  await waitForTurnEvent(
    apiUrl,
    turnId,
    (e) => {
      if (e.event === 'tool_call_started' && e.data.name === name) calls.add(e.data.toolCallId);
      return e.event === 'tool_progress' && calls.has(e.data.toolCallId);
    },
    headers,
  );
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function postJson(url: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: any; headers: Headers }> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...defaultHeaders, ...headers }, body: JSON.stringify(body) });
  return { status: res.status, body: await res.json(), headers: res.headers };
}
