/**
 * What a client streaming a turn is told when an LLM attempt fails and Temporal will try again: which
 * endpoint failed and why (already scrubbed by classifyLlmError), which attempt comes next and about
 * when, from the activity's own retry policy. No notice when no attempt is left.
 */
import type { RetryPolicy } from '@temporalio/common';
import { msOptionalToNumber } from '@temporalio/common/lib/time';

export interface RetryNotice {
  /** The attempt that will run next (1-based). */
  nextAttempt: number;
  /** About when it starts, in ms from now (the policy's backoff, or the endpoint's Retry-After). */
  inMs: number;
  message: string;
}

/** Temporal's defaults for a retry policy's unset fields. */
const DEFAULTS = { initialIntervalMs: 1_000, backoffCoefficient: 2 };

export function retryNotice(opts: { attempt: number; policy?: RetryPolicy; retryAfterMs?: number; reason: string }): RetryNotice | undefined {
  const max = opts.policy?.maximumAttempts ?? 0; // 0: unlimited
  if (max > 0 && opts.attempt >= max) return undefined;
  const initial = msOptionalToNumber(opts.policy?.initialInterval) ?? DEFAULTS.initialIntervalMs;
  const coefficient = opts.policy?.backoffCoefficient ?? DEFAULTS.backoffCoefficient;
  const cap = msOptionalToNumber(opts.policy?.maximumInterval) ?? initial * 100;
  const inMs = opts.retryAfterMs ?? Math.min(initial * coefficient ** (opts.attempt - 1), cap);
  const nextAttempt = opts.attempt + 1;
  const seconds = inMs < 1_000 ? 'under a second' : `about ${Math.round(inMs / 1_000)} s`;
  return {
    nextAttempt,
    inMs,
    message: `${opts.reason}. Retrying in ${seconds} (attempt ${nextAttempt}${max > 0 ? ` of ${max}` : ''}).`,
  };
}

/**
 * What a client streaming a turn is told when a tool call's attempt after the first starts: on another
 * worker when the attempt before beat from a different one (that worker stopped answering), otherwise
 * simply again.
 */
export function retryingToolMessage(tool: string, attempt: number, previousWorker: string | undefined, thisWorker: string): string {
  const where = previousWorker !== undefined && previousWorker !== thisWorker ? ' on another worker' : '';
  return `retrying ${tool}${where} (attempt ${attempt})`;
}
