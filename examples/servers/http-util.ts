/** Small HTTP helpers shared by the example MCP servers' Streamable HTTP and SSE modes. */
import type * as http from 'node:http';

const MAX_BODY_BYTES = 4 * 1024 * 1024;

export function readJsonBody(req: http.IncomingMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(new Error('request body too large'));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      } catch {
        reject(new Error('request body is not valid JSON'));
      }
    });
    req.on('error', reject);
  });
}

export function sendJsonRpcError(res: http.ServerResponse, status: number, code: number, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}

/**
 * A browser page must not reach the server through DNS rebinding: the Host header must name the
 * server as its clients know it, local names by default plus `extra` (e.g. `payments:4020`, the
 * name other containers use in the compose stack).
 */
export function hostAllowed(req: http.IncomingMessage, port: number, extra: readonly string[] = []): boolean {
  const host = req.headers.host ?? '';
  return [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`, ...extra].includes(host);
}
