import WebSocket from 'ws';
import { sseEvents } from '../src/shared/sse';

/**
 * One turn as a client sees it, over SSE or a WebSocket, with reconnects: the durable event ids it
 * received (a repeat or a gap is a stream fault), the outcome and the final text.
 */
export interface TurnSeen {
  turnId?: string;
  /**
   * `late`: counted lost at the run's drain deadline, then seen ended by its record in the extra window
   * after it (soak/late.ts); `serverStatus` says how it ended and `endedAt` when it was seen so.
   */
  outcome: 'completed' | 'failed' | 'cancelled' | 'refused' | 'lost' | 'late';
  reason?: string;
  text?: string;
  ids: number[];
  reconnects: number;
  /** The turn as the API reads it once the client is done: its last durable id and status. */
  lastEventId?: number;
  serverStatus?: string;
  /** The stream brought the turn's final event; false when the client stopped following at the run's deadline. */
  streamEnded?: boolean;
  /**
   * Refused at the run's deadline after the message was sent without a definite answer (a 503, a
   * replica gone, a socket closed): its turn may have started, so its effects may be in the store.
   */
  unanswered?: boolean;
  /**
   * WebSocket only: ids the API sent again after the message was resent (which may bring a turn's
   * events once more) whose event differed from the first one with that id: a real repeat.
   */
  replayConflicts?: number[];
}

const lastId = (seen: TurnSeen): number | undefined => (seen.ids.length ? Math.max(...seen.ids) : undefined);
const TERMINAL = new Set(['done', 'error', 'cancelled']);
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** WebSocket error codes that ask for the same message again later (503 and 429 over HTTP). */
const RETRY_CODES = new Set(['unavailable', 'rate_limited']);
const headersOf = (token: string) => ({ authorization: `Bearer ${token}` });

/** What a durable event tells the turn: its id, and the outcome when it ends the turn. */
function record(seen: TurnSeen, id: number | undefined, event: string, data: Record<string, unknown>): boolean {
  if (id !== undefined) seen.ids.push(id);
  if (event === 'text') seen.text = String(data.text ?? '');
  if (!TERMINAL.has(event)) return false;
  seen.streamEnded = true;
  if (event === 'done') seen.outcome = 'completed';
  else {
    seen.outcome = event === 'error' ? 'failed' : 'cancelled';
    seen.reason = String(data.message ?? data.code ?? '').slice(0, 300);
  }
  return true;
}

/** What `GET /v1/turns/:id` says of a turn, as far as the soak reads it. */
export interface TurnRead {
  status?: string;
  lastEventId?: number;
  error?: { message?: string };
}

const ENDED: Record<string, TurnSeen['outcome']> = { completed: 'completed', failed: 'failed', cancelled: 'cancelled' };

/**
 * What the turn's record tells the client: its status and last id, and, when the client saw no end
 * (it gave up at its deadline), the outcome the record has once the turn ended. True when it ended.
 */
export function applyRead(seen: TurnSeen, view: TurnRead): boolean {
  seen.serverStatus = view.status;
  seen.lastEventId = view.lastEventId;
  const ended = ENDED[view.status ?? ''];
  if (seen.outcome === 'lost' && ended) {
    seen.outcome = ended;
    if (ended !== 'completed') seen.reason = view.error?.message;
  }
  return ended !== undefined;
}

/** One `GET /v1/turns/:id` (15 s at most); undefined when no replica answered it. */
export async function fetchTurn(base: string, token: string, turnId: string): Promise<TurnRead | undefined> {
  try {
    const res = await fetch(`${base}/v1/turns/${turnId}`, { headers: headersOf(token), signal: AbortSignal.timeout(15_000) });
    return res.ok ? ((await res.json()) as TurnRead) : undefined;
  } catch {
    return undefined;
  }
}

/** GET /v1/turns/:id until an answer (replicas come and go), at least once even past the deadline. */
export async function readTurn(base: string, token: string, seen: TurnSeen, deadline: number): Promise<void> {
  for (;;) {
    const view = await fetchTurn(base, token, seen.turnId ?? '');
    if (view) {
      applyRead(seen, view);
      return;
    }
    if (Date.now() > deadline) return;
    await pause(500);
  }
}

/** POST with an Idempotency-Key, again after a network error, a 5xx or a 429 (the same turn comes back). */
export async function submit(base: string, token: string, sessionId: string, text: string, key: string, deadline: number): Promise<{ turnId?: string; refused?: string; unanswered?: boolean }> {
  // A 503 or a connection cut under the request leaves it open whether the turn was started.
  let unanswered = false;
  for (;;) {
    try {
      const res = await fetch(`${base}/v1/sessions/${sessionId}/messages`, {
        method: 'POST',
        headers: { ...headersOf(token), 'content-type': 'application/json', 'idempotency-key': key },
        body: JSON.stringify({ text }),
        signal: AbortSignal.timeout(30_000),
      });
      const body = (await res.json().catch(() => ({}))) as { turnId?: string; error?: { code?: string; message?: string } };
      if (res.status === 200 || res.status === 202) return { turnId: String(body.turnId) };
      if (res.status < 500 && res.status !== 429) return { refused: `${res.status} ${body.error?.code ?? ''} ${body.error?.message ?? ''}`.trim() };
      if (res.status >= 500) unanswered = true;
    } catch {
      // The replica died under the request, or the proxy found none up: again.
      unanswered = true;
    }
    if (Date.now() > deadline) return { refused: 'no API accepted the message before the deadline', unanswered };
    await pause(500);
  }
}

/** Follows a turn's SSE stream to its end, resuming with Last-Event-ID; `dropAfterFirst` forces one reconnect. */
export async function followSse(base: string, token: string, seen: TurnSeen, deadline: number, dropAfterFirst: boolean): Promise<void> {
  let dropped = !dropAfterFirst;
  while (Date.now() < deadline) {
    const last = lastId(seen);
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), Math.max(1, deadline - Date.now()));
    try {
      const res = await fetch(`${base}/v1/turns/${seen.turnId ?? ''}/events`, {
        headers: { ...headersOf(token), accept: 'text/event-stream', ...(last === undefined ? {} : { 'last-event-id': String(last) }) },
        signal: abort.signal,
      });
      if (res.ok && res.body) {
        for await (const e of sseEvents(res.body as unknown as AsyncIterable<Uint8Array>)) {
          const id = e.id === undefined ? undefined : Number(e.id);
          if (record(seen, id, e.event, e.data)) return;
          if (!dropped && id !== undefined) {
            dropped = true;
            abort.abort();
          }
        }
      }
    } catch {
      // Dropped on purpose, or by a replica that died: resume below.
    } finally {
      clearTimeout(timer);
    }
    seen.reconnects++;
    await pause(300);
  }
}

/**
 * A session's WebSocket: messages go as `message` frames (with an idempotency key, so a message sent
 * again after a reconnect is the same turn), turn events come as `event` frames; a socket that closes
 * under a turn is opened again with `?lastEventId=<turnId>:<n>`.
 */
export class WsSession {
  private ws: WebSocket | undefined;
  private listener: ((frame: { type: string; payload: Record<string, unknown> }) => void) | undefined;

  constructor(private readonly base: string, private readonly token: string, private readonly sessionId: string) {}

  private async open(resume?: string): Promise<WebSocket> {
    const url = `${this.base.replace(/^http/, 'ws')}/ws?sessionId=${this.sessionId}${resume ? `&lastEventId=${resume}` : ''}`;
    const ws = new WebSocket(url, { headers: headersOf(this.token) });
    ws.on('message', (data) => this.listener?.(JSON.parse(String(data)) as { type: string; payload: Record<string, unknown> }));
    ws.on('error', () => undefined);
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('close', () => reject(new Error('closed before open')));
      setTimeout(() => reject(new Error('no open within 10 s')), 10_000).unref();
    });
    this.ws = ws;
    return ws;
  }

  /**
   * Sends `text` and follows its turn to the end; `dropAfterFirst` closes the socket once, mid-turn.
   * An `unavailable` or `rate_limited` answer before the turn is known sends the message again with
   * the same key (as the error asks): the first send may have started the turn, the same key names it.
   */
  async turn(text: string, key: string, seen: TurnSeen, deadline: number, dropAfterFirst: boolean): Promise<void> {
    let dropped = !dropAfterFirst;
    let done = false;
    // Sent at least once / more than once: after a resend the API may send a turn's events once more.
    let sent = false;
    let resent = false;
    // Events of a turn not yet acknowledged wait here (the ack and the first events may cross); kept
    // while the socket is, since a resend on it does not bring them again for a running turn.
    let early: Array<Record<string, unknown>> = [];
    // What each id brought first: an event sent again after a resend must be the same event.
    const firstOf = new Map<number, string>();
    while (!done && Date.now() < deadline) {
      const last = lastId(seen);
      let closed: () => void = () => undefined;
      let again = false;
      const ended = new Promise<void>((resolve) => (closed = resolve));
      const onEvent = (p: Record<string, unknown>) => {
        if (done) return;
        const id = Number(p.id);
        const print = JSON.stringify([p.event, p.data]);
        if (resent && firstOf.has(id)) {
          if (firstOf.get(id) !== print) (seen.replayConflicts ??= []).push(id);
          return;
        }
        firstOf.set(id, print);
        if (record(seen, id, String(p.event), (p.data ?? {}) as Record<string, unknown>)) {
          done = true;
          closed();
        } else if (!dropped) {
          dropped = true;
          this.ws?.close();
        }
      };
      this.listener = (f) => {
        if (f.type === 'status' && f.payload.message === 'Working on it' && !seen.turnId) {
          seen.turnId = String(f.payload.turnId);
          for (const p of early.splice(0)) if (p.turnId === seen.turnId) onEvent(p);
        }
        if (f.type === 'error' && !seen.turnId) {
          if (RETRY_CODES.has(String(f.payload.code))) {
            again = true;
          } else {
            seen.outcome = 'refused';
            seen.reason = `${String(f.payload.code)} ${String(f.payload.message ?? '')}`;
            done = true;
          }
          closed();
        }
        if (f.type !== 'event') return;
        if (!seen.turnId) early.push(f.payload);
        else if (f.payload.turnId === seen.turnId) onEvent(f.payload);
      };
      let ws: WebSocket | undefined;
      try {
        // A turn acknowledged but not heard from yet resumes from 0: a socket opened on the session alone
        // follows its turns from their next event only (the soak's own first report: missed 1..5).
        ws = this.ws && this.ws.readyState === WebSocket.OPEN ? this.ws : await this.open(seen.turnId ? `${seen.turnId}:${last ?? 0}` : undefined);
        ws.once('close', closed);
        // Until the turn is known, the message is (re)sent: the same key gives the same turn.
        if (!seen.turnId) {
          resent ||= sent;
          sent = true;
          ws.send(JSON.stringify({ type: 'message', payload: { text, idempotencyKey: key } }));
        }
        const timer = setTimeout(() => closed(), Math.max(1, deadline - Date.now()));
        await ended;
        clearTimeout(timer);
      } catch {
        // No replica took the socket: again.
      } finally {
        ws?.off('close', closed);
      }
      if (done) break;
      if (!again) {
        seen.reconnects++;
        this.ws?.terminate();
        this.ws = undefined;
        early = [];
      }
      await pause(again ? 1000 : 300);
    }
    if (!done && !seen.turnId && sent) {
      seen.outcome = 'refused';
      seen.reason = 'no API accepted the message before the deadline';
      seen.unanswered = true;
    }
    this.listener = undefined;
  }

  close(): void {
    this.ws?.close();
  }
}
