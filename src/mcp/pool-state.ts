/**
 * The pool's state, shared by its modules: a slot per server (and per user of a per-user server),
 * the connection a slot holds, and the few errors they pass between them.
 */
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { McpServerConfig } from './config';
import { AuthorizationDeniedError, AuthorizationRequiredError } from './oauth';
import type { CallsInFlight } from './server-requests';
import type { DiscoveryCache, McpSession } from './session';
import type { TransportKind } from './transports';

export interface HubLogger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

/** The user must (re)authorize the host with the server; retrying without them cannot help. */
export const isAuthorizationError = (error: unknown): error is AuthorizationRequiredError | AuthorizationDeniedError =>
  error instanceof AuthorizationRequiredError || error instanceof AuthorizationDeniedError;

/** Internal: the server refused the request in a way retrying cannot fix. */
export class RefusedError extends Error {
  constructor(readonly reason: string) {
    super(reason);
  }
}

export const noop = (): void => undefined;

/** `promise`, or undefined once `ms` passed (the promise is left to settle on its own). */
export async function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([promise, new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

export interface Connection {
  readonly id: number;
  readonly session: McpSession;
  readonly kind: TransportKind;
  pid?: number;
  /** False once closed or retired: no new work is handed to it. */
  alive: boolean;
  /** Why the connection was dropped for breaking the transport's limits: what its calls fail with. */
  fault?: string;
  inflight: number;
  /** Resources subscribed to on this connection (each once). */
  subscribed: Set<string>;
  /** The tool calls in flight on this connection: a server's request is routed to the one it belongs to. */
  calls: CallsInFlight;
  /** Bumped by every `tools/list_changed`, so a listing that started before one is not kept. */
  toolsGeneration?: number;
  /** Tool listing for this connection; dropped on `tools/list_changed` and never kept on failure. */
  tools?: Promise<Tool[]>;
  /** When the listing goes stale by the server's caching hint (a positive `ttlMs`); absent: held until `tools/list_changed`. */
  toolsExpireAt?: number;
  closing?: Promise<void>;
}

/**
 * A connect under way (connections.ts). Each use waits for it for its own connect timeout; the connect
 * itself goes on while a use still waits for it (at least one connect timeout, at most
 * MAX_CONNECT_TIMEOUTS of them), so a use that came late is not failed by an earlier one's timeout.
 */
export interface ConnectAttempt {
  readonly conn: Promise<Connection>;
  /** One more use waits for it; `leave` when that use stops waiting (answered, timed out or aborted). */
  join(): { leave(): void };
  /** Ends it now (the pool shuts down): what it opens is closed. */
  abandon(reason: Error): void;
}

export interface Slot {
  /** Replaced in place only when a reload changes nothing but the roots (the connection stays). */
  cfg: McpServerConfig;
  /** Values that must never appear in a message (src/security/secrets.ts). */
  readonly secrets: readonly string[];
  conn?: Connection;
  /** The connect under way, shared by every use that comes meanwhile; cleared when settled, so a failure is never cached. */
  connecting?: ConnectAttempt;
  /** The last failed connect, and how many failed in a row (the background checks' back-off: connections.ts). */
  lastFailure?: { at: number; reason: string; inARow: number };
  /** The failure last said at warn level, and how many connects failed the same way since (said at debug). */
  warned?: { at: number; reason: string; repeats: number };
  /** For `transport: auto`: the HTTP transport that worked, so reconnects skip the probing. */
  httpKind?: 'streamable-http' | 'sse';
  /** The stdio child's last stderr lines: the best clue when it dies. */
  stderrTail: string[];
  /** Replaced or removed by a config reload: a connect still under way is closed, not kept. */
  replaced?: boolean;
  /** Set on a per-user server's own slots (one per user, created on first use). */
  principal?: string;
  /** A per-user server's slots by principal (on the server's base slot). */
  perUser?: Map<string, Slot>;
  /** The OAuth-aware fetch of a server with `auth`, made once per slot. */
  authFetch?: FetchLike;
  /** The server's revision as discovered, kept across the slot's connections (session-select.ts). */
  discovery?: DiscoveryCache;
}
