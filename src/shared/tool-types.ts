/**
 * One tool as the host knows it: the name the LLM sees, where it really lives, and its schema.
 * Produced by the MCP layer (worker side), carried through workflow history, so it must stay
 * plain JSON and must never hold secrets.
 */
/** What a turn needs of a tool to route and check a call: its names, not its schema. */
export type ToolRef = Pick<CatalogTool, 'name' | 'server' | 'tool'> & {
  /**
   * Read-only (its annotation or the server's `readOnlyTools`): the turn calls it as a local activity,
   * without a server round trip, since running it again can do no harm. Absent in turns recorded
   * before, which call every tool as a regular activity.
   */
  readOnly?: true;
};

/**
 * The catalog as a turn records it (the local activity's result in history): tool references and the
 * servers' states. The LLM activity resolves the names to full tool specs in the worker, so schemas
 * and descriptions are not copied into every step's input.
 */
export interface CatalogRefs {
  tools: ToolRef[];
  servers: ServerStatus[];
}

export interface CatalogTool {
  /** LLM-visible name, `server__tool` sanitized to ^[a-zA-Z0-9_-]{1,64}$ and stable across restarts. */
  name: string;
  server: string;
  tool: string;
  description?: string;
  inputSchema: Record<string, unknown>;
  annotations?: {
    title?: string;
    readOnlyHint?: boolean;
    destructiveHint?: boolean;
    idempotentHint?: boolean;
    openWorldHint?: boolean;
  };
}

export const SERVER_STATES = ['connected', 'unavailable', 'disabled'] as const;
export type ServerState = (typeof SERVER_STATES)[number];

export const SERVER_TRANSPORTS = ['stdio', 'streamable-http', 'sse'] as const;
export const CIRCUIT_STATES = ['closed', 'open', 'half_open'] as const;

/** Health of one configured MCP server, as reported to /healthz, /v1/servers and the LLM. */
export interface ServerStatus {
  server: string;
  transport: (typeof SERVER_TRANSPORTS)[number];
  state: ServerState;
  toolCount: number;
  /** Why the server is unavailable; never includes secrets (headers, env values). */
  error?: string;
  /**
   * An OAuth server whose tools the host may not list yet: where to authorize the host's listing
   * (users then authorize their own calls on first use).
   */
  authorizationUrl?: string;
  /** The worker's circuit breaker for this server: `open` means calls are refused until `retryAt`. */
  circuit?: {
    state: (typeof CIRCUIT_STATES)[number];
    consecutiveFailures: number;
    retryAt?: string;
  };
}

export interface Catalog {
  tools: CatalogTool[];
  servers: ServerStatus[];
}

/**
 * The outcome of one tool call, normalized for the LLM. `isError` results are data for the model
 * (the tool said no, arguments invalid, tool unknown); they are never retried.
 */
export interface ToolOutcome {
  isError: boolean;
  /** Tokens the server's sampling requests used during the call (counted against the turn's budget). */
  samplingTokens?: number;
  /** Text rendering of the result content, ready to hand to the LLM as a tool message. */
  text: string;
  structuredContent?: Record<string, unknown>;
}
