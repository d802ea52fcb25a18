/**
 * The tool policy document, validated and with defaults applied (the schema lives at the edge that
 * loads it: src/config/policy.ts). Carried in workflow input: plain JSON. The decisions taken on it are
 * in src/core/policy.ts.
 */
export interface ServerRule {
  /** `"*"`, or tool names and prefixes ending in `*`. */
  tools: '*' | string[];
  /**
   * The server's resources the role may read on demand (adaptive context, docs/decisions/0036): `"*"`,
   * or URIs and prefixes ending in `*`. Absent: none (role-based context is chosen by the host config).
   */
  resources?: '*' | string[];
}

export interface Policy {
  /** Role name → server name (or `"*"`) → the tools that role may use there. */
  roles: Record<string, { servers: Record<string, ServerRule> }>;
  /** `<server>/<tool>` pattern → scopes a caller must hold for matching tools. */
  toolScopes: Record<string, string[]>;
  /** A scope that passes every scope check (never a role check). */
  superScope?: string;
  approval?: {
    /** `<server>/<tool>` patterns whose calls wait for a human decision. */
    tools: string[];
    timeoutMs: number;
    /** Roles that may decide other users' pending calls (the owner always may). */
    approverRoles: string[];
  };
  /**
   * Which servers may ask users for input during a tool call (elicitation): names or `"*"`. Absent:
   * every server may. A server not listed gets `decline` without the user being asked.
   */
  elicitation?: {
    servers: string[];
    /** The roles whose users may be asked; absent: every role. Others' calls get `decline` unasked. */
    roles?: string[];
  };
  /**
   * Which servers may ask the host's model for completions during a tool call (sampling), and how much:
   * the longest completion per request and the tokens per turn. Absent: no server may.
   */
  sampling?: {
    servers: string[];
    maxTokensPerRequest: number;
    maxTokensPerTurn: number;
    /** Every request waits for the turn's user to allow it (shown as a question); default false. */
    approval?: boolean;
  };
}
