/** The demo model server's HTTP plumbing: JSON answers, bounded bodies, SSE replies paced and cut on demand. */
import type http from 'node:http';
import { HttpError, type SseFrame } from './wire';

const MAX_BODY_BYTES = 10 * 1024 * 1024;

export function writable(res: http.ServerResponse): boolean {
  return !res.destroyed && !res.writableEnded;
}

export function sendJson(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (!writable(res)) return;
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

export function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(new HttpError(413, 'request body too large', 'invalid_request_error', 'body_too_large'));
        req.resume();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

export interface StreamPacing {
  hangupAfter: number | undefined;
  /** Pause after each text delta (0: just yield). */
  chunkDelayMs: number;
  /** The server's tracked sleep, so close() does not wait for a slow stream. */
  sleep: (ms: number) => Promise<void>;
}

export async function streamReply(res: http.ServerResponse, stream: { frames: SseFrame[]; trailer?: string }, pacing: StreamPacing): Promise<void> {
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
  });
  let sent = 0;
  for (const frame of stream.frames) {
    if (pacing.hangupAfter !== undefined && sent >= pacing.hangupAfter) {
      res.socket?.destroy();
      return;
    }
    if (!writable(res)) return;
    res.write(`${frame.event ? `event: ${frame.event}\n` : ''}data: ${JSON.stringify(frame.data)}\n\n`);
    sent++;
    // Yielding between chunks lets them reach the client separately, as from a real model.
    if (pacing.chunkDelayMs > 0 && frame.text) await pacing.sleep(pacing.chunkDelayMs);
    else await tick();
  }
  if (writable(res)) res.end(stream.trailer ?? '');
}
