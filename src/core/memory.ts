/**
 * A conversation's memory as the chain of turns carries it (docs/decisions/0033): each turn begins
 * with the memory of the turn before and ends with it plus its own exchange, folding the older
 * exchanges into the summary when they outgrow the threshold. Pure: the turn workflow calls these.
 */
import type { HistoryOptions, TurnMemory } from '../shared/session';
import type { ChatMessage } from '../shared/turn';
import { estimateTokens, pruneForLlm } from './history';

export const EMPTY_MEMORY: TurnMemory = { messages: [] };

/** The history handed to the model: the summary and the newest exchanges that fit its budget. */
export function historyOf(memory: TurnMemory, opts: HistoryOptions): ChatMessage[] {
  return pruneForLlm(memory.summary, memory.messages, opts.maxTokenCount);
}

export interface MemoryAfter {
  /** The memory with the new exchange, before any summary. */
  memory: TurnMemory;
  /** The oldest messages to fold into the summary now (whole exchanges); empty when none is due. */
  fold: ChatMessage[];
}

const textOf = (m: ChatMessage): string => (typeof m.content === 'string' ? m.content : '');

/**
 * The memory after a completed exchange. Once the summary and the exchanges exceed the
 * summarization threshold, all but the newest `retainNewestMessages` messages are to be folded.
 */
export function memoryAfter(before: TurnMemory, request: string, answer: string, opts: HistoryOptions): MemoryAfter {
  const messages: ChatMessage[] = [...before.messages, { role: 'user', content: request }, { role: 'assistant', content: answer }];
  const memory: TurnMemory = { ...(before.summary ? { summary: before.summary } : {}), messages };
  const tokens = (before.summary ? estimateTokens(before.summary) : 0) + messages.reduce((n, m) => n + estimateTokens(textOf(m)), 0);
  if (tokens <= opts.summarizationThreshold || messages.length <= opts.retainNewestMessages) return { memory, fold: [] };
  // Whole exchanges: keep an even number of the newest messages.
  const keep = 2 * Math.ceil(opts.retainNewestMessages / 2);
  return { memory, fold: messages.slice(0, messages.length - keep) };
}

/** `memory` with its oldest `fold` messages replaced by `summary`. */
export function summarized(memory: TurnMemory, fold: readonly ChatMessage[], summary: string): TurnMemory {
  return { summary, messages: memory.messages.slice(fold.length) };
}
