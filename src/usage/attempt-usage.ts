/**
 * Each attempt of a model call is recorded by its activity, once, before the activity ends: a turn's
 * LLM step (kind `llm`) and a session summarizing its older messages (kind `summary`), answered or
 * failed (what the stream reported before it broke), so retried and failed attempts count against the
 * budgets and show in the report (docs/decisions/0029-usage-exact.md).
 *
 * The key is the activity attempt (workflow run, activity id, attempt): a worker that records it and
 * dies before the activity completes leaves a record the next attempt never writes again, and the
 * ledger keeps the first copy of a key. The owner is the one the request names (a turn's steps carry
 * their caller and session), else it comes from the workflow's search attributes (UserId, TenantId,
 * SessionId), which the API sets when it starts a turn or a session: one describe per workflow,
 * remembered for the workflow's next steps (steps recorded before requests named their owner, and
 * summaries).
 */
import type { Client } from '@temporalio/client';
import type { defineSearchAttributeKey } from '@temporalio/common';
import type { UsageLedger } from './ledger';

export interface TokenUsage {
  promptTokens: number;
  completionTokens: number;
}

/** The activity attempt that called the model. */
export interface AttemptRef {
  workflowId: string;
  runId: string;
  activityId: string;
  attempt: number;
}

export interface AttemptUsage extends AttemptRef {
  kind: 'llm' | 'summary';
  /** The session the summary is of; a turn's is read with its owner. */
  sessionId?: string;
  /** Whom to charge, when the request says (no describe then). */
  owner?: WorkflowOwner;
  /** The provider and model that ran (priced by the report). */
  provider: string;
  model: string;
  usage: TokenUsage;
}

export interface WorkflowOwner {
  id: string;
  tenant: string;
  sessionId?: string;
}

export interface AttemptUsageRecorder {
  /**
   * Writes the attempt's record (idempotent by key). False when the workflow has no owner to charge
   * (started without the API's search attributes: nothing to budget). Throws when the ledger fails.
   */
  record(a: AttemptUsage): Promise<boolean>;
  /** What the earlier attempts of this activity recorded (a retried step's spent tokens), summed. */
  earlier(a: AttemptRef & { kind: AttemptUsage['kind'] }): Promise<TokenUsage>;
}

type Keyword = ReturnType<typeof defineSearchAttributeKey<'KEYWORD'>>;

/**
 * The owner of a workflow, from the search attributes the API started it with (their keys are the
 * workflows' definitions, which this ring may not import: the worker hands them in).
 */
export function workflowOwnerFrom(
  client: Pick<Client, 'workflow'>,
  keys: { user: Keyword; tenant: Keyword; session: Keyword },
): (workflowId: string) => Promise<WorkflowOwner | undefined> {
  return async (workflowId) => {
    const { typedSearchAttributes } = await client.workflow.getHandle(workflowId).describe();
    const id = typedSearchAttributes.get(keys.user);
    const tenant = typedSearchAttributes.get(keys.tenant);
    const sessionId = typedSearchAttributes.get(keys.session);
    return id && tenant ? { id, tenant, ...(sessionId ? { sessionId } : {}) } : undefined;
  };
}

/** The record key of an attempt (summaries kept the form they had before turns were recorded per attempt). */
export const attemptKey = (kind: AttemptUsage['kind'], a: AttemptRef): string => `${kind}/${a.workflowId}/${a.runId}/${a.activityId}/${a.attempt}`;

/** Earlier attempts looked up for a retried step: the last ones, should a policy allow more. */
const EARLIER_LIMIT = 100;
/** Owners remembered (a turn asks the model several times; its owner does not change). */
const OWNER_CACHE = 1_000;
/** Tries of a ledger write before the error is the caller's (a database failover takes a moment). */
const WRITE_TRIES = 3;

export function createAttemptUsageRecorder(deps: {
  ledger: Pick<UsageLedger, 'record' | 'get'>;
  ownerOf: (workflowId: string) => Promise<WorkflowOwner | undefined>;
  /** Between write tries; default 200 ms, then twice that. */
  backoffMs?: number;
}): AttemptUsageRecorder {
  const owners = new Map<string, WorkflowOwner | undefined>();
  const ownerOf = async (workflowId: string): Promise<WorkflowOwner | undefined> => {
    if (owners.has(workflowId)) return owners.get(workflowId);
    const owner = await deps.ownerOf(workflowId);
    if (owners.size >= OWNER_CACHE) owners.delete(owners.keys().next().value as string);
    owners.set(workflowId, owner);
    return owner;
  };
  const backoff = deps.backoffMs ?? 200;

  return {
    async record(a) {
      const owner = a.owner ?? (await ownerOf(a.workflowId));
      if (!owner) return false;
      const sessionId = a.sessionId ?? owner.sessionId ?? '';
      const record = {
        turnId: attemptKey(a.kind, a),
        kind: a.kind,
        // A turn's workflow id is the turn's id.
        ...(a.kind === 'llm' ? { turn: a.workflowId } : {}),
        sessionId,
        tenant: owner.tenant,
        userId: owner.id,
        provider: a.provider,
        model: a.model,
        promptTokens: a.usage.promptTokens,
        completionTokens: a.usage.completionTokens,
        samplingTokens: 0,
        at: new Date().toISOString(),
      };
      for (let tried = 1; ; tried++) {
        try {
          await deps.ledger.record(record);
          return true;
        } catch (err) {
          if (tried >= WRITE_TRIES) throw err;
          await new Promise((r) => setTimeout(r, backoff * 2 ** (tried - 1)));
        }
      }
    },
    async earlier(a) {
      const first = Math.max(1, a.attempt - EARLIER_LIMIT);
      const keys = Array.from({ length: a.attempt - first }, (_, i) => attemptKey(a.kind, { ...a, attempt: first + i }));
      const records = await deps.ledger.get(keys);
      return records.reduce((sum, r) => ({ promptTokens: sum.promptTokens + r.promptTokens, completionTokens: sum.completionTokens + r.completionTokens }), {
        promptTokens: 0,
        completionTokens: 0,
      });
    },
  };
}
