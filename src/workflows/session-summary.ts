/**
 * The session's running summary: once the transcript outgrows the model's memory budget, the older
 * messages are condensed by the model (an activity), or, should that fail, kept as an extract.
 */
import { log, proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { fallbackSummary, planSummary } from '../core/history';
import { NON_RETRYABLE } from '../shared/failures';
import type { SessionCarry, SessionSettings } from '../shared/session';

/** Longest summary kept; the summarizer is asked for less, the fallback is cut to this. */
const MAX_SUMMARY_CHARS = 4_000;

export function sessionSummarizer(sessionId: string, carry: SessionCarry, settings: SessionSettings): () => Promise<void> {
  const summarizer = proxyActivities<Activities>({
    startToCloseTimeout: '2 minutes',
    heartbeatTimeout: '30 seconds',
    retry: { maximumAttempts: 3, initialInterval: '1 second', maximumInterval: '10 seconds', nonRetryableErrorTypes: [...NON_RETRYABLE.llm] },
  });

  return async function maybeSummarize(): Promise<void> {
    const plan = planSummary(carry.transcript, carry.summarizedUpTo, carry.summary, settings.history);
    if (plan.toSummarize.length === 0) {
      if (plan.nextSummarizedUpTo !== carry.summarizedUpTo) carry.summarizedUpTo = plan.nextSummarizedUpTo;
      return;
    }
    let summary: string;
    try {
      const result = await summarizer.summarizeConversation.executeWithOptions(
        { summary: `summarize ${plan.toSummarize.length} older messages` },
        [{ sessionId, previousSummary: carry.summary, messages: plan.toSummarize, maxChars: MAX_SUMMARY_CHARS }],
      );
      summary = result.summary.slice(0, MAX_SUMMARY_CHARS);
    } catch (err) {
      log.warn('summarizing failed; keeping an extract instead', { error: err instanceof Error ? err.message : String(err) });
      summary = fallbackSummary(carry.summary, plan.toSummarize, MAX_SUMMARY_CHARS);
    }
    carry.summary = summary;
    carry.summarizedUpTo = plan.nextSummarizedUpTo;
  };
}
