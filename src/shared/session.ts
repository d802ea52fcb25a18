/**
 * Types of sessions: their view, settings, the chain's memory between turns and the carrier of a
 * migrated session (decision 0041). What workflows carry ends up in history: plain JSON, no secrets.
 */
import type { HistoryOptions, TurnMemory } from './turn';

export { CHAIN_DEPTH, type ChainInput, type HistoryOptions, type TurnMemory } from './turn';

/** One message of the conversation as users see it (GET /v1/sessions/:id/messages). */
export interface TranscriptMessage {
  /** 0-based position in the whole conversation; stable across continue-as-new. */
  index: number;
  role: 'user' | 'assistant';
  content: string;
  turnId: string;
  at: string;
  /** The turn's outcome; user messages carry it too, so a queued or failed request is visible. */
  status: 'queued' | 'running' | 'awaiting_approval' | 'completed' | 'failed' | 'cancelled';
}

export interface SessionSettings {
  history: HistoryOptions;
  /** Most requests waiting behind the running turn; more are refused (409 session_busy). */
  maxQueuedTurns: number;
  /** Messages kept for GET /v1/sessions/:id/messages; older ones live on in their turn workflows. */
  transcriptLimit: number;
  /** Continue-as-new after this many turns in one run, even if Temporal has not suggested it yet. */
  maxTurnsPerRun: number;
  /**
   * How long the session waits for a turn the API started to announce its end before it asks
   * Temporal how the turn stands (then twice as long each time, up to 30 minutes). Default 60 s.
   */
  turnCheckMs?: number;
}

export interface SessionView {
  sessionId: string;
  owner: { id: string; tenant: string };
  summary?: string;
  messages: TranscriptMessage[];
  totalMessages: number;
  turnsCompleted: number;
  activeTurnId?: string;
  queuedTurnIds: string[];
  run: number;
}


/**
 * A session of decision 0016's protocol, migrated (decision 0041): what its session workflow held, as
 * the input and the result of the closed carrier (`sessionMemoryWorkflow`) that took over its id.
 */
export interface SessionMemory {
  /** The session as its `sessionState` query answered at the migration: its transcript, for the API's view. */
  view: SessionView;
  /** What its next turn begins with: the summary and the completed exchanges of that transcript. */
  memory: TurnMemory;
}

// ---------------------------------------------------------------------------------------------
// The chain of turns (docs/decisions/0033-session-protocol-floor.md): no session workflow; each turn
// takes its memory from the turn before it.
// ---------------------------------------------------------------------------------------------

/** The turn before, as a turn of the chain finds it (the `predecessorMemory` local activity). */
export type PredecessorSeen =
  /** The memory of the nearest earlier turn that holds one; none when the chain had none (first turn). */
  | { state: 'ended'; memory?: TurnMemory }
  /** That turn runs still: the turn waits for it. */
  | { state: 'running'; turnId: string }
  /** No such workflow (yet): its start may merely be late. */
  | { state: 'missing'; turnId: string };

/** The turn before tells its follower it ended (through the worker's sink), with its memory if it has one. */
export interface PredecessorEnded {
  turnId: string;
  memory?: TurnMemory;
}
