/**
 * The turn without Temporal: the same planning code (src/core/host-loop.ts), the same LLM client and
 * the same McpServerHub, driven by a plain async loop in this process. It mirrors turnWorkflow and the
 * activities step for step (catalog lookup and argument validation per tool call, idempotency key in
 * `_meta`, the caller's policy filtering the tools and deciding each call, audit entries around
 * each call, parallel calls within a step) minus everything durable: no history, no task queues,
 * no serialization, no heartbeats. Turns needing human approval are out of scope: it throws. Its latency is the floor the durable turn is compared against.
 */
import type { AuditInput } from '../../src/audit';
import { buildInitialMessages, planToolCalls, toLlmTools, truncate, type PlannedCall } from '../../src/core/host-loop';
import { decideTool, filterCatalog } from '../../src/core/policy';
import type { LlmClient } from '../../src/llm/client';
import type { McpServerHub } from '../../src/mcp/pool';
import type { ArgumentValidator } from '../../src/validation/json-schema';
import { toolCallIdempotencyKey } from '../../src/shared/ids';
import { IDEMPOTENCY_KEY_META_KEY, TRACE_META_KEY, USER_CONTEXT_META_KEY } from '../../src/shared/meta';
import type { ToolOutcome } from '../../src/shared/tool-types';
import type { ChatMessage, TurnInput } from '../../src/shared/turn';

export interface InProcessDeps {
  hub: McpServerHub;
  llm: LlmClient;
  validator: ArgumentValidator;
  /** Where tool calls are audited (the worker's activities append to the same kind of log). */
  audit?: { append(entry: AuditInput): Promise<unknown> };
}

export interface InProcessResult {
  text: string;
  steps: number;
  toolCalls: number;
  failedToolCalls: number;
  /** Wall time inside LLM calls and inside tool-call phases (catalog lookups, validation, MCP calls). */
  llmMs: number;
  toolMs: number;
}

export async function runInProcessTurn(deps: InProcessDeps, input: TurnInput): Promise<InProcessResult> {
  const { options } = input;
  const catalog = await deps.hub.catalog();
  if (options.context.resources.length + options.context.prompts.length > 0) {
    throw new Error('the in-process bench loop does not gather context; use a host config without context');
  }
  const unavailable = catalog.servers.filter((s) => s.state === 'unavailable');
  if (unavailable.length > 0) throw new Error(`MCP servers unavailable: ${unavailable.map((s) => s.server).join(', ')}`);
  const { user, policy } = input;
  const visibleTools = user && policy ? filterCatalog(policy, user, catalog.tools) : catalog.tools;
  const llmTools = toLlmTools(visibleTools);
  const messages: ChatMessage[] = buildInitialMessages({
    systemPrompt: options.systemPrompt,
    context: [],
    unavailableServers: unavailable,
    history: input.history,
    userText: input.userText,
  });

  let steps = 0;
  let toolCalls = 0;
  let failedToolCalls = 0;
  let llmMs = 0;
  let toolMs = 0;
  for (;;) {
    steps += 1;
    const step = steps;
    const offerTools = step <= options.maxSteps;
    const t0 = performance.now();
    const response = await deps.llm.complete({ turnId: input.turnId, step, messages, tools: offerTools ? llmTools : [] });
    llmMs += performance.now() - t0;
    if (response.toolCalls.length === 0 || !offerTools) {
      return { text: response.text ?? '', steps, toolCalls, failedToolCalls, llmMs, toolMs };
    }
    messages.push({ role: 'assistant', content: response.text, toolCalls: response.toolCalls });
    const planned = planToolCalls(response.toolCalls, catalog.tools, visibleTools);
    const t1 = performance.now();
    const outcomes = await Promise.all(planned.map((p) => callTool(p, step)));
    toolMs += performance.now() - t1;
    planned.forEach((p, i) => {
      const outcome = outcomes[i] as ToolOutcome;
      toolCalls += 1;
      if (outcome.isError) failedToolCalls += 1;
      const content = outcome.isError ? `Error: ${outcome.text}` : outcome.text;
      messages.push({ role: 'tool', toolCallId: p.call.id, content: truncate(content, options.maxToolResultChars) });
    });
  }

  /** What the callTool activity does, without the activity context. */
  async function callTool(p: PlannedCall, step: number): Promise<ToolOutcome> {
    if (p.kind === 'reject') return { isError: true, text: p.reason };
    const decision = user && policy ? decideTool(policy, user, p.tool.server, p.tool.tool) : undefined;
    if (decision && !decision.allowed) return { isError: true, text: `Denied by policy: ${decision.reason}` };
    if (decision?.needsApproval) throw new Error(`the bench does not approve tool calls (${p.tool.name})`);
    const current = await deps.hub.catalog();
    const entry = current.tools.find((t) => t.server === p.tool.server && t.tool === p.tool.tool);
    if (!entry) return { isError: true, text: `Tool ${p.tool.tool} no longer exists on server ${p.tool.server}.` };
    const check = deps.validator.validate(entry.inputSchema, p.arguments);
    if (!check.ok) return { isError: true, text: `Invalid arguments for ${p.tool.name}: ${check.message}` };
    const auditBase = user
      ? {
          actor: { id: user.id, role: user.role, tenant: user.tenant },
          server: p.tool.server,
          tool: p.tool.tool,
          workflowId: input.turnId,
          attempt: 1,
          toolCallId: p.call.id,
        }
      : undefined;
    if (auditBase) await deps.audit?.append({ ...auditBase, kind: 'tool_call', args: p.arguments });
    const outcome = await deps.hub.callTool({
      server: p.tool.server,
      tool: p.tool.tool,
      arguments: p.arguments,
      meta: {
        [IDEMPOTENCY_KEY_META_KEY]: toolCallIdempotencyKey(input.turnId, step, p.call.id),
        [TRACE_META_KEY]: input.turnId,
        ...(user
          ? { [USER_CONTEXT_META_KEY]: { id: user.id, role: user.role, tenant: user.tenant, scopes: user.scopes, traceId: input.turnId } }
          : {}),
      },
    });
    if (auditBase) {
      await deps.audit?.append({ ...auditBase, kind: 'tool_result', outcome: outcome.isError ? 'error' : 'ok', detail: outcome.text.slice(0, 200) });
    }
    return outcome;
  }
}
