/**
 * A model call attempt's tokens, from the activity that made it: counted in the worker's metrics and
 * written to the usage ledger (src/usage/attempt-usage.ts) before the attempt ends, whether the model
 * answered or the stream broke after reporting some. A ledger that fails costs the record (logged),
 * never the answer: the turn's view still has the tokens.
 */
import { Context } from '@temporalio/activity';
import type { LlmClient } from '../llm/client';
import type { LlmRequest, LlmResponse } from '../shared/turn';
import type { AttemptUsage, TokenUsage, WorkflowOwner } from '../usage/attempt-usage';
import type { ActivityDeps } from './deps';

type Usage = NonNullable<LlmResponse['usage']>;

/** Earlier attempts' tokens added to an answer's (cache figures only when either had them). */
function plus(own: Usage | undefined, earlier: TokenUsage): Usage {
  return {
    ...own,
    promptTokens: (own?.promptTokens ?? 0) + earlier.promptTokens,
    completionTokens: (own?.completionTokens ?? 0) + earlier.completionTokens,
  };
}

export function attemptUsage(deps: Pick<ActivityDeps, 'usage' | 'metrics' | 'logger'>) {
  /** The current activity attempt, when it runs in a workflow (a test's mock may have none). */
  const current = () => {
    const { workflowExecution, activityId, attempt } = Context.current().info;
    return workflowExecution ? { workflowId: workflowExecution.workflowId, runId: workflowExecution.runId, activityId, attempt } : undefined;
  };

  /** `subject`: the turn or session, for the log line should the ledger fail; `owner`: whom to charge, if the request says. */
  async function write(kind: AttemptUsage['kind'], llm: LlmClient, usage: Usage, subject: string, owner?: WorkflowOwner): Promise<void> {
    deps.metrics?.llmTokens(usage, kind === 'llm' ? 'turn' : 'summary', { provider: llm.provider, model: llm.model });
    const ref = current();
    if (!deps.usage || !ref) return;
    try {
      const sessionId = kind === 'summary' ? { sessionId: subject } : {};
      await deps.usage.record({ ...ref, kind, ...sessionId, ...(owner ? { owner } : {}), provider: llm.provider, model: llm.model, usage: { promptTokens: usage.promptTokens, completionTokens: usage.completionTokens } });
    } catch (err) {
      deps.logger.error({ kind, subject, attempt: ref.attempt, err: err instanceof Error ? err.message : String(err) }, 'recording the token usage of a model call failed');
    }
  }

  return {
    /**
     * An answered attempt: recorded, then (for a turn's step that was retried) the answer's usage
     * made the step's, the earlier attempts' recorded tokens added.
     */
    async answered(
      kind: AttemptUsage['kind'],
      llm: LlmClient,
      response: LlmResponse,
      subject: string,
      opts: { withEarlier?: boolean; owner?: WorkflowOwner | undefined } = {},
    ): Promise<LlmResponse> {
      if (response.usage) await write(kind, llm, response.usage, subject, opts.owner);
      const ref = current();
      if (opts.withEarlier === false || !deps.usage || !ref || ref.attempt <= 1) return response;
      try {
        const earlier = await deps.usage.earlier({ ...ref, kind });
        return earlier.promptTokens + earlier.completionTokens > 0 ? { ...response, usage: plus(response.usage, earlier) } : response;
      } catch (err) {
        deps.logger.error({ kind, subject, attempt: ref.attempt, err: err instanceof Error ? err.message : String(err) }, "reading the earlier attempts' token usage failed");
        return response;
      }
    },
    /** A failed attempt: what its stream reported before it broke, if anything. */
    async failed(kind: AttemptUsage['kind'], llm: LlmClient, reported: Usage | undefined, subject: string, owner?: WorkflowOwner): Promise<void> {
      if (reported) await write(kind, llm, reported, subject, owner);
    },
  };
}

/** Whom a turn's step charges, when its request names the caller and session (steps recorded before it do not). */
export function ownerOf(req: LlmRequest): WorkflowOwner | undefined {
  const c = req.caller;
  return c?.sessionId !== undefined ? { id: c.id, tenant: c.tenant, sessionId: c.sessionId } : undefined;
}
