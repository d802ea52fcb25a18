import {
  ApplicationFailure,
  CancellationScope,
  CancelledFailure,
  isCancellation,
  log,
  patched,
  proxySinks,
  setCurrentDetails,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import { buildInitialMessages, planToolCalls, truncate, type PlannedCall } from '../core/host-loop';
import { contextReasons } from '../core/intents';
import { readOnlyCallsStayLocal } from '../core/local-calls';
import { filterCatalog } from '../core/policy';
import { createTurnPhase } from '../core/turn-phase';
import { type AnsweredBy, createTurnRecord, whoAnswered } from '../core/turn-record';
import type { AuditRequest } from '../shared/audit';
import { Failure, failureTypeOf } from '../shared/failures';
import type { CatalogRefs, ToolOutcome, ToolRef } from '../shared/tool-types';
import type { TurnMemory } from '../shared/session';
import type { ChatMessage, LlmRequest, TurnError, TurnInput, TurnResult } from '../shared/turn';
import { handleApprovals } from './approvals';
import { handleAuthorizations } from './authorizations';
import { handleInputs } from './inputs';
import { describeFailure } from './activity-failures';
import { createToolCalls } from './tool-calls';
import { turnActivities } from './turn-activities';
import { type ChainGo, turnChain } from './turn-chain';
import { type MetricsSinks, type TurnEventSinks, type TurnOutcome, turnStateQuery } from './definitions';

/**
 * One user request: gather context, then loop LLM → tool calls → results → LLM until the model
 * answers in text or the step limit is reached. All I/O happens in activities.
 */
export async function turnWorkflow(input: TurnInput): Promise<TurnResult> {
  const { options } = input;
  const wf = workflowInfo();

  const { discovery, localDiscovery, llm, tools, readOnlyTools, audit, localAudit, sessionLink } = turnActivities(options);
  const user = input.user;
  const policy = input.policy;

  const pushedTurn = { sessionId: input.sessionId, ...(user ? { owner: { id: user.id, tenant: user.tenant } } : {}) };
  const { turnEvents } = proxySinks<TurnEventSinks>();
  // What the turn is doing, as the Temporal UI's "current details" (names only, no user data; read
  // through the metadata query: no command, no history event).
  const phase = createTurnPhase();
  const record = createTurnRecord(
    { turnId: input.turnId, ...pushedTurn, ...(input.chain ? { userText: input.userText } : {}) },
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
  const toolCalls = createToolCalls({ input, workflowId: wf.workflowId, user, policy, record, approvals, authorizations, inputs, recordAudit, tools, readOnlyTools });

  const { metrics } = proxySinks<MetricsSinks>();
  /** The models that answered this turn's LLM steps, for the worker's accounting (a sink: not replayed). */
  const answeredModels = new Set<string>();
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
      ...(answeredModels.size > 0 ? { models: [...answeredModels] } : {}),
    });
  };

  // A turn of a chain (decision 0033) takes its memory from the turn before and hands on its own.
  const chain = input.chain && turnChain(input.chain, { turnId: input.turnId, sessionId: input.sessionId, sessionLink, listToolRefs, emit });
  /** The memory a chain's turn began with (its successor's when it fails or is cancelled). */
  let begunWith: TurnMemory | undefined;

  const fail = (error: TurnError): never => {
    record.fail(error);
    finished('failed');
    chain?.ended(begunWith);
    const result: TurnResult = begunWith ? { ...state, memory: begunWith } : state;
    throw ApplicationFailure.create({
      type: Failure.TurnFailed,
      message: error.message,
      nonRetryable: true,
      details: [result],
    });
  };

  /** The answer is given: the stream is done; a chain's turn then works out the memory after it. */
  async function completed(text: string, answeredBy?: AnsweredBy): Promise<TurnResult> {
    // Before the stream's done: a memory known at once reaches the API ahead of the turn's end.
    const next = chain && begunWith ? chain.after(begunWith, input.userText, text) : undefined;
    record.complete(text, answeredBy);
    finished('completed');
    if (!chain || !next) return state;
    // The user has the answer already: a cancellation now must not lose the conversation's memory.
    const memory = await CancellationScope.nonCancellable(() => next.settle());
    chain.ended(memory);
    return { ...state, memory };
  }

  // A turn outside a chain (a direct one, or started on its own) carries its history in its input.
  const waitForGo = chain ? chain.go : (): Promise<{ history: ChatMessage[]; catalog?: Promise<CatalogRefs> }> => Promise.resolve({ history: input.history });
  return await runTurn();

  /**
   * The catalog is an in-memory read in the worker, as a local activity (no server round trip), and
   * the turn records tool references only: each LLM step sends names the worker resolves to schemas.
   * The 'catalog-by-reference' patch that brought this in is folded (docs/decisions/0017): turns
   * that recorded its marker replay without the call, histories from before it are retired.
   */
  function listToolRefs(): Promise<CatalogRefs> {
    return localDiscovery.listToolRefs();
  }

  async function runTurn(): Promise<TurnResult> {
    try {
      const go = await waitForGo();
      const { history, catalog: listed } = go;
      if ('memory' in go) begunWith = (go as ChainGo).memory;
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
      // Why each piece of context was read, when an intent rule chose some (decision 0032); only such turns write the patch's marker.
      const reasons = input.directCall ? [] : contextReasons(options.context);
      if (reasons.length > 0 && patched('context-reasons')) {
        const read = reasons.map((r) => ({ ...r, read: context.pieces.some((p) => p.server === r.server && p.ref === r.ref) }));
        emit('notice', { code: 'context_chosen', message: truncate(`Context: ${reasons.map((r) => `${r.ref} from ${r.server} (${r.because})`).join('; ')}`, 400), pieces: read });
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
        const outcome = await toolCalls.run(planned as PlannedCall, 1, true);
        return await completed(outcome.isError ? `Error: ${outcome.text}` : outcome.text);
      }
      // By name: the worker resolves them to schemas. With the caller, whose most used tools lead a
      // searched catalog (decision 0032): an activity's input is not compared on replay, so no patch.
      const caller = user ? { caller: { id: user.id, tenant: user.tenant, sessionId: input.sessionId } } : {};
      const offered: Pick<LlmRequest, 'tools' | 'toolNames' | 'caller'> = { tools: [], toolNames: visibleTools.map((t) => t.name), ...caller };
      // The model the API chose for the caller's role (decision 0042): also only an activity's input, so no patch.
      const model: Pick<LlmRequest, 'model'> = options.model !== undefined ? { model: options.model } : {};
      const messages: ChatMessage[] = buildInitialMessages({
        systemPrompt: options.systemPrompt,
        context: context.pieces,
        unavailableServers: unavailable,
        history,
        userText: input.userText,
      });

      let finalText: string | undefined;
      let answeredBy: AnsweredBy = {};
      while (finalText === undefined) {
        state.steps += 1;
        const step = state.steps;
        // Past the step limit the model gets no tools, which forces a text answer.
        const offerTools = step <= options.maxSteps;
        emit('status', { status: 'running', phase: 'calling_llm', step });
        let response;
        try {
          response = await llm.callLlm.executeWithOptions({ summary: `LLM step ${step}` }, [
            { turnId: input.turnId, step, messages, ...(offerTools ? offered : { tools: [] }), ...model },
          ]);
        } catch (err) {
          if (isCancellation(err)) throw err;
          return fail(llmError(err));
        }
        record.addUsage(response.usage);
        // Which provider and model answered this step, in the event its answer leads to (absent in results recorded before native providers).
        answeredBy = whoAnswered(response);
        if (response.model !== undefined) answeredModels.add(response.model);
        if (response.toolCalls.length === 0 || !offerTools) {
          finalText = response.text ?? '';
          if (response.toolCalls.length > 0) {
            finalText ||= `I stopped after ${options.maxSteps} tool steps without reaching an answer.`;
          }
          break;
        }

        messages.push({ role: 'assistant', content: response.text, toolCalls: response.toolCalls });
        const planned = planToolCalls(response.toolCalls, catalog.tools, visibleTools);
        emit('status', { status: 'running', phase: 'calling_tools', step, count: planned.length, ...answeredBy });
        // Independent calls of one step run in parallel; results go back in the model's order. Beside
        // a regular call, read-only ones go as regular activities too, or it would wait for them (0021).
        const local = readOnlyCallsStayLocal(planned, user && policy ? { user, policy } : undefined);
        const outcomes = await Promise.all(planned.map((p) => toolCalls.run(p, step, local)));
        planned.forEach((p, i) => {
          const outcome = outcomes[i] as ToolOutcome;
          const content = outcome.isError ? `Error: ${outcome.text}` : outcome.text;
          messages.push({ role: 'tool', toolCallId: p.call.id, content: truncate(content, options.maxToolResultChars) });
        });
      }

      return await completed(finalText, answeredBy);
    } catch (err) {
      // A cancelled turn stops where it is: the LLM request is aborted, an MCP call in flight is
      // cancelled (the server gets notifications/cancelled), no further tool call starts.
      if (!isCancellation(err)) throw err;
      record.cancel();
      finished('cancelled');
      chain?.ended(begunWith);
      throw new CancelledFailure('The turn was cancelled.', [state]);
    }
  }

  async function recordAudit(entry: Omit<AuditRequest, 'actor' | 'workflowId' | 'runId'>): Promise<void> {
    if (!user) return;
    await (patched('audit-as-local-activity') ? localAudit : audit).recordAudit.executeWithOptions({ summary: `audit: ${entry.kind} ${entry.server ?? ''}/${entry.tool ?? ''}` }, [
      { ...entry, actor: { id: user.id, role: user.role, tenant: user.tenant }, workflowId: wf.workflowId, runId: wf.runId },
    ]);
  }
}

function llmError(err: unknown): TurnError {
  if (failureTypeOf(err) === Failure.LlmRequestRejected) {
    return { code: 'llm_rejected', message: `The language model rejected the request: ${describeFailure(err)}` };
  }
  return { code: 'llm_unavailable', message: `The language model is unavailable: ${describeFailure(err)}` };
}

