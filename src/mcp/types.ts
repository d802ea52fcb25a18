import type { McpServerConfig } from './config';
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
  /**
   * How long the caller can wait in all (the activity's time left): the call's total limit is the
   * smaller of this and the server's `callTotalMs`, so it ends with its own reason first.
   */
  totalTimeoutMs?: number;
  /**
   * For a tool that runs as an MCP task: called once the server created it, with what it takes to
   * find it again (the activity keeps it in its heartbeat details).
   */
  onTask?: (task: ToolTaskRef) => void;
  /** A task an earlier attempt started: wait for its result instead of calling the tool again. */
  resumeTask?: ToolTaskRef;
  /**
   * Called just before a plain tools/call request leaves (the connection is up): from here on the
   * server may apply it. The activity records that in its heartbeat details for the next attempt to
   * see. Task-augmented calls report `onTask` instead (the first heartbeat of an attempt leaves at
   * once, later ones are throttled: the task id must be that first one).
   */
  onSend?: () => void;
}

/** An MCP task of a tool call, and the Streamable HTTP session it lives in (tasks are per session). */
export interface ToolTaskRef {
  taskId: string;
  sessionId?: string;
}

export interface CatalogOptions {
  /**
   * Whether an HTTP server whose tool list is held is pinged first, so a server that went away is
   * reported before the model plans around its tools (default true). A tool call's lookup passes
   * false: its own request tells soon enough, and it must cost no round trip of its own.
   */
  probe?: boolean;
}

/**
 * The worker's view of all configured MCP servers. One pooled connection per server; a dead
 * connection is replaced on the next use. Implementations never let one server's failure affect
 * another's.
 */
export interface McpHub {
  /** Lists tools of every enabled server in parallel. A failing server is reported, not thrown. */
  catalog(opts?: CatalogOptions): Promise<Catalog>;
  /**
   * Calls one tool. Resolves with the tool's result (including `isError` results). Rejects only for
   * transport/protocol trouble (connection lost, timeout, server unavailable), which is retryable,
   * or with `McpPermanentError` for errors that retrying cannot fix.
   */
  callTool(req: CallToolRequest): Promise<ToolOutcome>;
  /** The server's configuration, where the hub has one (its retry profile: src/mcp/repeat-safety.ts). */
  serverConfig?(server: string): McpServerConfig | undefined;
  /** Connection state of each configured server, without side effects beyond a lazy connect. */
  status(): Promise<ServerStatus[]>;
  close(): Promise<void>;
}
