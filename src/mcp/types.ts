import type { Catalog, ServerStatus, ToolOutcome } from '../shared/tool-types';

export interface CallToolRequest {
  server: string;
  tool: string;
  arguments: Record<string, unknown>;
  /** Sent as the request's `_meta` (idempotency key, user context, trace id). */
  meta?: Record<string, unknown>;
  /** Aborting it cancels the request; the SDK sends `notifications/cancelled` to the server. */
  signal?: AbortSignal;
  /** Called on every `notifications/progress` for this request (wired to activity heartbeats). */
  onProgress?: (progress: { progress: number; total?: number; message?: string }) => void;
  /** Overrides the server's configured call timeout. */
  timeoutMs?: number;
}

/**
 * The worker's view of all configured MCP servers. One pooled connection per server; a dead
 * connection is replaced on the next use. Implementations never let one server's failure affect
 * another's.
 */
export interface McpHub {
  /** Lists tools of every enabled server in parallel. A failing server is reported, not thrown. */
  catalog(): Promise<Catalog>;
  /**
   * Calls one tool. Resolves with the tool's result (including `isError` results). Rejects only for
   * transport/protocol trouble (connection lost, timeout, server unavailable), which is retryable,
   * or with `McpPermanentError` for errors that retrying cannot fix.
   */
  callTool(req: CallToolRequest): Promise<ToolOutcome>;
  /** Connection state of each configured server, without side effects beyond a lazy connect. */
  status(): Promise<ServerStatus[]>;
  close(): Promise<void>;
}
