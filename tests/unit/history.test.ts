import { estimateTokens, fallbackSummary, llmMessagesOf, planSummary, pruneForLlm, trimTranscript } from '../../src/core/history';
import type { TranscriptMessage } from '../../src/shared/session';

/** A transcript of `n` completed exchanges, optionally recorded the way queued turns are (requests first). */
function transcript(n: number, opts: { queuedStyle?: boolean; words?: number } = {}): TranscriptMessage[] {
  const out: TranscriptMessage[] = [];
  const body = (i: number) => `message ${i} ${'word '.repeat(opts.words ?? 5)}`.trim();
  if (opts.queuedStyle) {
    for (let i = 0; i < n; i++) out.push({ index: out.length, role: 'user', content: `q${i} ${body(i)}`, turnId: `t${i}`, at: '', status: 'completed' });
    for (let i = 0; i < n; i++) out.push({ index: out.length, role: 'assistant', content: `a${i} ${body(i)}`, turnId: `t${i}`, at: '', status: 'completed' });
    return out;
  }
  for (let i = 0; i < n; i++) {
    out.push({ index: out.length, role: 'user', content: `q${i} ${body(i)}`, turnId: `t${i}`, at: '', status: 'completed' });
    out.push({ index: out.length, role: 'assistant', content: `a${i} ${body(i)}`, turnId: `t${i}`, at: '', status: 'completed' });
  }
  return out;
}

test('memory pairs each request with its answer, even when queued requests were recorded first', () => {
  const memory = llmMessagesOf(transcript(3, { queuedStyle: true }), 0);
  expect(memory.map((m) => `${m.role}:${String(m.content).slice(0, 2)}`)).toEqual(['user:q0', 'assistant:a0', 'user:q1', 'assistant:a1', 'user:q2', 'assistant:a2']);
});

test('failed, cancelled and unfinished turns are not part of the model memory', () => {
  const t = transcript(3);
  t[2]!.status = 'failed';
  t[3]!.status = 'failed';
  t.push({ index: 6, role: 'user', content: 'still running', turnId: 't9', at: '', status: 'running' });
  expect(llmMessagesOf(t, 0).map((m) => String(m.content).slice(0, 2))).toEqual(['q0', 'a0', 'q2', 'a2']);
});

test('no summary below the threshold; above it, all but the newest messages are folded', () => {
  const opts = { maxTokenCount: 1_000, summarizationThreshold: 200, retainNewestMessages: 4 };
  const small = transcript(2);
  expect(planSummary(small, 0, undefined, opts).toSummarize).toEqual([]);
  const big = transcript(10, { words: 10 });
  const plan = planSummary(big, 0, undefined, opts);
  expect(plan.toSummarize).toHaveLength(16);
  expect(plan.nextSummarizedUpTo).toBe(16);
  expect(llmMessagesOf(big, plan.nextSummarizedUpTo)).toHaveLength(4);
  // Summarizing again right away finds nothing new to fold.
  expect(planSummary(big, plan.nextSummarizedUpTo, 'a summary', opts).toSummarize).toEqual([]);
});

test('the summary boundary never passes a request that is still queued', () => {
  // Exchanges 0-4, then a request still waiting (index 10), then exchanges recorded after it.
  const t = transcript(5, { words: 10 });
  t.push({ index: 10, role: 'user', content: 'waiting', turnId: 'tq', at: '', status: 'queued' });
  for (const m of transcript(9, { words: 10 }).slice(10)) t.push({ ...m, index: m.index + 1 });
  const plan = planSummary(t, 0, undefined, { maxTokenCount: 1_000, summarizationThreshold: 50, retainNewestMessages: 0 });
  expect(plan.toSummarize.length).toBeGreaterThan(0);
  expect(plan.nextSummarizedUpTo).toBe(10);
});

test('pruning keeps the summary and the newest messages within the token budget', () => {
  const memory = llmMessagesOf(transcript(50, { words: 20 }), 0);
  const pruned = pruneForLlm('older things happened', memory, 300);
  const tokens = pruned.reduce((n, m) => n + estimateTokens(String(m.content)), 0);
  expect(tokens).toBeLessThanOrEqual(300);
  expect(pruned[0]).toEqual({ role: 'system', content: 'Summary of the earlier conversation:\nolder things happened' });
  expect(pruned.at(-1)).toEqual(memory.at(-1));
  // Oldest go first: what is kept is a suffix of the memory.
  const kept = pruned.slice(1);
  expect(memory.slice(-kept.length)).toEqual(kept);
});

test('an over-long newest message is truncated rather than dropped', () => {
  const pruned = pruneForLlm(undefined, [{ role: 'assistant', content: 'x'.repeat(10_000) }], 100);
  expect(pruned).toHaveLength(1);
  expect(estimateTokens(String(pruned[0]!.content))).toBeLessThanOrEqual(100);
});

test('fallback summary is deterministic and bounded', () => {
  const messages = llmMessagesOf(transcript(100, { words: 30 }), 0);
  const a = fallbackSummary('before', messages, 1_000);
  expect(a).toBe(fallbackSummary('before', messages, 1_000));
  expect(a.length).toBeLessThanOrEqual(1_000);
  expect(a.endsWith(String(messages.at(-1)!.content).replace(/\s+/g, ' ').slice(0, 160))).toBe(true);
});

test('the stored transcript is trimmed to its limit, but never below what memory or a running turn needs', () => {
  const t = transcript(100);
  expect(trimTranscript(t, 50, 200)).toHaveLength(50);
  // Memory starts at message 60: the limit of 20 would cut into it, so 40 are kept.
  expect(trimTranscript(t, 20, 160)[0]!.index).toBe(160);
  expect(trimTranscript(t, 20, 120)[0]!.index).toBe(120);
  const running = [...t];
  running[150]!.status = 'running';
  expect(trimTranscript(running, 20, 200)[0]!.index).toBe(150);
});
