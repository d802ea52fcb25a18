/**
 * A tool call through the pool: plainly or as an MCP task (reported, so a later attempt rejoins the
 * task instead of starting the work again), with the pages a server asks the user to visit first
 * (-32042) handed to the elicitation handler, and the result checked before the LLM sees it.
 */
import { UrlElicitationRequiredError, type Tool } from '@modelcontextprotocol/sdk/types.js';
import type { ToolOutcome } from '../shared/tool-types';
import { callTotalMsOf } from './config';
import { PROBE_TIMEOUT_MS, type Connections } from './connections';
import { RefusedError, noop, withTimeout, type Connection, type Slot } from './pool-state';
import { McpAbortError, isTotalTimeout } from './failures';
import { toToolOutcome } from './render';
import type { ElicitationHandler } from './server-requests';
import type { ToolCallOptions, ToolCallParams } from './session';
import { listTools } from './server-listing';
import type { CallToolRequest, ToolTaskRef } from './types';
import { callerContext, type CallerContext } from './user-token';
import { inMcpSpan, TOOL_ERROR } from '../telemetry/mcp-spans';
import { mcpOperation } from './operation';

/** How long a server keeps a tool call's task (and its result) for us: long enough to outlive a worker restart. */
const TASK_TTL_MS = 60 * 60_000;

export interface ToolCallContext {
  connections: Connections;
  elicit?: ElicitationHandler;
}

/** Calls the tool on the slot's connection; a refusal (unknown tool, rejected arguments) is a tool error for the LLM. */
export async function callTool(ctx: ToolCallContext, slot: Slot, req: CallToolRequest): Promise<ToolOutcome> {
  const timeout = req.timeoutMs ?? slot.cfg.timeouts.callMs;
  const caller = callerContext.getStore();
  const outcome = await ctx.connections.withConnection(slot, req.signal, timeout, async (conn) => {
    // Known to the connection while it runs: a server's question during the call is routed to it.
    if (caller) conn.calls.add(caller);
    try {
      try {
        return normalizeResult(ctx, slot, req.tool, await requestToolCall(ctx, slot, conn, req, timeout));
      } catch (error) {
        // The server wants the user to visit pages first (-32042): ask, then call once more.
        const declined = await completeUrlElicitations(ctx, slot, req, caller, error);
        if (declined) return declined;
        return normalizeResult(ctx, slot, req.tool, await requestToolCall(ctx, slot, conn, req, timeout));
      }
    } finally {
      if (caller) conn.calls.delete(caller);
    }
  }).catch((error: unknown) => {
    // The server understood and refused (unknown tool, arguments rejected): data for the LLM.
    if (error instanceof RefusedError) {
      return { isError: true, text: `Tool "${req.tool}" on server "${req.server}" failed: ${error.reason}` };
    }
    throw error;
  });
  return outcome;
}

/**
 * A tools/call answered with `UrlElicitationRequired` (-32042): each page it lists goes to the
 * elicitation handler as a URL-mode request. Undefined when the user went to every one (the caller
 * then calls once more); a tool error when they would not; anything else rethrows `error`.
 */
async function completeUrlElicitations(
  ctx: ToolCallContext,
  slot: Slot,
  req: CallToolRequest,
  caller: CallerContext | undefined,
  error: unknown,
): Promise<ToolOutcome | undefined> {
  const elicit = ctx.elicit;
  if (!(error instanceof UrlElicitationRequiredError) || !elicit) throw error;
  for (const params of error.elicitations) {
    const result = await elicit({
      server: slot.cfg.name,
      ...(slot.principal ? { principal: slot.principal } : {}),
      params,
      signal: req.signal ?? new AbortController().signal,
      ...(caller ? { caller } : {}),
    });
    // The handler aborted the call to ask the user: the caller's signal says so.
    if (req.signal?.aborted) throw error;
    if (result.action !== 'accept') {
      return { isError: true, text: `Tool "${req.tool}" on server "${slot.cfg.name}" needs the user to open ${params.url} first; they did not (${result.action}).` };
    }
  }
  return undefined;
}

async function requestToolCall(ctx: ToolCallContext, slot: Slot, conn: Connection, req: CallToolRequest, timeout: number): Promise<unknown> {
  // One span per request sent, its trace context in `_meta` (traceparent) for the server's own traces.
  return await inMcpSpan(
    mcpOperation(slot, conn, { method: 'tools/call', tool: req.tool }),
    (traceMeta) => sendToolCall(ctx, slot, conn, { ...req, meta: { ...req.meta, ...traceMeta } }, timeout),
    (result) => ((result as { isError?: unknown } | undefined)?.isError === true ? TOOL_ERROR : undefined),
  );
}

async function sendToolCall(ctx: ToolCallContext, slot: Slot, conn: Connection, req: CallToolRequest, timeout: number): Promise<unknown> {
  if (req.resumeTask) {
    const resumed = await resumeTask(ctx, slot, conn, req.resumeTask, req.signal, timeout);
    if (resumed !== undefined) return resumed;
  }
  const params = { name: req.tool, arguments: req.arguments, ...(req.meta ? { _meta: req.meta } : {}) };
  const options = requestOptions(ctx, slot, req, timeout);
  const totalMs = Math.min(callTotalMsOf(slot.cfg), req.totalTimeoutMs ?? Infinity);
  const mode = conn.session.taskMode();
  if (mode === 'per-call') {
    // MCP 2026-07-28 with the tasks extension (tasks-v2.ts): any call may come back as a task, the
    // server's choice. It may as well be applied at once, so it is reported sent first; a task it
    // becomes is reported too (`onTask`), and a later attempt waits for that task.
    req.onSend?.();
    return await callAsTask(conn, params, { ...options, maxTotalTimeout: Math.max(options.timeout, totalMs) }, req);
  }
  // The listing is cached per connection; without one, the tool is called plainly. A connection that
  // speaks no tasks needs none: its call is one round trip.
  const listed = mode === 'per-tool' ? await listTools(ctx.connections.logger, slot, conn).catch((): Tool[] => []) : [];
  const taskSupport = listed.find((t) => t.name === req.tool)?.execution?.taskSupport;
  if (taskSupport !== 'required' && taskSupport !== 'optional') {
    req.onSend?.();
    return await callWithinTotal(conn, params, options, totalMs);
  }
  // A task's creation is reported instead (`onTask`): what a later attempt needs is the task to rejoin.
  return await callAsTask(conn, params, options, req);
}

/**
 * A plain tools/call that ends after `totalMs` however much progress the server reports (progress
 * starts only the idle timeout over). The SDK rejects such a call without telling the server, so
 * the call's own signal is aborted then: the server hears `notifications/cancelled`, and an HTTP
 * answer still streaming is dropped (transport-limits.ts).
 */
async function callWithinTotal(conn: Connection, params: ToolCallParams, options: ToolCallOptions, totalMs: number): Promise<unknown> {
  const ended = new AbortController();
  const signal = options.signal ? AbortSignal.any([options.signal, ended.signal]) : ended.signal;
  try {
    return await conn.session.callTool(params, { ...options, signal, maxTotalTimeout: Math.max(options.timeout, totalMs) });
  } catch (error) {
    if (isTotalTimeout(error)) ended.abort(error);
    throw error;
  }
}

/**
 * A tool that runs as an MCP task: the server answers at once with a task, which the SDK polls
 * until it ends. The task is reported (`onTask`) so that an attempt after a worker restart waits for
 * it instead of starting the work again; cancelling the call cancels the task.
 */
async function callAsTask(conn: Connection, params: ToolCallParams, options: ToolCallOptions, req: CallToolRequest): Promise<unknown> {
  let taskId: string | undefined;
  try {
    return await conn.session.callToolAsTask(params, options, {
      ttlMs: TASK_TTL_MS,
      onCreated: (id) => {
        taskId = id;
        conn.calls.noteTask(id, callerContext.getStore());
        const sessionId = conn.session.sessionId();
        req.onTask?.({ taskId: id, ...(sessionId ? { sessionId } : {}) });
      },
    });
  } catch (error) {
    if (taskId && req.signal?.aborted) {
      await withTimeout(conn.session.cancelTask(taskId, { timeout: PROBE_TIMEOUT_MS }).catch(noop), PROBE_TIMEOUT_MS);
    }
    throw error;
  }
}

/**
 * The result of a task an earlier attempt started, or undefined when the server no longer knows it
 * (a restarted server, an expired task): the caller then calls the tool again, with the same
 * idempotency key. A task of another Streamable HTTP session is looked up by rejoining that session.
 */
async function resumeTask(
  ctx: ToolCallContext,
  slot: Slot,
  conn: Connection,
  task: ToolTaskRef,
  signal: AbortSignal | undefined,
  timeout: number,
): Promise<unknown> {
  const logger = ctx.connections.logger;
  const rejoined =
    task.sessionId && task.sessionId !== conn.session.sessionId() && slot.cfg.kind === 'http' && conn.kind === 'streamable-http'
      ? await conn.session.rejoin(task.sessionId, slot.cfg.timeouts.connectMs)
      : undefined;
  const reader = rejoined ?? conn.session;
  try {
    const options = { ...(signal ? { signal } : {}), timeout };
    const status = await reader.getTask(task.taskId, options).catch(() => undefined);
    if (!status) return undefined;
    if (signal?.aborted) throw new McpAbortError(slot.cfg.name, signal.reason);
    logger.info({ server: slot.cfg.name, taskId: task.taskId, status: status.status }, 'resuming an MCP task an earlier attempt started');
    try {
      return await reader.getTaskResult(task.taskId, options);
    } catch (error) {
      if (signal?.aborted) await withTimeout(reader.cancelTask(task.taskId, { timeout: PROBE_TIMEOUT_MS }).catch(noop), PROBE_TIMEOUT_MS);
      throw error;
    }
  } finally {
    await rejoined?.leave();
  }
}

function requestOptions(ctx: ToolCallContext, slot: Slot, req: CallToolRequest, timeout: number): ToolCallOptions {
  const onProgress = req.onProgress;
  const onprogress = (p: { progress: number; total?: number; message?: string }): void => {
    try {
      onProgress?.({
        progress: p.progress,
        ...(p.total !== undefined ? { total: p.total } : {}),
        ...(p.message !== undefined ? { message: p.message } : {}),
      });
    } catch (error) {
      ctx.connections.logger.warn({ server: slot.cfg.name, error: String(error) }, 'progress callback threw');
    }
  };
  return { ...(req.signal ? { signal: req.signal } : {}), timeout, resetTimeoutOnProgress: true, ...(onProgress ? { onprogress } : {}) };
}

function normalizeResult(ctx: ToolCallContext, slot: Slot, tool: string, raw: unknown): ToolOutcome {
  const outcome = toToolOutcome(raw);
  if (outcome) return outcome;
  ctx.connections.logger.warn({ server: slot.cfg.name, tool }, 'tool returned a malformed result');
  throw new RefusedError('the server sent a malformed result');
}
