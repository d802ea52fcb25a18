import { retryingToolMessage, retryNotice } from '../../src/activities/retry-notice';

/** The notice an LLM attempt's failure sends: the next attempt and when, from the activity's own retry policy. */
const reason = 'The model call failed: HTTP 503 from http://llm.local/v1';

test('the policy backoff says when; the last attempt says nothing (no retry follows)', () => {
  const policy = { maximumAttempts: 4, initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '5 seconds' } as const;
  expect(retryNotice({ attempt: 1, policy, reason })).toEqual({
    nextAttempt: 2,
    inMs: 1_000,
    message: `${reason}. Retrying in about 1 s (attempt 2 of 4).`,
  });
  expect(retryNotice({ attempt: 2, policy, reason })?.inMs).toBe(2_000);
  expect(retryNotice({ attempt: 3, policy, reason })?.message).toBe(`${reason}. Retrying in about 4 s (attempt 4 of 4).`);
  expect(retryNotice({ attempt: 4, policy, reason })).toBeUndefined();
  // Capped by maximumInterval.
  expect(retryNotice({ attempt: 3, policy: { ...policy, maximumAttempts: 10 }, reason })?.inMs).toBe(4_000);
  expect(retryNotice({ attempt: 5, policy: { ...policy, maximumAttempts: 10 }, reason })?.inMs).toBe(5_000);
});

test("the endpoint's Retry-After wins; an unlimited policy names no total", () => {
  expect(retryNotice({ attempt: 1, policy: { initialInterval: 100 }, retryAfterMs: 7_000, reason })).toEqual({
    nextAttempt: 2,
    inMs: 7_000,
    message: `${reason}. Retrying in about 7 s (attempt 2).`,
  });
  expect(retryNotice({ attempt: 1, policy: { initialInterval: 100 }, reason })?.message).toBe(`${reason}. Retrying in under a second (attempt 2).`);
});

test("a tool call's next attempt says it runs on another worker only when the last heartbeat came from one", () => {
  expect(retryingToolMessage('payments__process_payment', 2, '11@a', '12@b')).toBe('retrying payments__process_payment on another worker (attempt 2)');
  expect(retryingToolMessage('payments__process_payment', 3, '12@b', '12@b')).toBe('retrying payments__process_payment (attempt 3)');
  // No heartbeat reached the server before the attempt ended: where it ran is not known.
  expect(retryingToolMessage('payments__process_payment', 2, undefined, '12@b')).toBe('retrying payments__process_payment (attempt 2)');
});
