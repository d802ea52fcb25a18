/**
 * The session's record of its conversation, kept in the state it carries across continue-as-new:
 * the messages with their turn's status, and the turn ids it has seen. Pure: the clock is passed in
 * (the workflow's, deterministic).
 */
import type { SessionCarry, TranscriptMessage } from '../shared/session';

/** Turn ids remembered so that a retried submission is recognized, also after continue-as-new. */
const REMEMBERED_TURN_IDS = 200;

export interface Transcript {
  remember(turnId: string): void;
  append(m: Omit<TranscriptMessage, 'index' | 'at'>): void;
  has(turnId: string, role: TranscriptMessage['role']): boolean;
  setStatus(turnId: string, status: TranscriptMessage['status']): void;
  /** A message whose turn never ran: its entry says so, without an answer to remember. */
  notStarted(turnId: string, why: string): void;
  /** The turn's end: its status on its messages, and its answer (or why there is none). */
  ended(turnId: string, status: TranscriptMessage['status'], content: string): void;
}

export function transcriptOf(carry: SessionCarry, now: () => string): Transcript {
  const t: Transcript = {
    remember(turnId) {
      carry.recentTurnIds.push(turnId);
      if (carry.recentTurnIds.length > REMEMBERED_TURN_IDS) carry.recentTurnIds.splice(0, carry.recentTurnIds.length - REMEMBERED_TURN_IDS);
    },
    append(m) {
      carry.transcript.push({ ...m, index: carry.totalMessages, at: now() });
      carry.totalMessages += 1;
    },
    has(turnId, role) {
      return carry.transcript.some((m) => m.turnId === turnId && m.role === role);
    },
    setStatus(turnId, status) {
      for (const m of carry.transcript) if (m.turnId === turnId) m.status = status;
    },
    notStarted(turnId, why) {
      if (!t.has(turnId, 'user') || t.has(turnId, 'assistant')) return;
      t.setStatus(turnId, 'failed');
      t.append({ role: 'assistant', content: why, turnId, status: 'failed' });
    },
    ended(turnId, status, content) {
      t.setStatus(turnId, status);
      t.append({ role: 'assistant', content, turnId, status });
      if (status === 'completed') carry.turnsCompleted += 1;
    },
  };
  return t;
}
