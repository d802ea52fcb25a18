/**
 * A 2026-07-28 server that offers the MCP tasks extension (`io.modelcontextprotocol/tasks`), for the
 * host's tasks on that revision (decision 0038). The v2 server package (2.4.0) has no tasks of its own
 * and `ext-tasks` (0.2.2) is a requester's package, so the receiver side is written here on the
 * server's public seams: the capability in its discovery, a tool that answers a `tools/call` declaring
 * the extension with a task (`resultType: "task"`), and `tasks/get` / `tasks/update` / `tasks/cancel`.
 *
 * The test decides when a task ends (`finish`), so nothing hangs on time; `research` asks nothing,
 * `approve` asks the user inside its task (`input_required` task status, answered by `tasks/update`).
 */
import { randomUUID } from 'node:crypto';
import { ProtocolError, Server } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { serveModern } from './modern-server';

export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
const CLIENT_CAPABILITIES_META = 'io.modelcontextprotocol/clientCapabilities';

type Status = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';

export interface ServedTask {
  taskId: string;
  tool: string;
  status: Status;
  text: string;
  createdAt: string;
  lastUpdatedAt: string;
  /** What the task asks while `input_required`. */
  inputRequests?: Record<string, unknown>;
  /** What the client answered (`tasks/update`). */
  answers?: Record<string, unknown>;
}

export interface TaskServerState {
  /** Every `tools/call`, by tool, and whether it declared the tasks extension. */
  calls: { tool: string; declared: boolean }[];
  tasks: Map<string, ServedTask>;
  /** `tasks/get` requests answered, and the tasks `tasks/cancel` named. */
  gets: number;
  cancels: string[];
}

export const newTaskServerState = (): TaskServerState => ({ calls: [], tasks: new Map(), gets: 0, cancels: [] });

/** Ends a working task with its result (the work is done when the test says so). */
export function finish(state: TaskServerState, taskId: string): void {
  const task = state.tasks.get(taskId);
  if (!task || task.status !== 'working') throw new Error(`task ${taskId} is not working (${task?.status ?? 'unknown'})`);
  task.status = 'completed';
  task.lastUpdatedAt = new Date().toISOString();
}

function declaresTasks(envelope: unknown): boolean {
  const caps = (envelope as Record<string, { extensions?: Record<string, unknown> } | undefined> | undefined)?.[CLIENT_CAPABILITIES_META];
  return caps?.extensions?.[TASKS_EXTENSION] !== undefined;
}

const wire = (task: ServedTask) => ({
  taskId: task.taskId,
  status: task.status,
  createdAt: task.createdAt,
  lastUpdatedAt: task.lastUpdatedAt,
  ttlMs: 3_600_000,
  pollIntervalMs: 20,
  ...(task.status === 'input_required' ? { inputRequests: task.inputRequests } : {}),
  ...(task.status === 'completed' ? { result: { content: [{ type: 'text', text: task.text }] } } : {}),
});

function createTask(state: TaskServerState, tool: string, text: string, inputRequests?: Record<string, unknown>): Record<string, unknown> {
  const now = new Date().toISOString();
  const task: ServedTask = { taskId: randomUUID(), tool, status: inputRequests ? 'input_required' : 'working', text, createdAt: now, lastUpdatedAt: now, ...(inputRequests ? { inputRequests } : {}) };
  state.tasks.set(task.taskId, task);
  return { resultType: 'task', ...wire(task) };
}

const TOOLS = [
  { name: 'research', description: 'Researches a topic, as a task when the client speaks tasks.', property: 'topic' },
  { name: 'approve', description: 'Asks the user to approve, inside its task.', property: 'what' },
  { name: 'greet', description: 'Greets at once, never as a task.', property: 'name' },
];

/** A tools/call: the tool's answer, a task's creation among them. */
function callTool(state: TaskServerState, params: { name?: unknown; arguments?: Record<string, unknown> }, envelope: unknown): Record<string, unknown> {
  const declared = declaresTasks(envelope);
  const tool = String(params.name);
  state.calls.push({ tool, declared });
  const arg = String(Object.values(params.arguments ?? {})[0] ?? '');
  if (tool === 'greet') return { content: [{ type: 'text', text: `Hello, ${arg}.` }] };
  if (tool === 'research') return declared ? createTask(state, tool, `Report on ${arg}.`) : { content: [{ type: 'text', text: `Report on ${arg}. (no task)` }] };
  if (tool === 'approve') {
    const ask = { method: 'elicitation/create', params: { mode: 'form', message: `Approve ${arg}?`, requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] } } };
    return createTask(state, tool, `Approval of ${arg}`, { approval: ask });
  }
  throw new ProtocolError(-32602, `unknown tool ${tool}`);
}

export function createTasksServer(state: TaskServerState): Server {
  // The low-level server: the SDK checks what a registered tools/call handler returns against the
  // plain result's schema, which a task (`resultType: "task"`, no `content`) is not. An unregistered
  // method reaches the fallback handler unchecked, and a tools/call result's own `resultType` is kept.
  const server = new Server({ name: 'modern-tasks-server', version: '1.0.0' }, { capabilities: { tools: {}, extensions: { [TASKS_EXTENSION]: {} } } });
  server.setRequestHandler('tools/list', () => ({
    tools: TOOLS.map((t) => ({ name: t.name, description: t.description, inputSchema: { type: 'object' as const, properties: { [t.property]: { type: 'string' } }, required: [t.property] } })),
  }));
  server.fallbackRequestHandler = async (request, ctx) => {
    if (request.method !== 'tools/call') throw new ProtocolError(-32601, `Method not found: ${request.method}`);
    // A plain answer's progress goes to the token the request carries.
    const progressToken = (request.params?._meta as { progressToken?: string | number } | undefined)?.progressToken;
    if (progressToken !== undefined) await ctx.mcpReq.notify({ method: 'notifications/progress', params: { progressToken, progress: 1, total: 1, message: 'working' } });
    // The SDK lifts the request's envelope (revision, client info and capabilities) out of its `_meta`.
    return callTool(state, (request.params ?? {}) as Parameters<typeof callTool>[1], ctx.mcpReq.envelope) as never;
  };

  const byId = z.looseObject({ taskId: z.string() });
  const known = (taskId: string): ServedTask => {
    const task = state.tasks.get(taskId);
    if (!task) throw new ProtocolError(-32602, `unknown task ${taskId}`);
    return task;
  };
  server.setRequestHandler('tasks/get', { params: byId }, ({ taskId }) => {
    state.gets += 1;
    return { resultType: 'complete', ...wire(known(taskId)) };
  });
  // The SDK lifts `inputResponses` out of any request's params (as for a call's retry): they are in the context.
  server.setRequestHandler('tasks/update', { params: byId }, ({ taskId }, ctx) => {
    const task = known(taskId);
    const inputResponses = ctx.mcpReq.inputResponses ?? {};
    if (task.status === 'input_required') {
      const answer = inputResponses['approval'] as { action?: string; content?: { ok?: boolean } } | undefined;
      task.answers = inputResponses;
      task.status = 'completed';
      task.text = `${task.text}: ${answer?.action === 'accept' && answer.content?.ok ? 'approved' : 'not approved'}.`;
      task.lastUpdatedAt = new Date().toISOString();
    }
    return { resultType: 'complete' };
  });
  server.setRequestHandler('tasks/cancel', { params: byId }, ({ taskId }) => {
    const task = known(taskId);
    state.cancels.push(taskId);
    if (task.status === 'working' || task.status === 'input_required') task.status = 'cancelled';
    return { resultType: 'complete' };
  });
  return server;
}

export async function startTasksServer(state = newTaskServerState()): Promise<{ url: string; state: TaskServerState; close(): Promise<void> }> {
  return await serveModern(state, () => createTasksServer(state));
}
