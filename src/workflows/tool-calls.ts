/**
 * One tool call of a turn, from the model's request to the result it hears back: the policy's check
 * (again, whatever the model was shown), the approval wait, the activity (regular, or local for a
 * read-only tool), and what a failure means: a question for the user or a consent to wait for (then
 * the call is issued again), an outcome nobody can know, or an error the model is told about.
 */
import { isCancellation, patched, type ActivityInterfaceFor, type LocalActivityInterfaceFor } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { PlannedCall } from '../core/host-loop';
import { isResourceTool, readableResources, resourceReadNotice } from '../core/adaptive-context';
import { decideTool } from '../core/policy';
import type { TurnRecord } from '../core/turn-record';
import type { AuditRequest } from '../shared/audit';
import { Failure, failureTypeOf } from '../shared/failures';
import { toolCallIdempotencyKey } from '../shared/ids';
import type { Policy } from '../shared/policy';
import type { ToolOutcome } from '../shared/tool-types';
import type { TurnInput } from '../shared/turn';
import type { ElicitationAnswer, SamplingAllowance } from '../shared/user-input';
import type { UserContext } from '../shared/user';
import { describeFailure } from './activity-failures';
import type { handleApprovals } from './approvals';
import { authorizationNeeded, type handleAuthorizations } from './authorizations';
import { inputAsked, type handleInputs } from './inputs';

/** Consents one call may wait for: a server that keeps asking after the user agreed is not waited for forever. */
const MAX_AUTHORIZATION_ROUNDS = 2;

/** Questions one tool call may ask the user before its next question fails the call. */
const MAX_QUESTIONS_PER_CALL = 5;

type AuditEntry = Omit<AuditRequest, 'actor' | 'workflowId' | 'runId'>;

export interface ToolCallDeps {
  input: Pick<TurnInput, 'turnId' | 'sealedToken'> & { options: Pick<TurnInput['options'], 'maxToolResultChars'> };
  workflowId: string;
  user: UserContext | undefined;
  policy: Policy | undefined;
  record: TurnRecord;
  approvals: ReturnType<typeof handleApprovals>;
  authorizations: ReturnType<typeof handleAuthorizations>;
  inputs: ReturnType<typeof handleInputs>;
  recordAudit(entry: AuditEntry): Promise<void>;
  /** Tool calls as regular activities (heartbeats, the tool profile's timeouts and retries). */
  tools: ActivityInterfaceFor<Activities>;
  /** Read-only tools as local activities. */
  readOnlyTools: LocalActivityInterfaceFor<Activities>;
}

export function createToolCalls(deps: ToolCallDeps) {
  const { input, user, policy, record } = deps;
  /** Tokens left for servers' sampling requests in this turn (policy.sampling); absent: none allowed. */
  let samplingLeft = policy?.sampling?.maxTokensPerTurn;

  /** What this server may ask of the model during a call, when the policy lets it sample at all. */
  function samplingAllowance(server: string): { sampling: SamplingAllowance } | undefined {
    const rule = policy?.sampling;
    if (!rule || samplingLeft === undefined || !(rule.servers.includes('*') || rule.servers.includes(server))) return undefined;
    return { sampling: { maxTokens: rule.maxTokensPerRequest, budgetTokens: Math.max(0, samplingLeft), ...(rule.approval ? { approval: true } : {}) } };
  }

  /** A rejection, a denial, a refused approval or the tool's own result: what the model hears back. */
  async function toolOutcome(p: PlannedCall, step: number, local: boolean): Promise<ToolOutcome> {
    if (p.kind === 'reject') return { isError: true, text: p.reason };
    // Checked again here, whatever the model was shown: a prompt-injected model asking for a hidden
    // or forbidden tool gets a denial as its tool result, and the denial is audited.
    const decision = user && policy ? decideTool(policy, user, p.tool.server, p.tool.tool) : undefined;
    if (decision && !decision.allowed) {
      await deps.recordAudit({ kind: 'denial', server: p.tool.server, tool: p.tool.tool, args: p.arguments, outcome: 'denied', detail: decision.reason, toolCallId: p.call.id });
      return { isError: true, text: `Denied by policy: ${decision.reason}` };
    }
    if (decision?.needsApproval) {
      const approval = await deps.approvals.wait(p, step);
      if (approval === 'timed_out') return { isError: true, text: 'The user did not approve this action in time; it was not performed.' };
      if (approval !== 'approved') return { isError: true, text: 'The user rejected this action; it was not performed.' };
    }
    const request = {
      turnId: input.turnId,
      server: p.tool.server,
      tool: p.tool.tool,
      llmName: p.tool.name,
      arguments: p.arguments,
      idempotencyKey: toolCallIdempotencyKey(deps.workflowId, step, p.call.id),
      ...(user ? { user } : {}),
      ...(input.sealedToken ? { sealedToken: input.sealedToken } : {}),
      toolCallId: p.call.id,
      ...(samplingAllowance(p.tool.server) ?? {}),
      // Cut in the activity to what the model will see, so no more than that enters the history.
      maxResultChars: input.options.maxToolResultChars,
      // The host's resource tools reach only what the caller's policy lets it read (decision 0036).
      ...(user && policy && isResourceTool(p.tool.server, p.tool.tool) ? { readable: readableResources(policy, user) } : {}),
    };
    /** The user's answers to the server's questions, handed back when the call is issued again. */
    const answers: ElicitationAnswer[] = [];
    let consents = 0;
    // While it runs, the call's activity may hold a server's question open for the user (inputs.ts).
    deps.inputs.running(p, step);
    try {
      return await issue(p, step, local, request, answers, () => consents++ < MAX_AUTHORIZATION_ROUNDS);
    } finally {
      await deps.inputs.ended(p);
    }
  }

  /** Issues the call, again after each question answered or consent given; what the model hears back. */
  async function issue(
    p: Extract<PlannedCall, { kind: 'call' }>,
    step: number,
    local: boolean,
    request: Parameters<Activities['callTool']>[0],
    answers: ElicitationAnswer[],
    mayWaitForConsent: () => boolean,
  ): Promise<ToolOutcome> {
    for (;;) {
      const seen = deps.authorizations.seen(p.tool.server);
      try {
        const outcome = await (p.tool.readOnly && local ? deps.readOnlyTools : deps.tools).callTool.executeWithOptions({ summary: `${p.tool.server}: ${p.tool.tool}` }, [
          answers.length > 0 ? { ...request, elicitations: [...answers] } : request,
        ]);
        if (samplingLeft !== undefined && outcome.samplingTokens) samplingLeft -= outcome.samplingTokens;
        if (outcome.samplingTokens) record.addUsage({ samplingTokens: outcome.samplingTokens });
        return outcome;
      } catch (err) {
        if (isCancellation(err)) throw err;
        // The server asked the user something: ask them (durably), then issue the call again with the
        // answers so far; the idempotency key stays the same, so a server that dedupes is safe.
        const asked = failureTypeOf(err) === Failure.McpInputRequired ? inputAsked(err) : undefined;
        if (asked && answers.length < MAX_QUESTIONS_PER_CALL && patched('elicitation-reissue')) {
          // Answers given while the call held its earlier questions come first, in the order asked.
          answers.push(...deps.inputs.takeHeld(p));
          answers.push(await deps.inputs.ask(p, step, asked));
          continue;
        }
        // The server needs the user's consent first: wait for it (durably), then try again. Turns
        // recorded before this change replay as before (they never met this failure).
        const needed = failureTypeOf(err) === Failure.McpAuthorizationRequired ? authorizationNeeded(err) : undefined;
        if (needed && mayWaitForConsent() && patched('authorization-wait')) {
          if (await deps.authorizations.wait(p, step, needed, seen)) continue;
          return { isError: true, text: `The user did not authorize this host with ${needed.server} in time; the call was not made.` };
        }
        // The request may have been applied and the call is not safe to repeat: nobody retried it, and
        // the user is told as well as the model, since only they can check what happened.
        if (failureTypeOf(err) === Failure.McpOutcomeUnknown) {
          const what = describeFailure(err);
          record.emit('notice', { code: 'tool_outcome_unknown', toolCallId: p.call.id, server: p.tool.server, tool: p.tool.tool, message: `${p.tool.server}/${p.tool.tool}: ${what}` });
          return { isError: true, text: `The ${p.tool.server} server's ${p.tool.tool}: ${what}` };
        }
        // Retries are exhausted or the failure is permanent: the model hears about it and carries on.
        return { isError: true, text: `The ${p.tool.server} server could not run ${p.tool.tool}: ${describeFailure(err)}` };
      }
    }
  }

  return {
    /** Runs one planned call of `step`, recorded and announced; `local`: a read-only tool may run as a local activity. */
    async run(p: PlannedCall, step: number, local: boolean): Promise<ToolOutcome> {
      const call = record.startToolCall({ id: p.call.id, step, name: p.call.name, server: p.tool?.server, tool: p.tool?.tool, arguments: p.arguments });
      const outcome = await toolOutcome(p, step, local);
      record.finishToolCall(call, outcome);
      // A resource the model read on demand: the trace says which, and why (decision 0036).
      const notice = p.kind === 'call' ? resourceReadNotice(p.tool, p.arguments, outcome, p.call.id) : undefined;
      if (notice) record.emit('notice', notice);
      return outcome;
    },
  };
}
