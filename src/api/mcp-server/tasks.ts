/**
 * MCP tasks on the 2025-11-25 wire, for `chat`: a task-augmented `tools/call` returns a task at once,
 * and `tasks/get`, `tasks/result`, `tasks/cancel`, `tasks/list` answer from the turn's workflow. The
 * task id is the turn id, and a task's state is the turn's, so a task survives an API restart and any
 * replica answers for it: nothing about it lives in this process.
 *
 * The SDK's v2 server has no runtime for these methods (it keeps them as wire vocabulary only), so the
 * route hands such requests here before the SDK sees them; they are plain JSON-RPC requests answered
 * with JSON. Task results of the 2026-07-28 tasks extension are not served yet.
 */
import { z } from 'zod';
import type { CallToolResult } from '@modelcontextprotocol/server';
import type { UserContext } from '../../shared/user';
import { TERMINAL_STATUSES, type TurnState, type TurnStatus } from '../../shared/turn';
import type { LiveTextHub } from '../../live/hub';
import { HttpError } from '../errors';
import { TurnId } from '../contract';
import type { TurnGateway } from '../gateway';
import { followTurn } from '../turn-follower';
import type { TurnService } from '../turns';
import { chatInput, chatResult, idempotencyKeyOf, startChatTurn } from './chat';

export interface TaskDeps {
  service: TurnService;
  gateway: Pick<TurnGateway, 'getTurn'>;
  live?: LiveTextHub;
  pollMs: number;
  maxMessageChars: number;
}

type JsonRpcId = string | number;
type Answer = { jsonrpc: '2.0'; id: JsonRpcId; result: Record<string, unknown> } | { jsonrpc: '2.0'; id: JsonRpcId; error: { code: number; message: string } };

const TASK_METHODS = new Set(['tasks/get', 'tasks/result', 'tasks/cancel', 'tasks/list']);
const RELATED_TASK = 'io.modelcontextprotocol/related-task';
/** How often a client should poll a task (ms): a turn step takes about this long. */
const POLL_INTERVAL_MS = 1_000;
const INVALID_PARAMS = -32602;
const LIST_LIMIT = 100;

const Request = z.object({ jsonrpc: z.literal('2.0'), id: z.union([z.string(), z.number()]), method: z.string(), params: z.record(z.string(), z.unknown()).optional() });
const TaskParams = z.object({ taskId: TurnId });

/**
 * Whether a parsed POST body is a 2025-11-25 task request this module answers: a task method, or a
 * `tools/call` with `params.task`. A request carrying the 2026-07-28 envelope is the SDK's.
 */
export function isTaskRequest(body: unknown): boolean {
  const r = Request.safeParse(body);
  if (!r.success) return false;
  const meta = r.data.params?.['_meta'] as Record<string, unknown> | undefined;
  if (meta?.['io.modelcontextprotocol/protocolVersion'] !== undefined) return false;
  return TASK_METHODS.has(r.data.method) || (r.data.method === 'tools/call' && r.data.params?.['task'] !== undefined);
}

const TASK_STATUS: Record<TurnStatus, string> = {
  running: 'working',
  awaiting_approval: 'input_required',
  completed: 'completed',
  failed: 'failed',
  cancelled: 'cancelled',
};

/** The task a turn is, in the 2025-11-25 `Task` shape. */
function taskOf(state: Pick<TurnState, 'turnId' | 'status' | 'events' | 'error'>, fallbackAt = new Date().toISOString()): Record<string, unknown> {
  const createdAt = state.events[0]?.at ?? fallbackAt;
  const message =
    state.status === 'awaiting_approval' ? 'A tool call waits for a decision (list_approvals, decide_approval).' : state.error?.message;
  return {
    taskId: state.turnId,
    status: TASK_STATUS[state.status],
    ...(message ? { statusMessage: message } : {}),
    createdAt,
    lastUpdatedAt: state.events.at(-1)?.at ?? createdAt,
    // Kept as long as Temporal retains the turn's workflow (the namespace's retention).
    ttl: null,
    pollInterval: POLL_INTERVAL_MS,
  };
}

export function createTaskEndpoint(deps: TaskDeps) {
  const { service } = deps;
  const ChatArgs = chatInput(deps.maxMessageChars);

  const waitForEnd = async (user: UserContext, turnId: string, signal: AbortSignal): Promise<void> => {
    const feed = followTurn({ gateway: deps.gateway, ...(deps.live ? { live: deps.live } : {}) }, { turnId, pollMs: deps.pollMs, missingPolls: 20 });
    const stop = () => feed.stop();
    signal.addEventListener('abort', stop, { once: true });
    try {
      for await (const item of feed) if (item.type === 'end') break;
    } finally {
      signal.removeEventListener('abort', stop);
      feed.stop();
    }
    // The caller's own turn, or a 404: the feed itself does not check ownership.
    await service.turn(user, turnId);
  };

  const methods: Record<string, (user: UserContext, token: string, params: Record<string, unknown>, signal: AbortSignal) => Promise<Record<string, unknown>>> = {
    async 'tools/call'(user, token, params) {
      if (params['name'] !== 'chat') throw new HttpError(400, 'invalid_params', `Tool ${String(params['name'])} does not run as a task; call it without params.task.`);
      const args = ChatArgs.safeParse(params['arguments'] ?? {});
      if (!args.success) throw new HttpError(400, 'invalid_params', `Invalid arguments for tool chat: ${args.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
      const key = idempotencyKeyOf(params['_meta'] as Record<string, unknown> | undefined);
      if ('error' in key) throw new HttpError(400, 'invalid_params', key.error);
      const { turnId } = await startChatTurn(service, user, token, { ...args.data, idempotencyKey: key.key });
      const state = await service.turn(user, turnId).catch(() => undefined);
      return { task: state ? taskOf(state) : taskOf({ turnId, status: 'running', events: [] }) };
    },
    async 'tasks/get'(user, _token, params) {
      return taskOf(await service.turn(user, TaskParams.parse(params).taskId));
    },
    async 'tasks/result'(user, _token, params, signal) {
      const { taskId } = TaskParams.parse(params);
      await waitForEnd(user, taskId, signal);
      const result: CallToolResult = chatResult(await service.view(user, taskId));
      return { ...result, _meta: { [RELATED_TASK]: { taskId } } };
    },
    async 'tasks/cancel'(user, _token, params) {
      const { taskId } = TaskParams.parse(params);
      const before = await service.turn(user, taskId);
      if (TERMINAL_STATUSES.includes(before.status)) {
        throw new HttpError(400, 'invalid_params', `Task ${taskId} is already ${TASK_STATUS[before.status]}; a finished task cannot be cancelled.`);
      }
      await service.cancel(user, taskId);
      // The turn stops at its next step; the task is cancelled from the caller's side now.
      return { ...taskOf(before), status: 'cancelled', lastUpdatedAt: new Date().toISOString() };
    },
    async 'tasks/list'(user) {
      const turns = await service.turns(user, LIST_LIMIT);
      const tasks = await Promise.all(turns.map(async (t) => taskOf(await service.turn(user, t.turnId), t.startedAt)));
      return { tasks };
    },
  };

  /** Answers one task request (isTaskRequest said it is one) for a verified caller. */
  return async function answer(user: UserContext, token: string, body: unknown, signal: AbortSignal): Promise<Answer> {
    const request = Request.parse(body);
    const method = methods[request.method];
    if (!method) return { jsonrpc: '2.0', id: request.id, error: { code: -32601, message: `Method not found: ${request.method}` } };
    try {
      return { jsonrpc: '2.0', id: request.id, result: await method(user, token, request.params ?? {}, signal) };
    } catch (err) {
      if (err instanceof z.ZodError) return { jsonrpc: '2.0', id: request.id, error: { code: INVALID_PARAMS, message: `Invalid params: ${err.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}` } };
      if (err instanceof HttpError && err.statusCode < 500) return { jsonrpc: '2.0', id: request.id, error: { code: INVALID_PARAMS, message: err.message } };
      throw err;
    }
  };
}
