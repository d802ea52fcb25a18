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
  proxySinks,
  type RetryPolicy,
  setCurrentDetails,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import { buildInitialMessages, planToolCalls, truncate, type PlannedCall } from '../core/host-loop';
import { readOnlyCallsStayLocal } from '../core/local-calls';
import { decideTool, filterCatalog } from '../core/policy';
import { createTurnPhase } from '../core/turn-phase';
import { createTurnRecord } from '../core/turn-record';
import type { AuditRequest } from '../shared/audit';
import type { TurnEnd } from '../shared/session';
import { Failure, failureTypeOf, NON_RETRYABLE } from '../shared/failures';
import { toolCallIdempotencyKey } from '../shared/ids';
import type { CatalogRefs, ToolOutcome, ToolRef } from '../shared/tool-types';
import { DEFAULT_ACTIVITY_TIMEOUTS } from '../shared/turn';
import type { ChatMessage, ElicitationAnswer, LlmRequest, RetryProfile, SamplingAllowance, TurnError, TurnInput, TurnState } from '../shared/turn';
import { handleApprovals } from './approvals';
import { authorizationNeeded, handleAuthorizations } from './authorizations';
import { handleInputs, inputAsked } from './inputs';
import { beginTurnSignal, type MetricsSinks, type SessionSinks, type TurnEventSinks, type TurnOutcome, turnStateQuery } from './definitions';

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
  const user = input.user;
  const policy = input.policy;

  const pushedTurn = { sessionId: input.sessionId, ...(user ? { owner: { id: user.id, tenant: user.tenant } } : {}) };
  const { turnEvents } = proxySinks<TurnEventSinks>();
  // What the turn is doing, as the Temporal UI's "current details" (names only, no user data; read
  // through the metadata query: no command, no history event).
  const phase = createTurnPhase();
  const record = createTurnRecord(
    { turnId: input.turnId, ...pushedTurn },
    () => new Date().toISOString(),
    (event) => {
      // A copy of each event to the API, so streams need no query (a sink: no history, not on replay).
      turnEvents.emitted(event, pushedTurn);
      const line = phase.observe(event);
      if (line !== undefined) setCurrentDetails(line);
    },
  );
  const { state, emit } = record;
  setHandler(turnStateQuery, (afterEventId?: number) => record.view(afterEventId));
  const approvals = handleApprovals(record, user, policy, recordAudit);
  const authorizations = handleAuthorizations(record);
  const inputs = handleInputs(record, user, policy, recordAudit);
  /** Tokens left for servers' sampling requests in this turn (policy.sampling); absent: none allowed. */
  let samplingLeft = policy?.sampling?.maxTokensPerTurn;

  const { metrics } = proxySinks<MetricsSinks>();
  // The SDK logger (pino in the worker) adds the workflow id, and ./log-context.ts the turn, session and
  // user ids (with tracing, the trace id too); not logged on replay.
  log.info('turn started', { sessionId: input.sessionId, ...(user ? { userId: user.id } : {}), ...(input.directCall ? { directCall: true } : {}) });
  const finished = (outcome: TurnOutcome): void => {
    const ms = Date.now() - wf.startTime.getTime();
    log.info('turn finished', { outcome, llmSteps: state.steps, toolCalls: state.toolCalls.length, ms, historyEvents: workflowInfo().historyLength });
    metrics.turnFinished(outcome, state.steps, state.toolCalls.length, {
      sessionId: input.sessionId,
      ...(user ? { user: { id: user.id, role: user.role, tenant: user.tenant } } : {}),
      ...(state.usage ? { usage: state.usage } : {}),
    });
  };

  const fail = (error: TurnError): never => {
    record.fail(error);
    finished('failed');
    throw ApplicationFailure.create({
      type: Failure.TurnFailed,
      message: error.message,
      nonRetryable: true,
      details: [state],
    });
  };

  // A turn of a session waits for its session's go (the previous turn finished) and gets the
  // conversation so far with it; a standalone turn carries its history in the input.
  let begin: { history: ChatMessage[] } | undefined;
  if (input.queued) setHandler(beginTurnSignal, (b) => void (begin ??= b));

  // Started by the API for a session: the session hears how the turn ended, however it did, from the
  // worker as the turn's last workflow task completes (a sink: no command, no history event, nothing
  // on the turn's path). Should that signal be lost, the session asks Temporal (decision 0016).
  const sessionWorkflowId = input.sessionWorkflowId;
  if (!sessionWorkflowId) return await runTurn();
  const { session } = proxySinks<SessionSinks>();
  const announce = (status: TurnEnd['status'], content: string) => session.turnEnded(sessionWorkflowId, { turnId: input.turnId, status, content });
  try {
    const done = await runTurn();
    announce('completed', done.text ?? '');
    return done;
  } catch (err) {
    if (err instanceof CancelledFailure) announce('cancelled', 'The turn was cancelled.');
    else if (err instanceof ApplicationFailure && err.type === Failure.TurnFailed) announce('failed', state.error?.message ?? err.message);
    throw err;
  }

  /**
   * The catalog is an in-memory read in the worker, as a local activity (no server round trip), and
   * the turn records tool references only: each LLM step sends names the worker resolves to schemas.
   * The 'catalog-by-reference' patch that brought this in is folded (docs/decisions/0017): turns
   * that recorded its marker replay without the call, histories from before it are retired.
   */
  function listToolRefs(): Promise<CatalogRefs> {
    return localDiscovery.listToolRefs();
  }

  /**
   * Its session's answer for a turn the API started behind another one, asked while the catalog is
   * listed (both local activities of the first workflow task): go now with this memory (its turn came
   * meanwhile), or wait for `beginTurn`, and then list the catalog again.
   */
  async function joinSession(id: string): Promise<{ history: ChatMessage[]; catalog?: Promise<CatalogRefs> }> {
    const ask = () => sessionLink.joinSession.executeWithOptions({ summary: 'join the session' }, [{ sessionWorkflowId: id, turnId: input.turnId }]);
    const admission = ask();
    const listed = listToolRefs();
    listed.catch(() => undefined);
    let joined = await admission;
    if (joined.state === 'begin') return { history: joined.history, catalog: listed };
    if (joined.state === 'queued') emit('status', { status: 'running', phase: 'queued' });
    // Waiting for the go, the session is asked again now and then: a session that closed or forgot
    // this turn must not leave it waiting for ever.
    while (joined.state === 'queued') {
      if (await condition(() => begin !== undefined, QUEUED_RECHECK)) return { history: begin?.history ?? [] };
      joined = await ask();
      if (joined.state === 'begin') return { history: joined.history };
    }
    await listed.catch(() => undefined);
    return fail({
      code: 'not_in_session',
      message: joined.state === 'ended' ? 'This message repeats an earlier one of the session.' : 'The session does not know this message.',
    });
  }

  async function runTurn(): Promise<TurnState> {
    try {
      let history = input.history;
      let listed: Promise<CatalogRefs> | undefined;
      if (input.sessionWorkflowId && input.queued) {
        const joined = await joinSession(input.sessionWorkflowId);
        history = joined.history;
        listed = joined.catalog;
      } else if (input.queued) {
        emit('status', { status: 'running', phase: 'queued' });
        await condition(() => begin !== undefined);
        history = begin?.history ?? input.history;
      }
      emit('status', { status: 'running', phase: 'gathering_context' });
      const listCatalog: Promise<CatalogRefs> = listed ?? listToolRefs();
      const [catalog, context] = await Promise.all([
        listCatalog.catch(
          (err: unknown): CatalogRefs => {
            log.warn('tool catalog unavailable', { error: describeFailure(err) });
            emit('notice', { code: 'tools_unavailable', message: 'Tools are unavailable for this turn.' });
            return { tools: [], servers: [] };
          },
        ),
        // A direct tool call asks no model, so it reads no context for one.
        !input.directCall && options.context.resources.length + options.context.prompts.length > 0
          ? discovery.gatherContext.executeWithOptions({ summary: 'read context resources and prompts' }, [options.context, user])
          : Promise.resolve({ pieces: [], failures: [] }),
      ]);
      for (const f of context.failures) {
        emit('notice', { code: 'context_unavailable', message: `Could not read ${f.ref} from ${f.server}: ${f.error}` });
      }
      const unavailable = catalog.servers.filter((s) => s.state === 'unavailable');
      for (const s of unavailable) {
        emit('notice', { code: 'server_unavailable', server: s.server, message: `Server ${s.server} is unavailable.` });
      }

      // The model only ever sees the tools the caller may use.
      const visibleTools: ToolRef[] = user && policy ? filterCatalog<ToolRef>(policy, user, catalog.tools) : catalog.tools;
      if (input.directCall) {
        // Planned as if the model had asked for it, so an unknown or hidden tool is refused the same way.
        const d = input.directCall;
        const name = catalog.tools.find((t) => t.server === d.server && t.tool === d.tool)?.name ?? `${d.server}__${d.tool}`;
        const [planned] = planToolCalls([{ id: 'direct-1', name, arguments: JSON.stringify(d.arguments) }], catalog.tools, visibleTools);
        emit('status', { status: 'running', phase: 'calling_tools', step: 1, count: 1 });
        const outcome = await runToolCall(planned as PlannedCall, 1, true);
        record.complete(outcome.isError ? `Error: ${outcome.text}` : outcome.text);
        finished('completed');
        return state;
      }
      // By name: the worker resolves them to schemas.
      const offered: Pick<LlmRequest, 'tools' | 'toolNames'> = { tools: [], toolNames: visibleTools.map((t) => t.name) };
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
            { turnId: input.turnId, step, messages, ...(offerTools ? offered : { tools: [] }) },
          ]);
        } catch (err) {
          if (isCancellation(err)) throw err;
          return fail(llmError(err));
        }
        record.addUsage(response.usage);
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
        // Independent calls of one step run in parallel; results go back in the model's order. Beside
        // a regular call, read-only ones go as regular activities too, or it would wait for them; turns
        // recorded before the patch replay with them local. Only such steps write its marker (0021).
        const local = readOnlyCallsStayLocal(planned, user && policy ? { user, policy } : undefined) || !patched('read-only-beside-regular');
        const outcomes = await Promise.all(planned.map((p) => runToolCall(p, step, local)));
        planned.forEach((p, i) => {
          const outcome = outcomes[i] as ToolOutcome;
          const content = outcome.isError ? `Error: ${outcome.text}` : outcome.text;
          messages.push({ role: 'tool', toolCallId: p.call.id, content: truncate(content, options.maxToolResultChars) });
        });
      }

      record.complete(finalText);
      finished('completed');
      return state;
    } catch (err) {
      // A cancelled turn stops where it is: the LLM request is aborted, an MCP call in flight is
      // cancelled (the server gets notifications/cancelled), no further tool call starts.
      if (!isCancellation(err)) throw err;
      record.cancel();
      finished('cancelled');
      throw new CancelledFailure('The turn was cancelled.', [state]);
    }
  }

  async function recordAudit(entry: Omit<AuditRequest, 'actor' | 'workflowId' | 'runId'>): Promise<void> {
    if (!user) return;
    await (patched('audit-as-local-activity') ? localAudit : audit).recordAudit.executeWithOptions({ summary: `audit: ${entry.kind} ${entry.server ?? ''}/${entry.tool ?? ''}` }, [
      { ...entry, actor: { id: user.id, role: user.role, tenant: user.tenant }, workflowId: wf.workflowId, runId: wf.runId },
    ]);
  }

  /** `local`: a read-only tool may run as a local activity in this step. */
  async function runToolCall(p: PlannedCall, step: number, local: boolean): Promise<ToolOutcome> {
    const call = record.startToolCall({ id: p.call.id, step, name: p.call.name, server: p.tool?.server, tool: p.tool?.tool, arguments: p.arguments });
    const outcome = await toolOutcome(p, step, local);
    record.finishToolCall(call, outcome);
    return outcome;
  }

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
      await recordAudit({ kind: 'denial', server: p.tool.server, tool: p.tool.tool, args: p.arguments, outcome: 'denied', detail: decision.reason, toolCallId: p.call.id });
      return { isError: true, text: `Denied by policy: ${decision.reason}` };
    }
    if (decision?.needsApproval) {
      const approval = await approvals.wait(p, step);
      if (approval === 'timed_out') return { isError: true, text: 'The user did not approve this action in time; it was not performed.' };
      if (approval !== 'approved') return { isError: true, text: 'The user rejected this action; it was not performed.' };
    }
    const request = {
      turnId: input.turnId,
      server: p.tool.server,
      tool: p.tool.tool,
      llmName: p.tool.name,
      arguments: p.arguments,
      idempotencyKey: toolCallIdempotencyKey(wf.workflowId, step, p.call.id),
      ...(user ? { user } : {}),
      ...(input.sealedToken ? { sealedToken: input.sealedToken } : {}),
      toolCallId: p.call.id,
      ...(samplingAllowance(p.tool.server) ?? {}),
    };
    /** The user's answers to the server's questions, handed back when the call is issued again. */
    const answers: ElicitationAnswer[] = [];
    let consents = 0;
    for (;;) {
      const seen = authorizations.seen(p.tool.server);
      try {
        const outcome = await (p.tool.readOnly && local ? readOnlyTools : tools).callTool.executeWithOptions({ summary: `${p.tool.server}: ${p.tool.tool}` }, [
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
          answers.push(await inputs.ask(p, step, asked));
          continue;
        }
        // The server needs the user's consent first: wait for it (durably), then try again. Turns
        // recorded before this change replay as before (they never met this failure).
        const needed = failureTypeOf(err) === Failure.McpAuthorizationRequired ? authorizationNeeded(err) : undefined;
        if (needed && consents++ < MAX_AUTHORIZATION_ROUNDS && patched('authorization-wait')) {
          if (await authorizations.wait(p, step, needed, seen)) continue;
          return { isError: true, text: `The user did not authorize this host with ${needed.server} in time; the call was not made.` };
        }
        // The request may have been applied and the call is not safe to repeat: nobody retried it, and
        // the user is told as well as the model, since only they can check what happened.
        if (failureTypeOf(err) === Failure.McpOutcomeUnknown) {
          const what = describeFailure(err);
          emit('notice', { code: 'tool_outcome_unknown', toolCallId: p.call.id, server: p.tool.server, tool: p.tool.tool, message: `${p.tool.server}/${p.tool.tool}: ${what}` });
          return { isError: true, text: `The ${p.tool.server} server's ${p.tool.tool}: ${what}` };
        }
        // Retries are exhausted or the failure is permanent: the model hears about it and carries on.
        return { isError: true, text: `The ${p.tool.server} server could not run ${p.tool.tool}: ${describeFailure(err)}` };
      }
    }
  }
}

/** How long a turn queued in its session waits for its go before it asks the session again. */
const QUEUED_RECHECK = '10 minutes';

/** Consents one call may wait for: a server that keeps asking after the user agreed is not waited for forever. */
const MAX_AUTHORIZATION_ROUNDS = 2;

/** Questions one tool call may ask the user before its next question fails the call. */
const MAX_QUESTIONS_PER_CALL = 5;

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

