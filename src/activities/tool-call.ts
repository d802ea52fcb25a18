/**
 * The tool-call activity (`callTool`): one attempt of one MCP tool call, from the worker's catalog to
 * the server's answer. Its steps: the call's tool found and its arguments checked, the decision
 * whether an attempt may send the request again (or the outcome is unknown), the call itself while
 * heartbeats carry what a later attempt needs, and what went wrong mapped to the failures the turn
 * decides on. The host's own tools are answered without a server (./host-tools.ts).
 */
import { ApplicationFailure, CancelledFailure, Context } from '@temporalio/activity';
import { ApplicationFailureCategory } from '@temporalio/common';
import { HOST_SERVER } from '../core/tool-search';
import type { ReadableResources } from '../core/adaptive-context';
import { DEFAULT_TIMEOUTS } from '../mcp/config';
import { ElicitationSession, type HoldQuestion } from '../mcp/elicitation';
import { isMcpFailure, McpTransientError } from '../mcp/failures';
import { AuthorizationDeniedError, AuthorizationRequiredError } from '../mcp/oauth';
import { boundToolOutcome } from '../mcp/render';
import { repeatSafety, type RepeatSafety } from '../mcp/repeat-safety';
import { SamplingSession } from '../mcp/sampling';
import type { ToolTaskRef } from '../mcp/types';
import { withCaller } from '../mcp/user-token';
import type { ToolErrorClass, ToolOutcomeLabel } from '../metrics';
import { Failure } from '../shared/failures';
import { IDEMPOTENCY_KEY_META_KEY, TRACE_META_KEY } from '../shared/meta';
import type { Catalog, CatalogTool, ToolOutcome } from '../shared/tool-types';
import type { ElicitationAnswer, InputAsked, SamplingAllowance } from '../shared/user-input';
import type { UserContext } from '../shared/user';
import type { ActivityDeps } from './deps';
import type { createHostTools, HostToolAudit } from './host-tools';
import { retryingToolMessage } from './retry-notice';
import { errorMessage, turnFields, userMeta, type Beat, type WithHeartbeats } from './shared';
import type { ToolSearch } from './tool-search';

/** What a tool call leaves of its attempt's start-to-close timeout: it ends first, saying why. */
const ATTEMPT_MARGIN_MS = 2_000;
/** A held question gives up this long before the call's request would time out, to abort it cleanly instead. */
const HOLD_MARGIN_MS = 5_000;

export interface ToolCallInput {
  turnId: string;
  server: string;
  tool: string;
  llmName: string;
  arguments: Record<string, unknown>;
  idempotencyKey: string;
  /** The caller, forwarded to the server in `_meta` so it can check a third time. */
  user?: UserContext;
  toolCallId?: string;
  /** See TurnInput.sealedToken. */
  sealedToken?: string;
  /** The user's answers to the server's questions so far (elicitation), handed back in order on this call. */
  elicitations?: ElicitationAnswer[];
  /** What the server may ask of the host's model during the call (sampling); absent: nothing. */
  sampling?: SamplingAllowance;
  /** The turn's maxToolResultChars: the result is cut to it here (absent in turns started before: the worker's host config). */
  maxResultChars?: number;
  /** For the host's resource tools: what the caller's policy lets it read (docs/decisions/0036); absent: nothing. */
  readable?: ReadableResources;
}

/** What the tool call shares with the other activities (./index.ts makes them once per worker). */
export interface ToolCallShared {
  withHeartbeats: WithHeartbeats;
  workerId: string;
  scrub: (text: string) => string;
  search: ToolSearch;
  hostTools: ReturnType<typeof createHostTools>;
}

/** What an attempt's heartbeats carry (the next attempt reads them as `previous`). */
interface AttemptDetails {
  task?: ToolTaskRef;
  progress?: unknown;
  sent?: boolean;
  worker?: string;
}

/** One attempt of one call, as its steps share it. */
interface Attempt {
  deps: ActivityDeps;
  shared: ToolCallShared;
  input: ToolCallInput;
  ctx: Context;
  started: number;
  previous: AttemptDetails | undefined;
  observe: (outcome: ToolOutcomeLabel, errorClass?: ToolErrorClass) => void;
  /** Appends an audit entry about this attempt (who, which tool, which attempt); nothing without a user. */
  audit: HostToolAudit;
}

/** The call the attempt makes once its tool is found: what the call and its error mapping share. */
interface PreparedCall {
  entry: CatalogTool;
  safety: RepeatSafety;
  elicitation: ElicitationSession;
  resumeTask: ToolTaskRef | undefined;
  /** When the request went out (performance.now() time), and the details the heartbeats carry now. */
  state: { sentAt?: number; details: AttemptDetails & { worker: string } };
}

/** The `callTool` activity, spread into the worker's activities by ./index.ts (its name is what turns call). */
export function createToolCallActivity(deps: ActivityDeps, shared: ToolCallShared) {
  const { withHeartbeats, workerId, hostTools } = shared;

  return {
    async callTool(input: ToolCallInput): Promise<ToolOutcome> {
      const a = begin(deps, shared, input);
      const { previous } = a;
      // What an earlier attempt recorded, kept by every beat of this one until it learns more.
      const carried = { ...(previous?.task ? { task: previous.task } : {}), ...(previous?.sent ? { sent: true } : {}), worker: workerId };
      // A fresh worker may still be connecting its servers: the call beats while it waits for the
      // catalog, or its heartbeat timeout would end this attempt before it began. No ping of the
      // servers first: the call's own request is the check, and costs no extra round trip.
      const catalog = await withHeartbeats(() => deps.hub.catalog({ probe: false }), carried);
      // The host's own tools (search, resources) are answered here, without an MCP server.
      if (input.server === HOST_SERVER) return await hostTools.answer(input, catalog, a.audit);
      const found = findTool(a, catalog);
      if ('outcome' in found) return found.outcome;
      // Every attempt is audited: a retried side effect must be visible as such.
      await a.audit({ kind: 'tool_call', args: input.arguments });
      const call = prepare(a, found.entry);
      await refuseResend(a, call);
      const sampling = samplingFor(a, call.elicitation);
      return await withHeartbeats(async (beat) => {
        try {
          return await send(a, call, sampling, beat);
        } catch (err) {
          return await failed(a, call, err);
        }
      }, call.state.details);
    },
  };
}

/** An attempt begins: the retry told to watching clients, its log line, metrics and audit entries made ready. */
function begin(deps: ActivityDeps, shared: ToolCallShared, input: ToolCallInput): Attempt {
  const ctx = Context.current();
  const started = performance.now();
  const previous = ctx.info.heartbeatDetails as AttemptDetails | undefined;
  // Watching clients hear at once that the call goes on, and where, rather than wait in silence while
  // a fresh worker lists its tools. (If the request must not be sent again, the turn's durable
  // `tool_outcome_unknown` notice follows and says so.)
  if (ctx.info.attempt > 1 && input.toolCallId) deps.live?.toolNotice(input.turnId, input.toolCallId, ctx.info.attempt, retryingToolMessage(input.llmName, ctx.info.attempt, previous?.worker, shared.workerId));
  // One info line per attempt: names, duration and outcome, never arguments or results.
  const observe = (outcome: ToolOutcomeLabel, errorClass?: ToolErrorClass) => {
    const seconds = (performance.now() - started) / 1000;
    deps.metrics?.toolCall(input.server, input.tool, outcome, seconds, errorClass);
    deps.logger.info(
      { ...turnFields(input.turnId, input.user), server: input.server, tool: input.tool, attempt: ctx.info.attempt, outcome, ...(errorClass ? { errorClass } : {}), ms: Math.round(seconds * 1000) },
      'tool call',
    );
  };
  const auditBase = input.user
    ? {
        actor: { id: input.user.id, role: input.user.role, tenant: input.user.tenant },
        server: input.server,
        tool: input.tool,
        workflowId: ctx.info.workflowExecution?.workflowId,
        runId: ctx.info.workflowExecution?.runId,
        activityId: ctx.info.activityId,
        attempt: ctx.info.attempt,
        ...(input.toolCallId ? { toolCallId: input.toolCallId } : {}),
      }
    : undefined;
  const audit: HostToolAudit = async (entry) => {
    if (auditBase) await deps.audit?.append({ ...auditBase, ...entry });
  };
  return { deps, shared, input, ctx, started, previous, observe, audit };
}

/** The call's tool in the catalog, its arguments valid; else the outcome that ends the attempt without a call. */
function findTool(a: Attempt, catalog: Catalog): { entry: CatalogTool } | { outcome: ToolOutcome } {
  const { deps, input, observe } = a;
  const entry = catalog.tools.find((t) => t.server === input.server && t.tool === input.tool);
  if (!entry) {
    const server = catalog.servers.find((s) => s.server === input.server);
    if (!server || server.state !== 'connected') {
      observe('transient_error', 'server_unavailable');
      // The server may come back (respawn, network): let Temporal retry with backoff.
      throw ApplicationFailure.retryable(
        `server ${input.server} is unavailable${server?.error ? `: ${a.shared.scrub(server.error)}` : ''}`,
        Failure.McpServerUnavailable,
      );
    }
    observe('tool_error', 'tool_missing');
    return { outcome: { isError: true, text: `Tool ${input.tool} no longer exists on server ${input.server}.` } };
  }
  const check = deps.validator.validate(entry.inputSchema, input.arguments);
  if (!check.ok) {
    observe('tool_error', 'invalid_arguments');
    return { outcome: { isError: true, text: `Invalid arguments for ${input.llmName}: ${check.message}` } };
  }
  return { entry };
}

/** The call of a found tool made ready: its heartbeat details, the user's questions, whether it may be sent again. */
function prepare(a: Attempt, entry: CatalogTool): PreparedCall {
  const { deps, input, ctx, started, previous } = a;
  const { workerId } = a.shared;
  const resumeTask = previous?.task && typeof previous.task.taskId === 'string' ? previous.task : undefined;
  // Which worker beat last: the next attempt can tell whether it runs elsewhere (its worker stopped).
  const state: PreparedCall['state'] = { details: resumeTask ? { task: resumeTask, sent: true, worker: workerId } : { worker: workerId } };
  // A question of the server that no recorded answer covers goes to the user: held open while the
  // call's timeouts allow, else the call is aborted and issued again with the answer.
  const elicitation = new ElicitationSession(
    input.elicitations,
    holdQuestion(deps, input, () => {
      const callMs = deps.hub.serverConfig?.(input.server)?.timeouts.callMs ?? DEFAULT_TIMEOUTS.callMs;
      const attemptEnd = started + ctx.info.startToCloseTimeoutMs - ATTEMPT_MARGIN_MS;
      return Math.min((state.sentAt ?? performance.now()) + callMs, attemptEnd) - HOLD_MARGIN_MS;
    }),
  );
  // Sent again only when that cannot apply it twice (src/mcp/repeat-safety.ts), or when it
  // provably never reached the server; otherwise the model and the user hear "outcome unknown".
  const safety = repeatSafety(deps.hub.serverConfig?.(input.server), entry);
  return { entry, safety, elicitation, resumeTask, state };
}

/** The failure of a request that may have taken effect and is not sent again: the turn tells the model and the user. */
function outcomeUnknown(a: Attempt, safety: RepeatSafety, what: string): ApplicationFailure {
  a.observe('transient_error', 'outcome_unknown');
  return ApplicationFailure.create({
    type: Failure.McpOutcomeUnknown,
    nonRetryable: true,
    message:
      `outcome unknown: ${what}, so ${a.input.server}/${a.input.tool} may or may not have taken effect. ` +
      `It was not sent again: ${safety.because}. Check its effect before trying again.`,
  });
}

/**
 * An earlier attempt sent the request and its worker stopped before the answer came back: the
 * outcome is unknown unless the request may be sent again. (Unless it stopped while its server
 * waited for the user's answer: the server has not acted, so the call is sent again as a re-issue
 * would be; decision 0011.)
 */
async function refuseResend(a: Attempt, call: PreparedCall): Promise<void> {
  if (a.previous?.sent && !call.resumeTask && !call.safety.repeatable && !(await stillAsking(a.deps, a.input))) {
    throw outcomeUnknown(a, call.safety, `attempt ${a.ctx.info.attempt - 1} sent the request and stopped (its worker ended) before an answer came back`);
  }
}

/** The server's requests for the host's model: within the allowance, each one audited. */
function samplingFor(a: Attempt, elicitation: ElicitationSession): SamplingSession {
  const { deps, input } = a;
  return new SamplingSession(deps.llm, input.sampling, input.turnId, async (result) => {
    await a.audit({
      kind: 'sampling',
      outcome: 'refused' in result ? 'denied' : 'ok',
      detail: 'refused' in result ? result.refused : `${result.tokens} tokens`,
    });
  }, { server: input.server, session: elicitation });
}

/** The request to the server, its task, sending and progress beaten into the heartbeat details. */
async function send(a: Attempt, call: PreparedCall, sampling: SamplingSession, beat: Beat): Promise<ToolOutcome> {
  const { deps, input, ctx, started, observe } = a;
  const { elicitation, resumeTask, state } = call;
  const token = input.sealedToken ? deps.unsealToken?.(input.sealedToken) : undefined;
  const caller = {
    ...(token ? { token } : {}),
    ...(input.user ? { principal: `${input.user.tenant}:${input.user.id}` } : {}),
    turnId: input.turnId,
    elicitation,
    sampling,
  };
  // The pool sends the request in its own span (src/telemetry/mcp-spans.ts), its context in `_meta`.
  const outcome = await withCaller(caller, () => deps.hub.callTool({
    server: input.server,
    tool: input.tool,
    arguments: input.arguments,
    meta: {
      [IDEMPOTENCY_KEY_META_KEY]: input.idempotencyKey,
      [TRACE_META_KEY]: input.turnId,
      ...(input.user ? userMeta(input.user, input.turnId) : {}),
    },
    signal: AbortSignal.any([ctx.cancellationSignal, elicitation.signal]),
    // Ends before Temporal's start-to-close does, with the call's own reason.
    totalTimeoutMs: Math.floor(ctx.info.startToCloseTimeoutMs - (performance.now() - started) - ATTEMPT_MARGIN_MS),
    // A task an earlier attempt started (kept in its heartbeat details) is waited for, not started again.
    ...(resumeTask ? { resumeTask } : {}),
    onTask: (task) => {
      state.details = { ...state.details, task };
      beat(state.details);
    },
    // A call that must not be sent twice beats at once: a later attempt learns the request went out.
    // One that may be sent again (read-only, or its server dedupes on the idempotency key) needs no
    // such record, and skips that beat: the worker's core holds an activity's completion until a
    // heartbeat in flight is answered, a round trip to the server on every quick call. The timer's
    // beats carry `sent` from here on either way.
    onSend: () => {
      state.sentAt = performance.now();
      state.details = { ...state.details, sent: true };
      beat(state.details, { now: !call.safety.repeatable });
    },
    onProgress: (p) => {
      state.details = { ...state.details, progress: p };
      beat(state.details);
      // Watching clients see it at once (`tool_progress`); the heartbeat keeps the activity alive.
      if (input.toolCallId) deps.live?.progress(input.turnId, input.toolCallId, p);
    },
  }));
  // The server went on after we answered `cancel`: its result is not the user's answer.
  if (elicitation.asked) throw inputRequired(input, elicitation.asked);
  await a.audit({ kind: 'tool_result', outcome: outcome.isError ? 'error' : 'ok', detail: outcome.text.slice(0, 200) });
  if (outcome.isError) observe('tool_error', 'tool_error');
  else observe('ok');
  if (!outcome.isError) a.shared.search.recordUse(input.user, input.llmName, input.server);
  // What the model will see, not the whole answer: that is what enters the turn's history.
  const max = input.maxResultChars ?? deps.maxToolResultChars?.();
  const bounded = max === undefined ? outcome : boundToolOutcome(outcome, max);
  return sampling.used > 0 ? { ...bounded, samplingTokens: sampling.used } : bounded;
}

/** What went wrong in the call, as the turn decides on it: an outcome for the model, or the failure to throw. */
async function failed(a: Attempt, call: PreparedCall, err: unknown): Promise<ToolOutcome> {
  const { deps, input, ctx, observe } = a;
  const { scrub } = a.shared;
  const { elicitation } = call;
  await a.audit({ kind: 'tool_result', outcome: 'error', detail: scrub(errorMessage(err)).slice(0, 200) }).catch(() => undefined);
  const message = scrub(errorMessage(err));
  // A call the host stopped itself (the turn cancelled, or the server's question going to the
  // user) is an expected outcome: said at debug, not as a failure.
  const expected = ctx.cancellationSignal.aborted || elicitation.asked !== undefined;
  deps.logger[expected ? 'debug' : 'warn'](
    { ...turnFields(input.turnId, input.user), server: input.server, tool: input.tool, attempt: ctx.info.attempt },
    `tool call ${expected ? 'stopped' : 'failed'}: ${message}`,
  );
  if (ctx.cancellationSignal.aborted) {
    observe('cancelled');
    throw new CancelledFailure('tool call cancelled');
  }
  if (elicitation.asked) {
    observe('tool_error', 'input_required');
    throw inputRequired(input, elicitation.asked);
  }
  // The user has to authorize the host with the server: the turn waits for them (the URL is
  // not a secret: it carries the PKCE challenge, never the verifier). Retrying cannot help.
  if (err instanceof AuthorizationRequiredError) {
    observe('tool_error', 'authorization_required');
    throw ApplicationFailure.create({
      type: Failure.McpAuthorizationRequired,
      message,
      nonRetryable: true,
      details: [{ server: input.server, authorizationUrl: err.authorizationUrl }],
    });
  }
  // The user (or the authorization server) said no: data for the model.
  if (err instanceof AuthorizationDeniedError) {
    observe('tool_error', 'authorization_denied');
    return { isError: true, text: `${message}. The call was not made.` };
  }
  if (isMcpFailure(err, 'permanent')) {
    observe('permanent_error', 'permanent');
    throw ApplicationFailure.nonRetryable(message, Failure.McpPermanentError);
  }
  // (A task the server made is not lost with the answer: the next attempt waits for it, by the id
  // in the heartbeat details.)
  if (err instanceof McpTransientError && err.requestSent && !call.safety.repeatable && !call.state.details.task) {
    throw outcomeUnknown(a, call.safety, `the request was sent and the answer was lost (${err.reason})`);
  }
  observe('transient_error', 'transient');
  throw ApplicationFailure.retryable(message, Failure.McpTransientError);
}

/**
 * An expected outcome (decision 0011), not a failure of anything: BENIGN keeps it out of the
 * worker's warnings and failure metrics.
 */
function inputRequired(input: ToolCallInput, asked: InputAsked): ApplicationFailure {
  return ApplicationFailure.create({
    type: Failure.McpInputRequired,
    message: `${input.server} asks the user: ${asked.message}`,
    nonRetryable: true,
    details: [asked],
    category: ApplicationFailureCategory.BENIGN,
  });
}

/**
 * How a tool call holds its server's question open while the user answers (issue 22 §2): through its
 * turn (deps.inputs), until `until()` (performance.now() time: before the request's own timeout or
 * the attempt's end). None for a local activity (it cannot heartbeat) or without a link to the turn.
 */
function holdQuestion(deps: ActivityDeps, input: ToolCallInput, until: () => number): HoldQuestion | undefined {
  const ctx = Context.current();
  const link = deps.inputs;
  const toolCallId = input.toolCallId;
  const workflowId = ctx.info.workflowExecution?.workflowId;
  if (!link || !toolCallId || !workflowId || ctx.info.isLocal) return undefined;
  return (question, matches) => link.hold({ workflowId, toolCallId, question, matches, until: until(), signal: ctx.cancellationSignal });
}

/** Whether the attempt before this one stopped while it held a question whose answer never reached the server. */
async function stillAsking(deps: ActivityDeps, input: ToolCallInput): Promise<boolean> {
  const workflowId = Context.current().info.workflowExecution?.workflowId;
  return deps.inputs !== undefined && input.toolCallId !== undefined && workflowId !== undefined && (await deps.inputs.heldUntaken(workflowId, input.toolCallId));
}
