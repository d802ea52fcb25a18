/**
 * What the HTTP server answers a request it cannot parse into one (Node's `clientError`): headers
 * and request line over the server's limit (431), a request too slow to arrive (408), bytes that are
 * not HTTP (400). Fastify's default answers these in its own JSON shape; here they get the API's
 * `{ error: { code, message } }`, as the document promises for every response. The socket is then
 * closed: after a parse failure nothing more can be read from it.
 */
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';

const ANSWERS: Record<string, { status: number; code: string; message: string }> = {
  HPE_HEADER_OVERFLOW: { status: 431, code: 'header_fields_too_large', message: 'The request line and headers exceed the server limit (16 KiB).' },
  ERR_HTTP_REQUEST_TIMEOUT: { status: 408, code: 'request_timeout', message: 'The request did not arrive in time.' },
};
const MALFORMED = { status: 400, code: 'bad_request', message: 'The request is not valid HTTP.' };

export function answerClientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  // A reset connection has nobody to answer.
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const { status, code, message } = ANSWERS[err.code ?? ''] ?? MALFORMED;
  const body = JSON.stringify({ error: { code, message } });
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nContent-Type: application/json; charset=utf-8\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(err);
}
