/**
 * Types of the session workflow's input, updates, queries and carried state. Everything here ends up
 * in workflow history: plain JSON, no secrets, no functions.
 */
import type { ChatMessage, HistoryOptions, TurnMemory } from './turn';

export { CHAIN_DEPTH, type ChainInput, type HistoryOptions, type TurnMemory } from './turn';
import type { UserContext } from './user';

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

/** State carried from one run of a session to the next (continue-as-new). */
export interface SessionCarry {
  summary?: string;
  /** Transcript index from which messages are kept verbatim for the model (older ones are summarized). */
  summarizedUpTo: number;
  transcript: TranscriptMessage[];
  totalMessages: number;
  turnsCompleted: number;
  /** Recently submitted turn ids, so a retried submission is recognized after continue-as-new. */
  recentTurnIds: string[];
  run: number;
}

export interface SessionInput {
  sessionId: string;
  owner: { id: string; tenant: string };
  settings: SessionSettings;
  carry?: SessionCarry;
}

/**
 * A message for the session: the API registers it and then starts the turn workflow itself, with the
 * memory the answer carries (docs/decisions/0016-the-session-hop.md).
 */
export type SubmitMessageInput = StartedTurnMessage;

/** The API starts the turn workflow (id `turnId`) itself once the session registered it. */
export interface StartedTurnMessage {
  turnId: string;
  text: string;
  user: UserContext;
  /** Always set: it told this protocol from the one before (the session starting its turns as children). */
  startedTurn: true;
}

/**
 * What a turn the API started behind another one learns from its session when it joins (the
 * `turnAdmission` query): go now with this memory, wait for `beginTurn`, or the session does not know it.
 */
export type TurnAdmission =
  | { state: 'begin'; history: ChatMessage[] }
  | { state: 'queued'; position: number }
  /** Known to the session and already over (a repeat of its id). */
  | { state: 'ended' }
  | { state: 'unknown' };

/** A turn the API started tells its session how it ended (the `turnEnded` signal). */
export interface TurnEnd {
  turnId: string;
  status: 'completed' | 'failed' | 'cancelled';
  /** The answer, or what went wrong: the transcript's assistant message. */
  content: string;
}

export interface SubmitMessageResult {
  turnId: string;
  created: boolean;
  /** Turns ahead of this one (0: it runs now). */
  position: number;
  /**
   * A turn the API starts (`startedTurn`) that may begin at once: the conversation so far, for its
   * input. Absent when it waits behind another turn (it then joins the session when it starts).
   */
  memory?: ChatMessage[];
  /**
   * A message the session knew already (`created: false`) whose turn has not ended: a retried request
   * starts the turn again (harmless when it exists), in case the first request died before starting it.
   */
  pending?: boolean;
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

/** A turn as its session checks on it when its end was not announced (the `turnOutcome` activity). */
export type TurnSeen = { state: 'running' } | { state: 'missing' } | { state: 'ended'; end: TurnEnd };

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
