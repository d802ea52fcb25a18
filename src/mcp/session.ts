/**
 * What the pool needs from one connection to one server, whatever SDK revision speaks the protocol
 * underneath. The pool (connections.ts, tool-calls.ts, resources.ts, tool-listing.ts) talks only to
 * this; session-v1.ts implements it on the v1 SDK's `Client` (MCP 2025-11-25), session-v2.ts on the v2
 * client (MCP 2026-07-28), and session-select.ts picks one per server (its `protocol`).
 *
 * The data shapes (tools, roots, results) are the protocol's own, typed by the v1 SDK's schemas: they
 * are the spec's JSON, not the SDK's objects.
 */
import type { PriorDiscovery } from '@modelcontextprotocol/client';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import type {
  ClientCapabilities,
  GetPromptResult,
  ListResourcesResult,
  ListToolsResult,
  ReadResourceResult,
  Root,
  ServerCapabilities,
} from '@modelcontextprotocol/sdk/types.js';
import type { McpServerConfig } from './config';
import type { ServerRequestOptions } from './server-requests';
import type { TransportKind } from './transports';

/** Where and how a session connects. */
export interface SessionTarget {
  cfg: McpServerConfig;
  kind: TransportKind;
  clientInfo: { name: string; version: string };
  capabilities: ClientCapabilities;
  /** The OAuth-aware fetch of a server with `auth` (src/mcp/oauth). */
  authFetch?: FetchLike;
  /** What the slot learnt of the server's revision, kept across its connections (session-select.ts). */
  discovery?: DiscoveryCache;
}

/**
 * A server's revision as discovered: `modern` with its `server/discover` result (a connection then
 * adopts it with no round trip), or `legacy` (2025-11-25). One per slot, so one per authorization context.
 */
export interface DiscoveryCache {
  /** The verdict while it is fresh. */
  get(): PriorDiscovery | undefined;
  set(verdict: PriorDiscovery): void;
  /** The verdict proved wrong (or the server changed): the next connection discovers again. */
  forget(): void;
}

/**
 * What the pool hears from a session, and how the server's own requests are answered. Installed
 * before the session connects, so nothing the server sends during the handshake is missed.
 */
export interface SessionHooks {
  /** A stdio child's stderr, line by line. */
  onStderrLine(line: string): void;
  /** The transport reported an error (the session may or may not still work). */
  onTransportError(error: Error): void;
  /** A protocol-level notice (a malformed message, an unknown notification): worth a debug line. */
  onProtocolError(error: Error): void;
  /** The connection closed, from either side. */
  onClose(): void;
  /** The roots the server gets for `roots/list`, read at each request. */
  roots(): Root[];
  /** Who answers `elicitation/create` and `sampling/createMessage`, and for which call (server-requests.ts). */
  serverRequests: ServerRequestOptions;
  /** `notifications/resources/updated`. */
  onResourceUpdated(uri: string): void;
  /** `notifications/tools/list_changed`. */
  onToolsChanged(): void;
}

/** Limits of one request: aborting the signal cancels it (the server is told). */
export interface RequestLimits {
  signal?: AbortSignal;
  /** Milliseconds. */
  timeout: number;
}

export interface ToolCallOptions extends RequestLimits {
  /** Every `notifications/progress` of the request. */
  onprogress?: (progress: { progress: number; total?: number; message?: string }) => void;
  /** A progress notification starts the timeout over. */
  resetTimeoutOnProgress?: boolean;
  /** Milliseconds the request may last in all, progress or not. */
  maxTotalTimeout?: number;
}

export interface ToolCallParams {
  name: string;
  arguments: Record<string, unknown>;
  _meta?: Record<string, unknown>;
}

export type TaskMode = 'none' | 'per-tool' | 'per-call';

/** Reading the tasks of one session: the connection's own, or of a session rejoined to find one. */
export interface TaskReader {
  /** The task's status, or a rejection when the server does not know it. */
  getTask(taskId: string, limits: RequestLimits): Promise<{ status: string }>;
  /** Waits for the task's tool result. */
  getTaskResult(taskId: string, limits: RequestLimits): Promise<unknown>;
  cancelTask(taskId: string, limits: { timeout: number }): Promise<unknown>;
}

/** A Streamable HTTP session joined again by id, only to read its tasks; `leave` closes our side only. */
export interface RejoinedSession extends TaskReader {
  leave(): Promise<void>;
}

/** One connection to one server. */
export interface McpSession extends TaskReader {
  readonly kind: TransportKind;
  /**
   * Opens the connection and runs the handshake, within `timeoutMs` (the pool's connect may outlive one
   * connect timeout while uses still wait for it: src/mcp/connect-attempt.ts).
   */
  connect(timeoutMs: number): Promise<void>;
  /** The stdio child's pid once connected. */
  pid(): number | undefined;
  /** The Streamable HTTP session id, if the connection has one. */
  sessionId(): string | undefined;
  /** The MCP revision the connection speaks, once connected (for traces and metrics). */
  protocolVersion?(): string | undefined;
  /** What the server declared in the handshake. */
  serverCapabilities(): ServerCapabilities | undefined;
  /**
   * How MCP tasks are spoken on this connection (`callToolAsTask` and the task readers mean something
   * unless `none`): `per-tool` on 2025-11-25 (the tool listing says which tools run as tasks), `per-call`
   * with the 2026-07-28 tasks extension (any call may become a task: the server's choice).
   */
  taskMode(): TaskMode;

  /** A plain `tools/call`; resolves with the raw result (checked by the caller). */
  callTool(params: ToolCallParams, options: ToolCallOptions): Promise<unknown>;
  /**
   * A `tools/call` run as an MCP task kept `ttlMs` by the server: `onCreated` hears the task's id as
   * soon as the server made it; resolves with the raw result once the task ends.
   */
  callToolAsTask(params: ToolCallParams, options: ToolCallOptions, task: { ttlMs: number; onCreated(taskId: string): void }): Promise<unknown>;
  /** Joins Streamable HTTP session `sessionId` again (no `initialize`), to find a task it started. */
  rejoin(sessionId: string, connectMs: number): Promise<RejoinedSession>;

  /** One page of `tools/list`. */
  listTools(cursor: string | undefined, limits: RequestLimits): Promise<ListToolsResult>;
  /** One page of `resources/list` (`_meta`: the caller's context, so a server can list what that caller may read). */
  listResources(params: { cursor?: string; _meta?: Record<string, unknown> }, limits: RequestLimits): Promise<ListResourcesResult>;
  readResource(params: { uri: string; _meta?: Record<string, unknown> }, limits: RequestLimits): Promise<ReadResourceResult>;
  getPrompt(
    params: { name: string; arguments?: Record<string, string>; _meta?: Record<string, unknown> },
    limits: RequestLimits,
  ): Promise<GetPromptResult>;
  subscribeResource(uri: string): Promise<unknown>;
  ping(timeoutMs: number): Promise<unknown>;
  /** `notifications/roots/list_changed`. */
  sendRootsListChanged(): Promise<void>;

  /** Ends the server-side session (Streamable HTTP) instead of leaving it to expire; a no-op elsewhere. */
  terminateSession(): Promise<void>;
  /** Closes the connection; for stdio, ends the child and waits for it to exit. */
  close(): Promise<void>;
}

/** Makes a session, not yet connected; throws when the transport cannot even be built. */
export type OpenSession = (target: SessionTarget, hooks: SessionHooks) => McpSession;
