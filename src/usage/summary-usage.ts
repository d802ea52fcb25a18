/**
 * A session summarizing its older messages calls the model outside any turn: those tokens are
 * recorded here, against the session's owner and tenant, so the usage report and the daily budgets
 * see them beside the turns'.
 *
 * The summarizing activity knows only the session id; the owner comes from the session workflow's
 * search attributes (UserId, TenantId), which the API sets when it starts the session. One describe
 * per summary (a session summarizes every few turns), and no change to the workflow or its history.
 */
import type { Client } from '@temporalio/client';
import type { defineSearchAttributeKey } from '@temporalio/common';
import type { UsageLedger } from './ledger';

export interface SummaryUsage {
  sessionId: string;
  /** The session workflow run and the activity attempt that summarized: together, the record's key. */
  workflowId: string;
  runId: string;
  activityId: string;
  attempt: number;
  usage: { promptTokens: number; completionTokens: number };
}

export interface SessionOwner {
  id: string;
  tenant: string;
}

type Keyword = ReturnType<typeof defineSearchAttributeKey<'KEYWORD'>>;

/**
 * The owner of a session workflow, from the search attributes the API started it with (their keys
 * are the workflows' definitions, which this ring may not import: the worker hands them in).
 */
export function sessionOwnerFrom(
  client: Pick<Client, 'workflow'>,
  keys: { user: Keyword; tenant: Keyword },
): (workflowId: string) => Promise<SessionOwner | undefined> {
  return async (workflowId) => {
    const { typedSearchAttributes } = await client.workflow.getHandle(workflowId).describe();
    const id = typedSearchAttributes.get(keys.user);
    const tenant = typedSearchAttributes.get(keys.tenant);
    return id && tenant ? { id, tenant } : undefined;
  };
}

export function createSummaryUsageRecorder(deps: {
  ledger: Pick<UsageLedger, 'record'>;
  ownerOf: (workflowId: string) => Promise<SessionOwner | undefined>;
  /** The model the worker calls (LLM_MODEL), priced like the turns'. */
  model: string;
}): (s: SummaryUsage) => Promise<void> {
  return async (s) => {
    const owner = await deps.ownerOf(s.workflowId);
    if (!owner) throw new Error(`session workflow ${s.workflowId} has no UserId and TenantId search attributes`);
    await deps.ledger.record({
      // Per attempt: an attempt that got an answer spent its tokens, even if a later one summarized.
      turnId: `summary/${s.workflowId}/${s.runId}/${s.activityId}/${s.attempt}`,
      kind: 'summary',
      sessionId: s.sessionId,
      tenant: owner.tenant,
      userId: owner.id,
      model: deps.model,
      promptTokens: s.usage.promptTokens,
      completionTokens: s.usage.completionTokens,
      samplingTokens: 0,
      at: new Date().toISOString(),
    });
  };
}
