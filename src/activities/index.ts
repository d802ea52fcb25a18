import { hostname } from 'node:os';
import { ApplicationFailure, CancelledFailure, Context } from '@temporalio/activity';
import { ApplicationFailureCategory } from '@temporalio/common';
import { retryingToolMessage } from './retry-notice';
import { isMcpFailure, McpTransientError } from '../mcp/failures';
import { isReadOnly, repeatSafety } from '../mcp/repeat-safety';
import type { ToolErrorClass, ToolOutcomeLabel } from '../metrics';
import { scrubSecrets } from '../security/secrets';
import type { ToolTaskRef } from '../mcp/types';
import { AuthorizationDeniedError, AuthorizationRequiredError } from '../mcp/oauth';
import { ElicitationSession, type HoldQuestion } from '../mcp/elicitation';
import { DEFAULT_TIMEOUTS } from '../mcp/config';
import { SamplingSession } from '../mcp/sampling';
import { withCaller } from '../mcp/user-token';
import { boundToolOutcome } from '../mcp/render';
import type { ContextPiece } from '../core/host-loop';
import type { AuditRequest } from '../shared/audit';
import { Failure } from '../shared/failures';
import { IDEMPOTENCY_KEY_META_KEY, TRACE_META_KEY, USER_CONTEXT_META_KEY } from '../shared/meta';
import type { Catalog, CatalogRefs, CatalogTool, ToolOutcome } from '../shared/tool-types';
import type { ContextSpec, ElicitationAnswer, InputAsked, LlmRequest, LlmToolSpec, SamplingAllowance } from '../shared/turn';
import type { UserContext } from '../shared/user';
import { createSessionLinkActivities } from './session-link';
import type { ActivityDeps } from './deps';
import { createLlmActivities } from './llm';
import { createToolSearch } from './tool-search';
import { HOST_SERVER } from '../core/tool-search';
import type { ReadableResources } from '../core/adaptive-context';
import { createHostTools, hostToolSpec, withHostToolSpecs } from './host-tools';
import { heartbeatsEvery, turnFields } from './shared';

export type { SummarizeInput } from './llm';

/** What a tool call leaves of its attempt's start-to-close timeout: it ends first, saying why. */
const ATTEMPT_MARGIN_MS = 2_000;
/** A held question gives up this long before the call's request would time out, to abort it cleanly instead. */
const HOLD_MARGIN_MS = 5_000;

export type { ActivityDeps, ArgumentCheck } from './deps';

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

export interface GatheredContext {
  pieces: ContextPiece[];
  failures: { server: string; ref: string; error: string }[];
}

/** Activities are closures over the worker's long-lived dependencies; the worker owns their lifetimes. */
export function createActivities(deps: ActivityDeps) {
  const withHeartbeats = heartbeatsEvery(deps.heartbeatEveryMs ?? 5_000);
  const workerId = deps.workerId ?? `${process.pid}@${hostname()}`;
  const scrub = (text: string) => scrubSecrets(text, deps.secrets);
  /** The catalog this worker listed last: what tool names in an LLM request resolve against. */
  let lastCatalog: Catalog | undefined;
  const catalog = async (): Promise<Catalog> => (lastCatalog = await deps.hub.catalog());

  const known = (c: Catalog | undefined) => new Map((c?.tools ?? []).map((t) => [t.name, t] as const));
  /** Searches a catalog too large to offer whole (docs/decisions/0032). */
  const search = createToolSearch(deps.toolSearch);
  /** The host's own tools (search, adaptive context's resource tools), answered without an MCP server. */
  const hostTools = createHostTools(deps, { search, userMeta, scrub });

  /**
   * The tool specs of an LLM request: sent in full (older turns), or by name and resolved here from the
   * catalog (listed again if a name is unknown, e.g. on a worker that has not listed it yet). A name
   * whose tool is gone is left out: the model cannot call what no server offers now.
   */
  async function toolSpecs(req: LlmRequest): Promise<LlmToolSpec[]> {
    if (!req.toolNames) return req.tools;
    const names = req.toolNames.filter((n) => !hostToolSpec(n));
    let byName = known(lastCatalog);
    if (names.some((n) => !byName.has(n))) byName = known(await catalog());
    return search.offer(req, withHostToolSpecs(byName)).specs;
  }

  return {
    ...createSessionLinkActivities(deps.sessions),
    ...createLlmActivities(deps, { specs: toolSpecs, withFound: (response, req) => search.withFound(response, req, known(lastCatalog)), withHeartbeats }),

    async recordAudit(entry: AuditRequest): Promise<void> {
      await deps.audit?.append(entry);
    },

    async listCatalog(): Promise<Catalog> {
      return await catalog();
    },

    /** The catalog as a turn records it: names and servers only (see CatalogRefs). */
    async listToolRefs(): Promise<CatalogRefs> {
      const c = await catalog();
      const readOnly = (t: CatalogTool) => isReadOnly(deps.hub.serverConfig?.(t.server), t);
      const tools = c.tools.map((t) => ({ name: t.name, server: t.server, tool: t.tool, ...(readOnly(t) ? { readOnly: true as const } : {}) }));
      // A catalog too large to offer whole carries the host's search tool (each LLM step decides for its caller);
      // adaptive context, its resource tools.
      return { tools: [...tools, ...hostTools.refs(c)], servers: c.servers };
    },

    async gatherContext(spec: ContextSpec, user?: UserContext): Promise<GatheredContext> {
      const signal = Context.current().cancellationSignal;
      const meta = user ? userMeta(user) : undefined;
      const jobs: Promise<ContextPiece>[] = [
        ...spec.resources.map(async (r): Promise<ContextPiece> => ({
          kind: 'resource',
          server: r.server,
          ref: r.uri,
          text: await deps.hub.readResource(r.server, r.uri, { signal, ...(meta ? { meta } : {}) }),
        })),
        ...spec.prompts.map(async (p): Promise<ContextPiece> => ({
          kind: 'prompt',
          server: p.server,
          ref: p.name,
          text: await deps.hub.getPrompt(p.server, p.name, p.arguments, { signal, ...(meta ? { meta } : {}) }),
        })),
      ];
      const refs = [
        ...spec.resources.map((r) => ({ server: r.server, ref: r.uri })),
        ...spec.prompts.map((p) => ({ server: p.server, ref: p.name })),
      ];
      // One unreadable resource must not cost the whole turn its context: report it and go on.
      const settled = await Promise.allSettled(jobs);
      const result: GatheredContext = { pieces: [], failures: [] };
      settled.forEach((s, i) => {
        const ref = refs[i] as { server: string; ref: string };
        if (s.status === 'fulfilled') result.pieces.push(s.value);
        else result.failures.push({ ...ref, error: scrub(errorMessage(s.reason)) });
      });
      return result;
    },

    async callTool(input: ToolCallInput): Promise<ToolOutcome> {
      const ctx = Context.current();
      const started = performance.now();
      const previous = ctx.info.heartbeatDetails as { task?: ToolTaskRef; sent?: boolean; worker?: string } | undefined;
      // Watching clients hear at once that the call goes on, and where, rather than wait in silence while
      // a fresh worker lists its tools. (If the request must not be sent again, the turn's durable
      // `tool_outcome_unknown` notice follows and says so.)
      if (ctx.info.attempt > 1 && input.toolCallId) deps.live?.toolNotice(input.turnId, input.toolCallId, ctx.info.attempt, retryingToolMessage(input.llmName, ctx.info.attempt, previous?.worker, workerId));
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
      // What an earlier attempt recorded, kept by every beat of this one until it learns more.
      const carried = { ...(previous?.task ? { task: previous.task } : {}), ...(previous?.sent ? { sent: true } : {}), worker: workerId };
      // A fresh worker may still be connecting its servers: the call beats while it waits for the
      // catalog, or its heartbeat timeout would end this attempt before it began.
      const catalog = await withHeartbeats(() => deps.hub.catalog(), carried);
      // The host's own tools (search, resources) are answered here, without an MCP server.
      if (input.server === HOST_SERVER) {
        return await hostTools.answer(input, catalog, async (entry) => {
          if (auditBase) await deps.audit?.append({ ...auditBase, ...entry });
        });
      }
      const entry = catalog.tools.find((t) => t.server === input.server && t.tool === input.tool);
      if (!entry) {
        const server = catalog.servers.find((s) => s.server === input.server);
        if (!server || server.state !== 'connected') {
          observe('transient_error', 'server_unavailable');
          // The server may come back (respawn, network): let Temporal retry with backoff.
          throw ApplicationFailure.retryable(
            `server ${input.server} is unavailable${server?.error ? `: ${scrub(server.error)}` : ''}`,
            Failure.McpServerUnavailable,
          );
        }
        observe('tool_error', 'tool_missing');
        return { isError: true, text: `Tool ${input.tool} no longer exists on server ${input.server}.` };
      }
      const check = deps.validator.validate(entry.inputSchema, input.arguments);
      if (!check.ok) {
        observe('tool_error', 'invalid_arguments');
        return { isError: true, text: `Invalid arguments for ${input.llmName}: ${check.message}` };
      }

      // Every attempt is audited: a retried side effect must be visible as such.
      if (auditBase) await deps.audit?.append({ ...auditBase, kind: 'tool_call', args: input.arguments });
      // A question of the server that no recorded answer covers goes to the user: held open while the
      // call's timeouts allow, else the call is aborted and issued again with the answer.
      let sentAt: number | undefined;
      const elicitation = new ElicitationSession(
        input.elicitations,
        holdQuestion(deps, input, () => {
          const callMs = deps.hub.serverConfig?.(input.server)?.timeouts.callMs ?? DEFAULT_TIMEOUTS.callMs;
          const attemptEnd = started + ctx.info.startToCloseTimeoutMs - ATTEMPT_MARGIN_MS;
          return Math.min((sentAt ?? performance.now()) + callMs, attemptEnd) - HOLD_MARGIN_MS;
        }),
      );
      const resumeTask = previous?.task && typeof previous.task.taskId === 'string' ? previous.task : undefined;
      // Which worker beat last: the next attempt can tell whether it runs elsewhere (its worker stopped).
      let details: { task?: ToolTaskRef; progress?: unknown; sent?: boolean; worker: string } = resumeTask ? { task: resumeTask, sent: true, worker: workerId } : { worker: workerId };
      // Sent again only when that cannot apply it twice (src/mcp/repeat-safety.ts), or when it
      // provably never reached the server; otherwise the model and the user hear "outcome unknown".
      const safety = repeatSafety(deps.hub.serverConfig?.(input.server), entry);
      const outcomeUnknown = (what: string) => {
        observe('transient_error', 'outcome_unknown');
        return ApplicationFailure.create({
          type: Failure.McpOutcomeUnknown,
          nonRetryable: true,
          message:
            `outcome unknown: ${what}, so ${input.server}/${input.tool} may or may not have taken effect. ` +
            `It was not sent again: ${safety.because}. Check its effect before trying again.`,
        });
      };
      // An earlier attempt sent the request and its worker stopped before the answer came back.
      // (Unless it stopped while its server waited for the user's answer: the server has not acted, so
      // the call is sent again as a re-issue would be; decision 0011.)
      if (previous?.sent && !resumeTask && !safety.repeatable && !(await stillAsking(deps, input))) {
        throw outcomeUnknown(`attempt ${ctx.info.attempt - 1} sent the request and stopped (its worker ended) before an answer came back`);
      }
      // The server's requests for the host's model: within the allowance, each one audited.
      const sampling = new SamplingSession(deps.llm, input.sampling, input.turnId, async (result) => {
        if (!auditBase) return;
        await deps.audit?.append({
          ...auditBase,
          kind: 'sampling',
          outcome: 'refused' in result ? 'denied' : 'ok',
          detail: 'refused' in result ? result.refused : `${result.tokens} tokens`,
        });
      }, { server: input.server, session: elicitation });
      // An expected outcome (decision 0011), not a failure of anything: BENIGN keeps it out of the
      // worker's warnings and failure metrics.
      const inputRequired = (asked: InputAsked) =>
        ApplicationFailure.create({
          type: Failure.McpInputRequired,
          message: `${input.server} asks the user: ${asked.message}`,
          nonRetryable: true,
          details: [asked],
          category: ApplicationFailureCategory.BENIGN,
        });
      return await withHeartbeats(async (beat) => {
        try {
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
              details = { ...details, task };
              beat(details);
            },
            // The first heartbeat of an attempt leaves at once: a later attempt learns the request went out.
            onSend: () => {
              sentAt = performance.now();
              details = { ...details, sent: true };
              beat(details);
            },
            onProgress: (p) => {
              details = { ...details, progress: p };
              beat(details);
              // Watching clients see it at once (`tool_progress`); the heartbeat keeps the activity alive.
              if (input.toolCallId) deps.live?.progress(input.turnId, input.toolCallId, p);
            },
          }));
          // The server went on after we answered `cancel`: its result is not the user's answer.
          if (elicitation.asked) throw inputRequired(elicitation.asked);
          if (auditBase) {
            await deps.audit?.append({ ...auditBase, kind: 'tool_result', outcome: outcome.isError ? 'error' : 'ok', detail: outcome.text.slice(0, 200) });
          }
          if (outcome.isError) observe('tool_error', 'tool_error');
          else observe('ok');
          if (!outcome.isError) search.recordUse(input.user, input.llmName, input.server);
          // What the model will see, not the whole answer: that is what enters the turn's history.
          const max = input.maxResultChars ?? deps.maxToolResultChars?.();
          const bounded = max === undefined ? outcome : boundToolOutcome(outcome, max);
          return sampling.used > 0 ? { ...bounded, samplingTokens: sampling.used } : bounded;
        } catch (err) {
          if (auditBase) {
            await deps.audit?.append({ ...auditBase, kind: 'tool_result', outcome: 'error', detail: scrub(errorMessage(err)).slice(0, 200) }).catch(() => undefined);
          }
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
            throw inputRequired(elicitation.asked);
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
          if (err instanceof McpTransientError && err.requestSent && !safety.repeatable && !details.task) {
            throw outcomeUnknown(`the request was sent and the answer was lost (${err.reason})`);
          }
          observe('transient_error', 'transient');
          throw ApplicationFailure.retryable(message, Failure.McpTransientError);
        }
      }, details);
    },
  };
}

export type Activities = ReturnType<typeof createActivities>;

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

/** The caller as servers see it in `_meta`: identity and scopes, never a token. */
function userMeta(user: UserContext, traceId?: string): Record<string, unknown> {
  return {
    [USER_CONTEXT_META_KEY]: { id: user.id, role: user.role, tenant: user.tenant, scopes: user.scopes, ...(traceId ? { traceId } : {}) },
  };
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
