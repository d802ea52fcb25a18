/**
 * Types of the session workflow's input, updates, queries and carried state. Everything here ends up
 * in workflow history: plain JSON, no secrets, no functions.
 */
import type { Policy } from './policy';
import type { DirectToolCall, TurnOptions } from './turn';
import type { UserContext } from './user';

export interface HistoryOptions {
  /** Most tokens of conversation (summary + messages) sent to the LLM with a new user message. */
  maxTokenCount: number;
  /** Above this many tokens of unsummarized conversation, older messages are summarized. */
  summarizationThreshold: number;
  /** Always kept verbatim (never summarized, never pruned before older ones). */
  retainNewestMessages: number;
}

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

export interface SubmitMessageInput {
  turnId: string;
  text: string;
  /** A tool call to run instead of asking the model; `text` then describes it for the transcript. */
  directCall?: DirectToolCall;
  user: UserContext;
  policy: Policy;
  sealedToken?: string;
  options: TurnOptions;
}

export interface SubmitMessageResult {
  turnId: string;
  created: boolean;
  /** Turns ahead of this one (0: it runs now). */
  position: number;
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

