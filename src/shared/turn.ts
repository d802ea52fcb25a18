import type { Policy } from './policy';
import type { UserContext } from './user';

/**
 * Types that cross the workflow boundary (workflow input, queries, results). Everything here ends up
 * in workflow history: plain JSON, no secrets, no functions.
 */

export const TURN_STATUSES = ['running', 'awaiting_approval', 'completed', 'failed', 'cancelled'] as const;
export type TurnStatus = (typeof TURN_STATUSES)[number];

/** A chat message in OpenAI chat-completions shape, the lingua franca of the LLM activity. */
export interface LlmToolCall {
  id: string;
  name: string;
  /** Raw JSON text exactly as the model produced it; parsed (and rejected if invalid) by the host. */
  arguments: string;
}

export type ChatMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string | null; toolCalls?: LlmToolCall[] }
  | {
      role: 'tool';
      toolCallId: string;
      /** The result as text: what every provider gets, and all an OpenAI-compatible endpoint takes. */
      content: string;
      /** The result's images, for providers that take them in a tool result (Anthropic, Gemini). */
      images?: ToolResultImage[];
      /** The result's structured content (MCP `structuredContent`), for providers that take JSON (Gemini). */
      structured?: Record<string, unknown>;
      /** The tool said the call failed (MCP `isError`): Anthropic marks the block, Gemini answers `error`. */
      isError?: boolean;
    };

export interface ToolResultImage {
  mimeType: string;
  /** Base64, as MCP carries it. */
  data: string;
}

/** A tool the LLM may call, as sent to the model (name + description + JSON Schema). */
export interface LlmToolSpec {
  name: string;
  description?: string;
  parameters: Record<string, unknown>;
}

export interface LlmRequest {
  turnId: string;
  step: number;
  messages: ChatMessage[];
  /** The tools offered, in full (turns recorded before tool references, and the summarizer: none). */
  tools: LlmToolSpec[];
  /**
   * The tools offered, by LLM-visible name: the worker resolves them from its catalog, so schemas are
   * not copied into every step's input. Takes precedence over `tools`.
   */
  toolNames?: string[];
  /** The longest completion wanted (sampling requests of servers); absent: the endpoint's default. */
  maxTokens?: number;
  /** A model by its name in the host config's `models`; absent: the worker's default model. */
  model?: string;
  /**
   * Who asks (a turn's user) and in which session: their most used tools lead a searched catalog
   * (docs/decisions/0032; absent: catalog order), and the step's tokens are charged to them (without
   * `sessionId`, as steps recorded before it: the owner is read from the turn's search attributes).
   */
  caller?: { id: string; tenant: string; sessionId?: string };
}

export interface LlmResponse {
  text: string | null;
  toolCalls: LlmToolCall[];
  finishReason: string | null;
  /**
   * Prompt tokens include cached ones; `cachedTokens` (read from a provider's prompt cache) and
   * `cacheWriteTokens` (written to it, Anthropic) say how many, when the provider reports them.
   */
  usage?: { promptTokens: number; completionTokens: number; cachedTokens?: number; cacheWriteTokens?: number };
  /** Which provider and model answered (absent in results recorded before native providers). */
  provider?: string;
  model?: string;
}

/** What the conversation asks to be gathered as context before the first LLM call. */
export interface ContextSpec {
  /** `because`: why the API chose it (a role or an intent rule, src/core/intents.ts); absent before intents, or when none matched. */
  resources: { server: string; uri: string; because?: string }[];
  prompts: { server: string; name: string; arguments?: Record<string, string>; because?: string }[];
}

export interface RetryProfile {
  maximumAttempts: number;
  initialIntervalMs: number;
  maximumIntervalMs: number;
}

/** Activity timeouts per failure profile. Heartbeat timeouts bound how fast a dead worker is noticed. */
export interface ActivityTimeouts {
  llmStartToCloseMs: number;
  llmHeartbeatMs: number;
  toolStartToCloseMs: number;
  toolHeartbeatMs: number;
}

/**
 * How long a turn waits for the user to authorize the host with an MCP server (OAuth consent in the
 * browser), and how long the started authorization stays valid in the token store.
 */
export const AUTHORIZATION_WAIT_MS = 10 * 60_000;

export const DEFAULT_ACTIVITY_TIMEOUTS: ActivityTimeouts = {
  llmStartToCloseMs: 120_000,
  llmHeartbeatMs: 30_000,
  toolStartToCloseMs: 600_000,
  toolHeartbeatMs: 10_000,
};

export interface TurnOptions {
  /** LLM calls per turn before the host asks the model for a final answer without tools. */
  maxSteps: number;
  systemPrompt?: string;
  context: ContextSpec;
  llmRetry: RetryProfile;
  mcpRetry: RetryProfile;
  /** Longest tool result text handed to the LLM; longer results are truncated with a marker. */
  maxToolResultChars: number;
  /** Absent in turns started before timeouts were configurable; defaults apply. */
  timeouts?: ActivityTimeouts;
  /**
   * The model every LLM step asks, by its name in the host config's `models`, as the API chose it for the
   * caller's role (`modelByRole`); absent: the worker's default model.
   */
  model?: string;
}

/**
 * A tool call a person asked for directly (the console's "try a tool"): the turn runs it as its one
 * step, through the same policy check, approval, argument validation, idempotency key and audit as a
 * call the model planned, and answers with its result. No LLM call.
 */
export interface DirectToolCall {
  server: string;
  tool: string;
  arguments: Record<string, unknown>;
}

export interface TurnInput {
  turnId: string;
  sessionId: string;
  userText: string;
  /** Set: run this call instead of asking the model (see DirectToolCall). */
  directCall?: DirectToolCall;
  /** Who asked (from the verified JWT; never the token itself). Absent in turns from before auth. */
  user?: UserContext;
  /** The tool policy in force when the turn started; checked before every tool call. */
  policy?: Policy;
  /**
   * The caller's bearer token sealed with TOKEN_SEAL_KEY (ciphertext only), present when the API
   * has a seal key; workers open it only for servers configured with `forwardUserToken`.
   */
  sealedToken?: string;
  /** Earlier messages of the conversation, oldest first. */
  history: ChatMessage[];
  /**
   * The turn's place in its session's chain (decision 0033): its memory comes from the turns before,
   * and the next turn's from its result. Absent in direct and standalone turns.
   */
  chain?: ChainInput;
  options: TurnOptions;
}

export const TOOL_CALL_STATES = ['running', 'completed', 'failed'] as const;

export interface ToolCallRecord {
  /** The model's tool call id. */
  id: string;
  step: number;
  /** LLM-visible name. */
  name: string;
  server?: string;
  tool?: string;
  arguments: unknown;
  state: (typeof TOOL_CALL_STATES)[number];
  isError?: boolean;
  /** Result text, truncated for the record (the LLM got up to maxToolResultChars). */
  result?: string;
  startedAt: string;
  finishedAt?: string;
}

/** Every kind of durable turn event; the API's contract and the live channel's schema use this list. */
export const TURN_EVENT_TYPES = [
  'status',
  'tool_call_started',
  'tool_call_finished',
  'text',
  'notice',
  'approval_required',
  'approval_decided',
  'authorization_required',
  'authorization_completed',
  'input_required',
  'input_provided',
  'cancelled',
  'done',
  'error',
] as const;
export type TurnEventType = (typeof TURN_EVENT_TYPES)[number];

/** Whose turn an event belongs to: sent with each pushed copy, so the API can check a stream's caller without Temporal. */
export interface PushedTurn {
  sessionId: string;
  owner?: { id: string; tenant: string };
}

export interface TurnEvent {
  /** 1-based, dense, increasing within a turn: the SSE event id. */
  id: number;
  type: TurnEventType;
  at: string;
  data: Record<string, unknown>;
}

export interface TurnError {
  code: string;
  message: string;
}

/** The turn as seen from outside: GET /v1/turns/:id, the workflow result, and the progress query. */
export interface PendingApproval {
  toolCallId: string;
  name: string;
  server: string;
  tool: string;
  arguments: unknown;
  state: 'pending' | 'approved' | 'rejected' | 'timed_out';
  decidedBy?: string;
}

/**
 * What a turn workflow returns (and a failed one carries in its failure): its state, and for a turn of
 * a chain the memory its successor begins with (after it when completed, before it when failed). The
 * memory is not part of the state the turnState query answers.
 */
export type TurnResult = TurnState & { memory?: TurnMemory };

export interface TurnState {
  turnId: string;
  sessionId: string;
  /** The user and tenant the turn belongs to; nobody else may read or steer it. */
  owner?: { id: string; tenant: string };
  /** What the user asked (its session's transcript shows it). Absent in turns recorded before the chain. */
  userText?: string;
  approvals?: PendingApproval[];
  status: TurnStatus;
  text?: string;
  toolCalls: ToolCallRecord[];
  error?: TurnError;
  events: TurnEvent[];
  steps: number;
  /**
   * Tokens the turn's model calls used, as the endpoint reported them (answered attempts; a failed
   * attempt reports none), and those servers' sampling requests used. Absent until the first report.
   */
  usage?: TurnUsage;
}

export interface TurnUsage {
  promptTokens: number;
  completionTokens: number;
  samplingTokens: number;
}

export const TERMINAL_STATUSES: readonly TurnStatus[] = ['completed', 'failed', 'cancelled'];

export interface ApprovalInput {
  toolCallId: string;
  approve: boolean;
  /** The verified caller deciding; the workflow checks they may approve this turn. */
  approver: UserContext;
}

export interface ApprovalResult {
  toolCallId: string;
  decision: 'approved' | 'rejected';
}

// The chain of turns (docs/decisions/0033): a turn's memory and its place in its session.

export interface HistoryOptions {
  /** Most tokens of conversation (summary + messages) sent to the LLM with a new user message. */
  maxTokenCount: number;
  /** Above this many tokens of unsummarized conversation, older messages are summarized. */
  summarizationThreshold: number;
  /** Always kept verbatim (never summarized, never pruned before older ones). */
  retainNewestMessages: number;
}

/** What the model remembers of a conversation: the running summary and the exchanges after it. */
export interface TurnMemory {
  summary?: string;
  /** Completed exchanges not folded into the summary, oldest first: each request, then its answer. */
  messages: ChatMessage[];
}

/** A turn's place in its session's chain, from the API's index of the session (TurnInput.chain). */
export interface ChainInput {
  /**
   * Earlier turns of the session, nearest first (at most CHAIN_DEPTH): the memory comes from the
   * first of them that ended with one; one still running is waited for. Empty: the session's first turn.
   */
  after: string[];
  /** How the memory is pruned for the model and when it is summarized. */
  history: HistoryOptions;
  /**
   * The workflow id a session workflow of the protocol before (decision 0016) had in this session,
   * when `after` reaches back to the session's first link in the index: the carrier its migration left
   * there (decision 0041) holds the chain's memory when the turns before hold none.
   */
  legacySession?: string;
  /**
   * The memory the nearest turn before (`after[0]`) handed on when it ended, as the API heard it with
   * that turn's end (the worker's live push): the turn then reads nothing of the turns before.
   * Absent when the API did not hear it; the turn reads it from Temporal then.
   */
  handedOn?: { turnId: string; memory: TurnMemory };
  /**
   * The session's first turn, begun in no session workflow (the API's index has no turn before it and
   * `legacySession` is absent): its memory is empty, and it reads nothing. Absent in inputs recorded
   * before it, whose first turns read (and replay so).
   */
  first?: true;
  /** How long a turn waits for the running turn before it without word before it looks again (then twice as long). Default 60 s. */
  checkMs?: number;
  /** The pause before a missing turn before is looked for again (three looks: 1×, 5×, 15× this, then it is passed over). Default 1 s. */
  missingCheckMs?: number;
}

/** How many earlier turns the API names in a turn's chain input. */
export const CHAIN_DEPTH = 8;

