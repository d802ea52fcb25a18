import WebSocket from 'ws';

/** A frame of GET /ws: loosely shaped JSON; a type per message would only restate the assertions. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type WsFrame = { type: string; payload: any };

export interface WsClient {
  ws: WebSocket;
  /** Every frame received, in order. */
  frames: WsFrame[];
  /** The first frame (at index `from` or later) matching `pred`; rejects after `timeoutMs`. */
  next(pred: (f: WsFrame) => boolean, timeoutMs?: number, from?: number): Promise<WsFrame>;
  send(frame: unknown): void;
  /** Resolves with the close code. */
  closed: Promise<number>;
}

/** Opens a WebSocket (a real client over the network) and records its frames; `track` collects it for cleanup. */
export async function connectWs(
  url: string,
  headers: Record<string, string>,
  options: WebSocket.ClientOptions = {},
  track?: WebSocket[],
): Promise<WsClient> {
  const ws = new WebSocket(url, { headers, ...options });
  track?.push(ws);
  const frames: WsFrame[] = [];
  const waiters = new Set<() => void>();
  ws.on('message', (data) => {
    frames.push(JSON.parse(String(data)) as WsFrame);
    for (const w of [...waiters]) w();
  });
  const closed = new Promise<number>((resolve) => ws.on('close', (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  return {
    ws,
    frames,
    closed,
    send: (frame) => ws.send(typeof frame === 'string' ? frame : JSON.stringify(frame)),
    next(pred, timeoutMs = 3_000, from = 0) {
      return new Promise<WsFrame>((resolve, reject) => {
        const check = (): boolean => {
          const hit = frames.slice(from).find(pred);
          if (!hit) return false;
          clearTimeout(timer);
          waiters.delete(onFrame);
          resolve(hit);
          return true;
        };
        const onFrame = () => void check();
        const timer = setTimeout(() => {
          waiters.delete(onFrame);
          reject(new Error(`no matching frame within ${timeoutMs} ms; got ${JSON.stringify(frames).slice(0, 4_000)}`));
        }, timeoutMs);
        if (!check()) waiters.add(onFrame);
      });
    },
  };
}

/** The frame that ends a turn: `status` complete with the turn's final status. */
export const turnEnded = (turnId: string) => (f: WsFrame) =>
  f.type === 'status' && f.payload.state === 'complete' && f.payload.turnId === turnId && f.payload.status !== undefined;

/** The acknowledgement of a `message` frame. */
export const accepted = (f: WsFrame) => f.type === 'status' && f.payload.state === 'processing' && f.payload.message === 'Working on it';
