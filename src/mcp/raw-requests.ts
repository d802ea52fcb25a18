/**
 * Requests sent past the v2 client's own request funnel, on its transport: the v2 client decodes every
 * result by its `resultType` and refuses the kinds it does not know, so a `tools/call` a server answers
 * with a task (`resultType: "task"`, the MCP tasks extension) and the extension's `tasks/*` methods go
 * through here. This is the "host-owned request coordinator" the `ext-tasks` package asks for
 * (`rawDispatch`, decision 0038).
 *
 * Installed on a connected transport, in front of the client's own handlers: the answers to our
 * requests (ids of our own, which the client never uses) and the progress of our calls are taken here;
 * everything else goes on to the client as before. Errors are the pool's (failures.ts): a timeout or a
 * closed connection as the v1 SDK says them, an abort as the signal's reason.
 */
import type { JSONRPCMessage, Transport } from '@modelcontextprotocol/client';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';

/** A JSON-RPC answer as the `ext-tasks` port takes it. */
export type RawResponse = { kind: 'result'; result: Record<string, unknown> } | { kind: 'error'; error: { code: number; message: string; data?: unknown } };

export interface RawRequestOptions {
  signal?: AbortSignal;
  /** Milliseconds without an answer (or, with `resetTimeoutOnProgress`, without progress). */
  timeoutMs: number;
  onprogress?: (progress: { progress: number; total?: number; message?: string }) => void;
  resetTimeoutOnProgress?: boolean;
  /** Milliseconds the request may last in all, progress or not. */
  maxTotalTimeout?: number;
}

interface Pending {
  settle(response: RawResponse): void;
  fail(error: unknown): void;
  progress(params: Record<string, unknown>): void;
}

const noop = (): void => undefined;
const plainJson = (value: Record<string, unknown>): Record<string, unknown> => JSON.parse(JSON.stringify(value)) as Record<string, unknown>;
const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

export interface RawRequests {
  /** Sends `request` (a method and params; the id is ours) and waits for its answer. */
  send(request: { method: string; params?: Record<string, unknown> }, options: RawRequestOptions): Promise<RawResponse>;
}

/** Puts the coordinator in front of a connected transport's handlers (call once, after `connect`). */
export function installRawRequests(transport: Transport, prefix: string): RawRequests {
  const pending = new Map<string, Pending>();
  let seq = 0;
  let closed = false;

  const onmessage = transport.onmessage;
  transport.onmessage = (message, extra) => {
    if (!take(message)) onmessage?.call(transport, message, extra);
  };
  const onclose = transport.onclose;
  transport.onclose = () => {
    closed = true;
    for (const p of [...pending.values()]) p.fail(new McpError(ErrorCode.ConnectionClosed, 'Connection closed'));
    onclose?.call(transport);
  };

  /** Whether the message was ours: an answer to one of our requests, or progress of one. */
  function take(message: JSONRPCMessage): boolean {
    const m = message as Record<string, unknown>;
    if (typeof m['id'] === 'string' && ('result' in m || 'error' in m)) {
      const p = pending.get(m['id']);
      if (!p) return false;
      // Copied as plain JSON: the package takes only plain objects (it checks their prototype), and a
      // transport's parser may have made them elsewhere (another realm, as under jest).
      if (isRecord(m['error'])) p.settle({ kind: 'error', error: plainJson(m['error']) as { code: number; message: string; data?: unknown } });
      else p.settle({ kind: 'result', result: isRecord(m['result']) ? plainJson(m['result']) : {} });
      return true;
    }
    if (m['method'] === 'notifications/progress' && isRecord(m['params'])) {
      const token = m['params']['progressToken'];
      const p = typeof token === 'string' ? pending.get(token) : undefined;
      if (!p) return false;
      p.progress(m['params']);
      return true;
    }
    return false;
  }

  return {
    send(request, options) {
      if (closed) return Promise.reject(new McpError(ErrorCode.ConnectionClosed, 'Connection closed'));
      const id = `${prefix}-${++seq}`;
      const started = Date.now();
      const { signal } = options;
      return new Promise<RawResponse>((resolve, reject) => {
        let timer: NodeJS.Timeout | undefined;
        const cleanup = (): void => {
          clearTimeout(timer);
          pending.delete(id);
          signal?.removeEventListener('abort', onAbort);
        };
        // Given up on our side: the server is told, as the SDK tells it.
        const giveUp = (error: unknown): void => {
          cleanup();
          const reason = error instanceof Error ? error.message : 'aborted';
          transport.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason } } as JSONRPCMessage).catch(noop);
          reject(error);
        };
        const arm = (): void => {
          clearTimeout(timer);
          timer = setTimeout(() => giveUp(new McpError(ErrorCode.RequestTimeout, 'Request timed out', { timeout: options.timeoutMs })), options.timeoutMs);
        };
        const onAbort = (): void => giveUp(signal?.reason ?? new Error('aborted'));
        if (signal?.aborted) {
          reject(signal.reason ?? new Error('aborted'));
          return;
        }
        signal?.addEventListener('abort', onAbort, { once: true });
        pending.set(id, {
          settle: (response) => {
            cleanup();
            resolve(response);
          },
          fail: (error) => {
            cleanup();
            reject(error);
          },
          progress: (params) => {
            const { progress, total, message } = params as { progress?: unknown; total?: unknown; message?: unknown };
            if (typeof progress !== 'number') return;
            options.onprogress?.({ progress, ...(typeof total === 'number' ? { total } : {}), ...(typeof message === 'string' ? { message } : {}) });
            if (!options.resetTimeoutOnProgress) return;
            const total_ = options.maxTotalTimeout;
            if (total_ !== undefined && Date.now() - started >= total_) {
              giveUp(new McpError(ErrorCode.RequestTimeout, 'Maximum total timeout exceeded', { maxTotalTimeout: total_, totalElapsed: Date.now() - started }));
            } else arm();
          },
        });
        arm();
        // Our id is the progress token, when there is progress to hear (the client must not hear it).
        const { progressToken: _ignored, ...meta } = isRecord(request.params?.['_meta']) ? request.params['_meta'] : {};
        const params = { ...request.params, _meta: { ...meta, ...(options.onprogress ? { progressToken: id } : {}) } };
        transport.send({ jsonrpc: '2.0', id, method: request.method, params } as JSONRPCMessage).catch((error: unknown) => {
          cleanup();
          reject(error);
        });
      });
    },
  };
}
