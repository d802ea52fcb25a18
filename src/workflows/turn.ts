import {
  ActivityFailure,
  ApplicationFailure,
  CancelledFailure,
  condition,
  isCancellation,
  log,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities, AuditRequest } from '../activities';
import { buildInitialMessages, planToolCalls, toLlmTools, truncate, type PlannedCall } from '../core/host-loop';
import { canApprove, decideTool, filterCatalog } from '../core/policy';
import { toolCallIdempotencyKey } from '../shared/ids';
import type { Catalog, ToolOutcome } from '../shared/tool-types';
import { DEFAULT_ACTIVITY_TIMEOUTS } from '../shared/turn';
import type {
  ChatMessage,
  PendingApproval,
  RetryProfile,
  ToolCallRecord,
  TurnError,
  TurnEvent,
  TurnEventType,
  TurnInput,
  TurnState,
} from '../shared/turn';
import { Failure, failureTypeOf, type FailureType, NON_RETRYABLE } from '../shared/failures';
import { approveToolCallUpdate, beginTurnSignal, turnStateQuery } from './definitions';

/** How much of a tool result the turn record keeps (the LLM gets up to maxToolResultChars). */
const RECORD_RESULT_CHARS = 2_000;

function retry(profile: RetryProfile, nonRetryableErrorTypes: readonly string[]) {
  return {
    maximumAttempts: profile.maximumAttempts,
    initialInterval: profile.initialIntervalMs,
    maximumInterval: profile.maximumIntervalMs,
    backoffCoefficient: 2,
    nonRetryableErrorTypes: [...nonRetryableErrorTypes],
  };
}

/**
 * One user request: gather context, then loop LLM → tool calls → results → LLM until the model
 * answers in text or the step limit is reached. All I/O happens in activities.
 */
export async function turnWorkflow(input: TurnInput): Promise<TurnState> {
  const { options } = input;
  const wf = workflowInfo();

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

  // Audit appends must not be lost, but they are cheap and idempotent enough to retry freely.
  const audit = proxyActivities<Activities>({
    startToCloseTimeout: '15 seconds',
    retry: { maximumAttempts: 10, initialInterval: '200 milliseconds', maximumInterval: '5 seconds' },
  });
  const user = input.user;
  const policy = input.policy;

  const state: TurnState = {
    turnId: input.turnId,
    sessionId: input.sessionId,
    ...(user ? { owner: { id: user.id, tenant: user.tenant } } : {}),
    status: 'running',
    toolCalls: [],
    events: [],
    steps: 0,
  };
  const emit = (type: TurnEventType, data: Record<string, unknown>): void => {
    const event: TurnEvent = { id: state.events.length + 1, type, at: new Date().toISOString(), data };
    state.events.push(event);
  };
  setHandler(turnStateQuery, (afterEventId?: number) => ({
    ...state,
    events: afterEventId ? state.events.filter((e) => e.id > afterEventId) : state.events,
  }));

  // Durable human approval: a decision arrives as an update; the wait is a durable timer, so it
  // survives worker restarts. The validator refuses unknown, decided or unauthorized decisions
  // before anything is written to history.
  const decisions = new Map<string, { approve: boolean; by: string }>();
  const approvals: PendingApproval[] = [];
  setHandler(
    approveToolCallUpdate,
    ({ toolCallId, approve, approver }) => {
      decisions.set(toolCallId, { approve, by: approver.id });
      return { toolCallId, decision: approve ? ('approved' as const) : ('rejected' as const) };
    },
    {
      validator: ({ toolCallId, approver }) => {
        const pending = approvals.find((a) => a.toolCallId === toolCallId);
        if (!pending) throw rejection(Failure.ApprovalNotPending, 'no pending approval with that tool call id');
        if (pending.state !== 'pending' || decisions.has(toolCallId)) {
          throw rejection(Failure.ApprovalAlreadyDecided, 'that tool call was already decided');
        }
        if (!user || !policy || approver.tenant !== user.tenant || !canApprove(policy, approver, user.id)) {
          throw rejection(Failure.ApprovalForbidden, 'not allowed to decide approvals of this turn');
        }
      },
    },
  );

  const fail = (error: TurnError): never => {
    state.status = 'failed';
    state.error = error;
    emit('error', { ...error });
    throw ApplicationFailure.create({
      type: Failure.TurnFailed,
      message: error.message,
      nonRetryable: true,
      details: [state],
    });
  };

  // A turn of a session waits for its parent's go (the previous turn finished) and gets the
  // conversation so far with it; a standalone turn carries its history in the input.
  let begin: { history: ChatMessage[] } | undefined;
  if (input.queued) setHandler(beginTurnSignal, (b) => void (begin ??= b));

  try {
    if (input.queued) {
      emit('status', { status: 'running', phase: 'queued' });
      await condition(() => begin !== undefined);
    }
    const history = begin?.history ?? input.history;
    emit('status', { status: 'running', phase: 'gathering_context' });
    // The catalog is an in-memory read in the worker: a local activity saves a server round trip and
    // a workflow task before the first LLM call. Turns recorded before this change replay as before.
    const listCatalog = patched('catalog-as-local-activity')
      ? localDiscovery.listCatalog()
      : discovery.listCatalog.executeWithOptions({ summary: 'list tools of all MCP servers' }, []);
    const [catalog, context] = await Promise.all([
      listCatalog.catch(
        (err: unknown): Catalog => {
          log.warn('tool catalog unavailable', { error: describeFailure(err) });
          emit('notice', { code: 'tools_unavailable', message: 'Tools are unavailable for this turn.' });
          return { tools: [], servers: [] };
        },
      ),
      options.context.resources.length + options.context.prompts.length > 0
        ? discovery.gatherContext.executeWithOptions({ summary: 'read context resources and prompts' }, [options.context, user])
        : Promise.resolve({ pieces: [], failures: [] }),
    ]);
    for (const f of context.failures) {
      emit('notice', { code: 'context_unavailable', message: `Could not read ${f.ref} from ${f.server}: ${f.error}` });
    }
    const unavailable = catalog.servers.filter((s: Catalog['servers'][number]) => s.state === 'unavailable');
    for (const s of unavailable) {
      emit('notice', { code: 'server_unavailable', server: s.server, message: `Server ${s.server} is unavailable.` });
    }

    // The model only ever sees the tools the caller may use.
    const visibleTools = user && policy ? filterCatalog(policy, user, catalog.tools) : catalog.tools;
    const llmTools = toLlmTools(visibleTools);
    const messages: ChatMessage[] = buildInitialMessages({
      systemPrompt: options.systemPrompt,
      context: context.pieces,
      unavailableServers: unavailable,
      history,
      userText: input.userText,
    });

    let finalText: string | undefined;
    while (finalText === undefined) {
      state.steps += 1;
      const step = state.steps;
      // Past the step limit the model gets no tools, which forces a text answer.
      const offerTools = step <= options.maxSteps;
      emit('status', { status: 'running', phase: 'calling_llm', step });
      let response;
      try {
        response = await llm.callLlm.executeWithOptions({ summary: `LLM step ${step}` }, [
          { turnId: input.turnId, step, messages, tools: offerTools ? llmTools : [] },
        ]);
      } catch (err) {
        if (isCancellation(err)) throw err;
        return fail(llmError(err));
      }
      if (response.toolCalls.length === 0 || !offerTools) {
        finalText = response.text ?? '';
        if (response.toolCalls.length > 0) {
          finalText ||= `I stopped after ${options.maxSteps} tool steps without reaching an answer.`;
        }
        break;
      }

      messages.push({ role: 'assistant', content: response.text, toolCalls: response.toolCalls });
      const planned = planToolCalls(response.toolCalls, catalog.tools, visibleTools);
      emit('status', { status: 'running', phase: 'calling_tools', step, count: planned.length });
      // Independent calls of one step run in parallel; results go back in the model's order.
      const outcomes = await Promise.all(planned.map((p) => runToolCall(p, step)));
      planned.forEach((p, i) => {
        const outcome = outcomes[i] as ToolOutcome;
        const content = outcome.isError ? `Error: ${outcome.text}` : outcome.text;
        messages.push({ role: 'tool', toolCallId: p.call.id, content: truncate(content, options.maxToolResultChars) });
      });
    }

    state.status = 'completed';
    state.text = finalText;
    emit('text', { text: finalText });
    emit('done', { status: 'completed' });
    return state;
  } catch (err) {
    // A cancelled turn stops where it is: the LLM request is aborted, an MCP call in flight is
    // cancelled (the server gets notifications/cancelled), no further tool call starts.
    if (!isCancellation(err)) throw err;
    state.status = 'cancelled';
    for (const a of approvals) if (a.state === 'pending') a.state = 'rejected';
    emit('cancelled', { status: 'cancelled' });
    throw new CancelledFailure('The turn was cancelled.', [state]);
  }

  async function recordAudit(entry: Omit<AuditRequest, 'actor' | 'workflowId' | 'runId'>): Promise<void> {
    if (!user) return;
    await audit.recordAudit.executeWithOptions({ summary: `audit: ${entry.kind} ${entry.server ?? ''}/${entry.tool ?? ''}` }, [
      { ...entry, actor: { id: user.id, role: user.role, tenant: user.tenant }, workflowId: wf.workflowId, runId: wf.runId },
    ]);
  }

  /** Pauses this call until the owner (or an approver) decides, or the policy's timeout denies it. */
  async function approved(p: Extract<PlannedCall, { kind: 'call' }>, step: number): Promise<boolean> {
    const pending: PendingApproval = {
      toolCallId: p.call.id,
      name: p.tool.name,
      server: p.tool.server,
      tool: p.tool.tool,
      arguments: p.arguments,
      state: 'pending',
    };
    approvals.push(pending);
    state.approvals = approvals;
    state.status = 'awaiting_approval';
    emit('approval_required', { toolCallId: p.call.id, name: p.tool.name, server: p.tool.server, tool: p.tool.tool, arguments: p.arguments, step });
    await recordAudit({ kind: 'approval_requested', server: p.tool.server, tool: p.tool.tool, args: p.arguments, toolCallId: p.call.id });
    const timeoutMs = policy?.approval?.timeoutMs ?? 300_000;
    const decided = await condition(() => decisions.has(p.call.id), timeoutMs);
    const d = decisions.get(p.call.id);
    pending.state = !decided || !d ? 'timed_out' : d.approve ? 'approved' : 'rejected';
    if (d) pending.decidedBy = d.by;
    if (!approvals.some((a) => a.state === 'pending')) state.status = 'running';
    emit('approval_decided', { toolCallId: p.call.id, decision: pending.state, ...(d ? { by: d.by } : {}) });
    await recordAudit({
      kind: 'approval_decision',
      server: p.tool.server,
      tool: p.tool.tool,
      toolCallId: p.call.id,
      outcome: pending.state === 'approved' ? 'approved' : pending.state === 'rejected' ? 'rejected' : 'timed_out',
      ...(d ? { detail: `decided by ${d.by}` } : {}),
    });
    return pending.state === 'approved';
  }

  async function runToolCall(p: PlannedCall, step: number): Promise<ToolOutcome> {
    const record: ToolCallRecord = {
      id: p.call.id,
      step,
      name: p.call.name,
      server: p.tool?.server,
      tool: p.tool?.tool,
      arguments: p.arguments,
      state: 'running',
      startedAt: new Date().toISOString(),
    };
    state.toolCalls.push(record);
    emit('tool_call_started', { toolCallId: record.id, name: record.name, server: record.server, tool: record.tool, arguments: record.arguments });

    let outcome: ToolOutcome;
    // Checked again here, whatever the model was shown: a prompt-injected model asking for a hidden
    // or forbidden tool gets a denial as its tool result, and the denial is audited.
    const decision = p.kind === 'call' && user && policy ? decideTool(policy, user, p.tool.server, p.tool.tool) : undefined;
    if (p.kind === 'reject') {
      outcome = { isError: true, text: p.reason };
    } else if (decision && !decision.allowed) {
      outcome = { isError: true, text: `Denied by policy: ${decision.reason}` };
      await recordAudit({ kind: 'denial', server: p.tool.server, tool: p.tool.tool, args: p.arguments, outcome: 'denied', detail: decision.reason, toolCallId: p.call.id });
    } else if (decision?.needsApproval && !(await approved(p, step))) {
      const a = approvals.find((x) => x.toolCallId === p.call.id);
      outcome = {
        isError: true,
        text: a?.state === 'timed_out' ? 'The user did not approve this action in time; it was not performed.' : 'The user rejected this action; it was not performed.',
      };
    } else {
      try {
        outcome = await tools.callTool.executeWithOptions({ summary: `${p.tool.server}: ${p.tool.tool}` }, [
          {
            turnId: input.turnId,
            server: p.tool.server,
            tool: p.tool.tool,
            llmName: p.tool.name,
            arguments: p.arguments,
            idempotencyKey: toolCallIdempotencyKey(wf.workflowId, step, p.call.id),
            ...(user ? { user } : {}),
            ...(input.sealedToken ? { sealedToken: input.sealedToken } : {}),
            toolCallId: p.call.id,
          },
        ]);
      } catch (err) {
        if (isCancellation(err)) throw err;
        // Retries are exhausted or the failure is permanent: the model hears about it and carries on.
        outcome = { isError: true, text: `The ${p.tool.server} server could not run ${p.tool.tool}: ${describeFailure(err)}` };
      }
    }
    record.state = outcome.isError ? 'failed' : 'completed';
    record.isError = outcome.isError;
    record.result = truncate(outcome.text, RECORD_RESULT_CHARS);
    record.finishedAt = new Date().toISOString();
    emit('tool_call_finished', { toolCallId: record.id, name: record.name, isError: outcome.isError, result: record.result });
    return outcome;
  }
}

function llmError(err: unknown): TurnError {
  if (failureTypeOf(err) === Failure.LlmRequestRejected) {
    return { code: 'llm_rejected', message: `The language model rejected the request: ${describeFailure(err)}` };
  }
  return { code: 'llm_unavailable', message: `The language model is unavailable: ${describeFailure(err)}` };
}

/** The innermost meaningful message of an activity failure, for users and the model. */
function describeFailure(err: unknown): string {
  let current: unknown = err;
  while (current instanceof ActivityFailure && current.cause) current = current.cause;
  if (current instanceof Error) return current.message;
  return String(current);
}

/** An update validator's refusal: typed, so the API decides on the type, never on the wording. */
function rejection(type: FailureType, message: string): ApplicationFailure {
  return ApplicationFailure.create({ type, message, nonRetryable: true });
}
