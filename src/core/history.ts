/**
 * Conversation history management (seed 004 `HistoryManagementOptions`): which messages the LLM sees,
 * when older ones are condensed into a summary, and how the stored transcript stays bounded.
 * Pure: the session workflow calls these, so they must replay identically (no clocks, no I/O).
 */
import type { HistoryOptions, TranscriptMessage } from '../shared/session';
import type { ChatMessage } from '../shared/turn';

export const DEFAULT_HISTORY_OPTIONS: HistoryOptions = {
  maxTokenCount: 8_000,
  summarizationThreshold: 6_000,
  retainNewestMessages: 10,
};

/**
 * A rough token count: about four characters per token for English text plus a few tokens of
 * per-message overhead. Good enough for a budget; a real tokenizer would tie us to one model family.
 */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4) + 4;
}

/** One completed request and its answer, the unit the model's memory is made of. */
interface Exchange {
  /** Transcript index of the user message. */
  userIndex: number;
  messages: ChatMessage[];
  tokens: number;
}

/**
 * The completed exchanges from `fromIndex` on, in the order the user sent them. The transcript is
 * chronological (a queued message is recorded before the previous answer), so messages are paired
 * by turn here: the model always sees each request directly followed by its answer.
 */
function exchangesOf(transcript: readonly TranscriptMessage[], fromIndex: number): Exchange[] {
  const answers = new Map<string, TranscriptMessage>();
  for (const m of transcript) if (m.role === 'assistant' && m.status === 'completed') answers.set(m.turnId, m);
  const out: Exchange[] = [];
  for (const m of transcript) {
    if (m.role !== 'user' || m.index < fromIndex || m.status !== 'completed') continue;
    const answer = answers.get(m.turnId);
    if (!answer) continue;
    out.push({
      userIndex: m.index,
      messages: [
        { role: 'user', content: m.content },
        { role: 'assistant', content: answer.content },
      ],
      tokens: estimateTokens(m.content) + estimateTokens(answer.content),
    });
  }
  return out;
}

/** The messages that form the model's memory: completed exchanges only, request then answer. */
export function llmMessagesOf(transcript: readonly TranscriptMessage[], fromIndex: number): ChatMessage[] {
  return exchangesOf(transcript, fromIndex).flatMap((e) => e.messages);
}

export interface SummaryPlan {
  /** Messages to fold into the summary now (oldest first); empty when no summary is due. */
  toSummarize: ChatMessage[];
  /** Transcript index from which messages stay verbatim after this summary. */
  nextSummarizedUpTo: number;
}

/**
 * Decides whether older messages should be summarized: when the unsummarized conversation (and the
 * current summary) exceeds the threshold, all but the newest `retainNewestMessages` messages (whole
 * exchanges) are folded into the summary.
 */
export function planSummary(
  transcript: readonly TranscriptMessage[],
  summarizedUpTo: number,
  summary: string | undefined,
  opts: HistoryOptions,
): SummaryPlan {
  const live = exchangesOf(transcript, summarizedUpTo);
  const tokens = (summary ? estimateTokens(summary) : 0) + live.reduce((n, e) => n + e.tokens, 0);
  if (tokens <= opts.summarizationThreshold || live.length * 2 <= opts.retainNewestMessages) {
    return { toSummarize: [], nextSummarizedUpTo: summarizedUpTo };
  }
  const keep = Math.ceil(opts.retainNewestMessages / 2);
  const folded = live.slice(0, live.length - keep);
  // Never move past a request that has not finished: its exchange must stay in memory.
  const pending = transcript.find((m) => m.index >= summarizedUpTo && !isSettled(m));
  const afterFolded = (folded.at(-1)?.userIndex ?? summarizedUpTo - 1) + 1;
  const boundary = Math.min(live[live.length - keep]?.userIndex ?? afterFolded, pending?.index ?? Number.MAX_SAFE_INTEGER);
  return { toSummarize: folded.flatMap((e) => e.messages), nextSummarizedUpTo: Math.max(summarizedUpTo, boundary) };
}

function isSettled(m: TranscriptMessage): boolean {
  return m.status === 'completed' || m.status === 'failed' || m.status === 'cancelled';
}

/**
 * The history handed to a new turn: the summary (as a system message) and the newest messages that
 * fit in `maxTokenCount`, oldest dropped first. The newest message is always kept, truncated if it
 * alone is over budget, so the model never loses the immediately preceding exchange entirely.
 */
export function pruneForLlm(summary: string | undefined, messages: readonly ChatMessage[], maxTokenCount: number): ChatMessage[] {
  const out: ChatMessage[] = [];
  let budget = maxTokenCount;
  if (summary) {
    const content = `Summary of the earlier conversation:\n${summary}`;
    const cost = estimateTokens(content);
    if (cost <= budget / 2) {
      out.push({ role: 'system', content });
      budget -= cost;
    } else {
      const text = truncateToTokens(content, Math.floor(budget / 2));
      out.push({ role: 'system', content: text });
      budget -= estimateTokens(text);
    }
  }
  const kept: ChatMessage[] = [];
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i] as ChatMessage;
    const content = typeof m.content === 'string' ? m.content : '';
    const cost = estimateTokens(content);
    if (cost > budget) {
      if (kept.length === 0 && budget > 16) kept.unshift({ ...m, content: truncateToTokens(content, budget) } as ChatMessage);
      break;
    }
    budget -= cost;
    kept.unshift(m);
  }
  return [...out, ...kept];
}

function truncateToTokens(text: string, tokens: number): string {
  const chars = Math.max(0, (tokens - 4) * 4 - 1);
  return text.length <= chars ? text : `${text.slice(0, chars)}…`;
}

/**
 * Summary used when the LLM cannot summarize (unavailable, rejected): the previous summary plus the
 * start of each folded message, cut from the front to stay within `maxChars`. Worse than a model's
 * summary, but deterministic and it never loses the fact that the conversation happened.
 */
export function fallbackSummary(previous: string | undefined, messages: readonly ChatMessage[], maxChars: number): string {
  const lines = messages.map((m) => `${m.role}: ${(typeof m.content === 'string' ? m.content : '').replace(/\s+/g, ' ').slice(0, 160)}`);
  const text = [previous, ...lines].filter(Boolean).join('\n');
  return text.length <= maxChars ? text : `…${text.slice(text.length - maxChars + 1)}`;
}

/**
 * The transcript kept in the workflow: the newest `limit` messages, plus whatever the model's memory
 * still needs (everything from `summarizedUpTo`) and any request still in flight.
 */
export function trimTranscript(transcript: TranscriptMessage[], limit: number, summarizedUpTo: number): TranscriptMessage[] {
  if (transcript.length <= limit) return transcript;
  const byLimit = (transcript[transcript.length - limit] as TranscriptMessage).index;
  const pending = transcript.find((m) => !isSettled(m))?.index ?? Number.MAX_SAFE_INTEGER;
  const memory = exchangesOf(transcript, summarizedUpTo)[0]?.userIndex ?? Number.MAX_SAFE_INTEGER;
  const from = Math.min(byLimit, memory, pending);
  return transcript.filter((m) => m.index >= from);
}
