/**
 * A server's requests to the host during tool calls (`elicitation/create`, `sampling/createMessage`),
 * and whose they are. The answer is the calling user's, so a request reaches the tool call it
 * belongs to, or no call at all (the handler then hears no caller, and the worker's handlers decline
 * or refuse: src/mcp/elicitation.ts, src/mcp/sampling.ts). A request is a call's when:
 *
 * - it came on that call's own stream: over Streamable HTTP, a request related to a call comes on the
 *   call's POST response stream, whose messages the SDK hands over in the call's async context
 *   (`callerContext`). One that comes on the stream of a call no longer in flight is nobody's;
 * - it names the task of a call in flight (MCP tasks' `related-task` in its `_meta`);
 * - it came on a stream of the connection's own (Streamable HTTP's standalone GET stream, legacy
 *   SSE's event stream, stdio), opened in a context of its own (`connectionContext`), and the
 *   connection has exactly one call in flight: that call's user is the only one the host could ask
 *   (a server that sends its question there, as the conformance suite's does, is answered as any
 *   single-user client would). With two in flight it is nobody's, even on a server the users share:
 *   guessing could hand one user's question to another.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  RELATED_TASK_META_KEY,
  type CreateMessageRequest,
  type CreateMessageResult,
  type ElicitRequest,
  type ElicitResult,
} from '@modelcontextprotocol/sdk/types.js';
import { callerContext, type CallerContext } from './user-token';

export interface ElicitationRequest {
  server: string;
  /** The user the request is for, on a per-user server. */
  principal?: string;
  params: ElicitRequest['params'];
  signal: AbortSignal;
  /** The tool call the question belongs to (see the top of this file); absent when no call can be told for sure. */
  caller?: CallerContext;
}

export type ElicitationHandler = (request: ElicitationRequest) => Promise<ElicitResult>;

export interface SamplingRequest {
  server: string;
  params: CreateMessageRequest['params'];
  signal: AbortSignal;
  /** The tool call the request belongs to, found as for elicitation. */
  caller?: CallerContext;
}

export type SamplingHandler = (request: SamplingRequest) => Promise<CreateMessageResult>;

/**
 * The context a connection is opened in: the opening caller's credentials, which the handshake's own
 * requests need (a forwarded token, the user and turn an authorization is for), in a new object that
 * is no call's, so the streams the connection keeps open (Streamable HTTP's GET stream, legacy SSE's
 * event stream, a stdio child's output) never carry a call's context.
 */
export function connectionContext(caller: CallerContext | undefined): CallerContext {
  const context = {
    ...(caller?.token ? { token: caller.token } : {}),
    ...(caller?.principal ? { principal: caller.principal } : {}),
    ...(caller?.turnId ? { turnId: caller.turnId } : {}),
  };
  connectionContexts.add(context);
  return context;
}

/** The contexts connections were opened in: a request arriving in one came on no call's stream. */
const connectionContexts = new WeakSet<CallerContext>();

/** The tool calls in flight on one connection, by caller, and the MCP tasks they started. */
export class CallsInFlight {
  private readonly callers = new Set<CallerContext>();
  private readonly tasks = new Map<string, CallerContext>();

  add(caller: CallerContext): void {
    this.callers.add(caller);
  }

  delete(caller: CallerContext): void {
    this.callers.delete(caller);
    for (const [taskId, owner] of this.tasks) if (owner === caller) this.tasks.delete(taskId);
  }

  /** The call running as task `taskId` (a server may name it in a request's `_meta`). */
  noteTask(taskId: string, caller: CallerContext | undefined): void {
    if (caller && this.callers.has(caller)) this.tasks.set(taskId, caller);
  }

  /**
   * The call a server's request belongs to: `store` is the async context the request arrived in,
   * `meta` its params' `_meta`. Undefined when no call can be told for sure, or two would fit.
   */
  callerOf(meta: Record<string, unknown> | undefined, store: CallerContext | undefined = callerContext.getStore()): CallerContext | undefined {
    const byStream = store && this.callers.has(store) ? store : undefined;
    const taskId = relatedTaskId(meta);
    const byTask = taskId === undefined ? undefined : this.tasks.get(taskId);
    if (byStream && byTask) return byStream === byTask ? byStream : undefined;
    // A request naming a task that is no call's in flight here is nobody's: no guessing below.
    if (byStream || taskId !== undefined) return byStream ?? byTask;
    // On the stream of a call that has ended: that call's, and it is gone.
    if (store && !connectionContexts.has(store)) return undefined;
    return this.callers.size === 1 ? [...this.callers][0] : undefined;
  }
}

function relatedTaskId(meta: Record<string, unknown> | undefined): string | undefined {
  const related = meta?.[RELATED_TASK_META_KEY];
  const taskId = related && typeof related === 'object' ? (related as { taskId?: unknown }).taskId : undefined;
  return typeof taskId === 'string' ? taskId : undefined;
}

export interface ServerRequestOptions {
  server: string;
  /** The user a per-user server's connection is for. */
  principal?: string;
  calls: CallsInFlight;
  elicit?: ElicitationHandler;
  sample?: SamplingHandler;
  debug: (obj: object, msg: string) => void;
}

/** Answers a connection's server-to-host requests with the host's handlers, each for the call it belongs to. */
export function answerServerRequests(client: Client, opts: ServerRequestOptions): void {
  const { server, calls, elicit, sample } = opts;
  const callerFor = (method: string, meta: Record<string, unknown> | undefined): { caller?: CallerContext } => {
    const caller = calls.callerOf(meta);
    if (caller) return { caller };
    opts.debug({ server, method }, 'server request tied to no tool call in flight: answered for no caller');
    return {};
  };
  if (sample) {
    client.setRequestHandler(CreateMessageRequestSchema, (request, extra) =>
      sample({ server, params: request.params, signal: extra.signal, ...callerFor(request.method, extra._meta) }),
    );
  }
  if (elicit) {
    client.setRequestHandler(ElicitRequestSchema, (request, extra) =>
      elicit({
        server,
        ...(opts.principal ? { principal: opts.principal } : {}),
        params: request.params,
        signal: extra.signal,
        ...callerFor(request.method, extra._meta),
      }),
    );
  }
}
