/**
 * The activities of a turn, one proxy per failure profile: discovery is cheap and quick, the LLM is
 * slow and rate limited, tool calls may run long and report progress through heartbeats; audit
 * appends and session reads are quick and repeated freely.
 */
import { proxyActivities, proxyLocalActivities, type RetryPolicy } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { NON_RETRYABLE } from '../shared/failures';
import { DEFAULT_ACTIVITY_TIMEOUTS, type RetryProfile, type TurnOptions } from '../shared/turn';

function retry(profile: RetryProfile, nonRetryableErrorTypes: readonly string[]) {
  return {
    maximumAttempts: profile.maximumAttempts,
    initialInterval: profile.initialIntervalMs,
    maximumInterval: profile.maximumIntervalMs,
    backoffCoefficient: 2,
    nonRetryableErrorTypes: [...nonRetryableErrorTypes],
  };
}

export function turnActivities(options: TurnOptions) {
  // One proxy per failure profile: discovery is cheap and quick, the LLM is slow and rate limited,
  // tool calls may run long and report progress through heartbeats.
  const discovery = proxyActivities<Activities>({
    startToCloseTimeout: '30 seconds',
    retry: { maximumAttempts: 3, initialInterval: '500 milliseconds', maximumInterval: '5 seconds' },
  });
  const localDiscovery = proxyLocalActivities<Activities>({
    startToCloseTimeout: '30 seconds',
    retry: { maximumAttempts: 3, initialInterval: '500 milliseconds', maximumInterval: '5 seconds' },
  });
  const timeouts = options.timeouts ?? DEFAULT_ACTIVITY_TIMEOUTS;
  const llm = proxyActivities<Activities>({
    startToCloseTimeout: timeouts.llmStartToCloseMs,
    heartbeatTimeout: timeouts.llmHeartbeatMs,
    retry: retry(options.llmRetry, NON_RETRYABLE.llm),
  });
  const tools = proxyActivities<Activities>({
    startToCloseTimeout: timeouts.toolStartToCloseMs,
    heartbeatTimeout: timeouts.toolHeartbeatMs,
    retry: retry(options.mcpRetry, NON_RETRYABLE.mcp),
  });
  // Read-only tools (the worker marks them in the catalog it hands the turn) run as local activities:
  // no activity task through the server, one workflow task less per step; running one again can do no
  // harm. Turns whose recorded catalog has no marks call every tool as above, so they replay as before.
  // Not beside a regular call of the same step, which would wait for them (decision 0021).
  const readOnlyTools = proxyLocalActivities<Activities>({
    startToCloseTimeout: timeouts.toolStartToCloseMs,
    retry: retry(options.mcpRetry, NON_RETRYABLE.mcp),
  });
  
  // Audit appends must not be lost, but they are cheap and idempotent enough to retry freely.
  const auditRetry: RetryPolicy = { maximumAttempts: 10, initialInterval: '200 milliseconds', maximumInterval: '5 seconds' };
  const audit = proxyActivities<Activities>({ startToCloseTimeout: '15 seconds', retry: auditRetry });
  // An append is quick and harmless to repeat: since 'audit-as-local-activity' it runs in the worker
  // running the turn, without an activity task through the server. Earlier turns replay as recorded.
  const localAudit = proxyLocalActivities<Activities>({ startToCloseTimeout: '15 seconds', retry: auditRetry });
  // Joining a session: quick reads, repeated freely.
  const sessionLink = proxyLocalActivities<Activities>({
    startToCloseTimeout: '30 seconds',
    retry: { maximumAttempts: 10, initialInterval: '200 milliseconds', maximumInterval: '5 seconds' },
  });
  return { discovery, localDiscovery, llm, tools, readOnlyTools, audit, localAudit, sessionLink };
}
