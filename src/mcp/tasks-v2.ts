/**
 * MCP tasks on a 2026-07-28 connection: the tasks extension (`io.modelcontextprotocol/tasks`), spoken
 * through the `ext-tasks` package (decision 0038).
 *
 * On this revision a task is the server's choice, per call: a client that declares the extension in a
 * request's `_meta` may get a task (`resultType: "task"`) instead of the result of any `tools/call`,
 * and follows it with `tasks/get` (the result comes inline once the task ends), `tasks/update` (the
 * answers to what a task asks) and `tasks/cancel`. So once a server's discovery offers the extension,
 * every tool call goes out declaring it; the package frames the requests and reads the tasks, and
 * raw-requests.ts carries them past the v2 client, which refuses a result kind it does not know.
 *
 * What the pool keeps of a task is its id alone (no session on this revision): an attempt after a
 * worker restart looks the task up by id on whatever connection it has (tool-calls.ts).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client, Transport } from '@modelcontextprotocol/client';
import type { JsonRpcResponse, TaskController } from '@modelcontextprotocol/ext-tasks/client';
import { tasksClient, tasksCore, tasksCoreV2 } from './ext-tasks';
import type { InputRequired, InputRetry } from './input-required';
import { installRawRequests, type RawRequestOptions } from './raw-requests';
import type { RequestLimits, ToolCallOptions, ToolCallParams } from './session';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';

/** How long a task request waits when the package names no timeout (`tasks/get` on resume names one). */
const TASK_REQUEST_MS = 30_000;
/** How often a task is polled when the server suggests nothing. */
const DEFAULT_POLL_MS = 1_000;
const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

/** A completed task's result is handed on as the server sent it (the caller checks it: render.ts). */
const asSent = { parse: (value: unknown) => ({ success: true as const, value }) };

/** Whether a server's discovered capabilities offer the tasks extension. */
export function offersTasks(capabilities: unknown): boolean {
  return tasksCoreV2.hasTaskServerCapabilityV2(capabilities);
}

export interface V2TaskOptions {
  /** The server's name: the package scopes task references by it. */
  endpointId: string;
  revision: string;
  clientInfo: { name: string; version: string };
  clientCapabilities: Record<string, unknown>;
  /** Answers what a call or a task asks for (input-required.ts), or stops the call to ask the user. */
  answer(asked: InputRequired, signal: AbortSignal | undefined): Promise<InputRetry>;
}

export interface V2Tasks {
  /**
   * One round of a `tools/call` that declares the extension: the server's answer as sent (a result,
   * or `input_required`), or, when it made a task, the task's result once it ends (`onCreated` first).
   */
  callRound(params: ToolCallParams & Partial<InputRetry>, options: ToolCallOptions, task: { onCreated(taskId: string): void }): Promise<unknown>;
  getTask(taskId: string, limits: RequestLimits): Promise<{ status: string }>;
  /** Follows the task to its end (answering what it asks) and resolves with its tool result. */
  getTaskResult(taskId: string, limits: RequestLimits): Promise<unknown>;
  cancelTask(taskId: string, limits: { timeout: number }): Promise<unknown>;
  close(): Promise<void>;
}

/** The package wraps whatever a dispatch threw; the pool classifies the error underneath (failures.ts). */
function unwrap(error: unknown): unknown {
  return error instanceof tasksClient.DispatchError && error.cause !== undefined ? error.cause : error;
}

async function unwrapped<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    throw unwrap(error);
  }
}

/** Tasks on a connected 2026-07-28 client whose server offers the extension. */
export function openV2Tasks(client: Client, transport: Transport, opts: V2TaskOptions): V2Tasks {
  const raw = installRawRequests(transport, 'host-task');
  // A tool call's own limits and progress, found by the progress token it carries through the package.
  const calls = new Map<string, RawRequestOptions>();
  let callSeq = 0;
  const port = tasksClient.createSessionPortFromClient(client, opts.endpointId, {
    rawDispatch: async (request, options) => {
      const params = (request as { params?: { _meta?: { progressToken?: unknown } } }).params;
      const token = params?._meta?.progressToken;
      const limits = (typeof token === 'string' ? calls.get(token) : undefined) ?? { timeoutMs: options?.context?.requestTimeoutMs ?? TASK_REQUEST_MS };
      const signal = options?.signal ?? limits.signal;
      return (await raw.send(request as { method: string; params?: Record<string, unknown> }, { ...limits, ...(signal ? { signal } : {}) })) as JsonRpcResponse;
    },
    v2RequestFraming: {
      protocolVersion: opts.revision,
      clientInfo: opts.clientInfo,
      clientCapabilities: opts.clientCapabilities as never,
    },
  });
  // The tool listing is the pool's (server-listing.ts): the package needs no declarations of its own.
  const session = tasksClient.withTasks(port, { tools: { currentTool: () => undefined } });
  const controller = (taskId: string, timeout: number): TaskController => session.task(tasksCore.taskId(taskId), { requestTimeoutMs: timeout });

  async function follow(taskId: string, limits: RequestLimits): Promise<unknown> {
    const task = controller(taskId, limits.timeout);
    for (;;) {
      const view = await task.snapshot(limits.signal);
      if (TERMINAL.has(view.status)) break;
      if (view.status === 'input_required') {
        const retry = await opts.answer({ inputRequests: view.raw['inputRequests'] as Record<string, unknown> }, limits.signal);
        await task.updateJson(retry.inputResponses, limits.signal);
        continue;
      }
      await sleep(view.suggestedPollIntervalMs ?? DEFAULT_POLL_MS, undefined, limits.signal ? { signal: limits.signal } : {});
    }
    const outcome = await task.result({ resultCodec: asSent, ...(limits.signal ? { signal: limits.signal } : {}) });
    if (outcome.status === 'completed') return outcome.result;
    if (outcome.status === 'failed') throw new McpError(outcome.error.code ?? ErrorCode.InternalError, outcome.error.message, outcome.error.data);
    throw new McpError(ErrorCode.InternalError, `the server cancelled task ${taskId}`);
  }

  return {
    callRound: (params, options, task) =>
      unwrapped(async () => {
        const token = `host-call-${++callSeq}`;
        calls.set(token, {
          timeoutMs: options.timeout,
          ...(options.signal ? { signal: options.signal } : {}),
          ...(options.onprogress ? { onprogress: options.onprogress } : {}),
          ...(options.resetTimeoutOnProgress !== undefined ? { resetTimeoutOnProgress: options.resetTimeoutOnProgress } : {}),
          ...(options.maxTotalTimeout !== undefined ? { maxTotalTimeout: options.maxTotalTimeout } : {}),
        });
        let response: JsonRpcResponse;
        try {
          const request = { ...params, _meta: { ...params._meta, progressToken: token } };
          response = await port.dispatch({ method: 'tools/call', params: request as never }, options.signal ? { signal: options.signal } : {});
        } finally {
          calls.delete(token);
        }
        if (response.kind === 'error') throw new McpError(response.error.code, response.error.message, response.error.data);
        if (!tasksCoreV2.isCreateTaskResultV2(response.result)) return response.result;
        const taskId = response.result.taskId;
        task.onCreated(taskId);
        return await follow(taskId, options);
      }),
    getTask: (taskId, limits) => unwrapped(async () => ({ status: (await controller(taskId, limits.timeout).snapshot(limits.signal)).status })),
    getTaskResult: (taskId, limits) => unwrapped(() => follow(taskId, limits)),
    cancelTask: (taskId, limits) => unwrapped(() => controller(taskId, limits.timeout).cancel(AbortSignal.timeout(limits.timeout))),
    close: () => session.close(),
  };
}
