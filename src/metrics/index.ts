/**
 * Prometheus metrics (prom-client) of the worker and the API, in text format. The worker serves its own
 * on WORKER_METRICS_HOST:WORKER_METRICS_PORT (off unless the port is set); the API serves GET /metrics
 * to callers presenting METRICS_TOKEN (off unless it is set). Labels never carry user data: servers,
 * tools, routes, outcomes.
 */
import { timingSafeEqual } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { registerHeapLive } from './heap-live';
import type { LlmErrorClass } from '../llm/errors';
import type { McpOperationLabels } from '../telemetry/mcp-spans';
import { costOf, priceOf, type ModelPrices } from '../usage/prices';

export type LlmOutcome = 'ok' | 'retryable_error' | 'rejected' | 'cancelled';
export type ToolOutcomeLabel = 'ok' | 'tool_error' | 'transient_error' | 'permanent_error' | 'cancelled';
/** Why a tool call did not give the model a plain result; a fixed set, so labels stay bounded. */
export type ToolErrorClass =
  | 'tool_error'
  | 'invalid_arguments'
  | 'tool_missing'
  | 'server_unavailable'
  | 'authorization_required'
  | 'authorization_denied'
  | 'input_required'
  | 'transient'
  | 'outcome_unknown'
  | 'permanent';
export type ApprovalEnd = 'approved' | 'rejected' | 'timed_out' | 'cancelled';

/** Which provider and model answered a call. */
export interface ModelLabels {
  provider: string;
  model: string;
}

export type { ModelPrices } from '../usage/prices';

/** What the activities report; the worker's registry implements it. */
export interface WorkerObserver {
  /** `errorClass` for failed attempts (src/llm/errors.ts LlmErrorClass); `model`: which provider and model was asked. */
  llmCall(outcome: LlmOutcome, seconds: number, errorClass?: LlmErrorClass, model?: ModelLabels): void;
  /**
   * Tokens one model call used, as the endpoint reported them. A session's summary of its older
   * messages counts under kind `summary` (prompt and completion together), so turn tokens stay apart.
   * With `model`, also per provider and model, and priced when the host config's `prices` has it.
   */
  llmTokens(usage: { promptTokens: number; completionTokens: number; cachedTokens?: number }, purpose?: 'turn' | 'summary', model?: ModelLabels): void;
  /** `errorClass` for every outcome but ok and cancelled. */
  toolCall(server: string, tool: string, outcome: ToolOutcomeLabel, seconds: number, errorClass?: ToolErrorClass): void;
  /** One MCP request sent by the pool (`mcp.client.operation.duration`, src/telemetry/mcp-spans.ts). */
  mcpOperation(labels: McpOperationLabels, seconds: number): void;
  /** A turn ended (from the turn workflow's sink, on the worker that ran its last task). */
  turnFinished(outcome: 'completed' | 'failed' | 'cancelled', seconds: number, historyEvents: number): void;
  /** A tool call began waiting for a person's approval (turn workflow's sink); it ends by `deadline` at the latest. */
  approvalWaiting(key: string, deadline: number): void;
  /** That wait ended; a key this worker never saw waiting is only counted as decided. */
  approvalEnded(key: string, how: ApprovalEnd): void;
}

const CIRCUIT_STATE_VALUE = { closed: 0, half_open: 1, open: 2 } as const;

export function createWorkerMetrics(opts: {
  circuits: () => Array<{ server: string; state: keyof typeof CIRCUIT_STATE_VALUE }>;
  /** Prices per model for dmh_llm_cost_total (read at each call: a reloaded host config applies). */
  prices?: () => ModelPrices;
}): {
  registry: Registry;
  observer: WorkerObserver;
} {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'dmh_worker_' });
  registerHeapLive(registry, 'dmh_worker_');
  const histogram = <L extends string>(name: string, help: string, labelNames: readonly L[], buckets: number[]) =>
    new Histogram<L>({ name, help, labelNames, buckets, registers: [registry] });
  const llm = histogram('dmh_llm_call_seconds', 'LLM calls (one per activity attempt), by outcome.', ['outcome'], [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120]);
  const tool = histogram(
    'dmh_tool_call_seconds',
    'MCP tool calls (one per activity attempt), by server, tool and outcome.',
    ['server', 'tool', 'outcome'],
    [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 60],
  );
  // The MCP semantic conventions' `mcp.client.operation.duration`, with their bucket boundaries.
  const mcpOperations = histogram(
    'mcp_client_operation_duration_seconds',
    'MCP requests the worker sent, as the OpenTelemetry MCP conventions measure them: by method, server, tool or prompt, error type (empty when it succeeded), network transport and protocol revision.',
    ['mcp_method_name', 'server', 'target', 'error_type', 'network_transport', 'mcp_protocol_version'],
    [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300],
  );
  const turns = histogram(
    'dmh_turn_seconds',
    'Turns from start (queue wait in the session included) to their end, by outcome.',
    ['outcome'],
    [0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800],
  );
  const tokens = new Counter({ name: 'dmh_llm_tokens_total', help: 'Tokens of LLM calls, as the endpoint reported them, by kind (prompt, completion; summary: sessions summarizing older messages).', labelNames: ['kind'], registers: [registry] });
  const historyEvents = histogram('dmh_turn_history_events', 'History events of a turn workflow when it ended.', [], [10, 20, 40, 80, 160, 320, 640, 1280]);
  const counter = <L extends string>(name: string, help: string, labelNames: readonly L[]) => new Counter<L>({ name, help, labelNames, registers: [registry] });
  const llmErrors = counter('dmh_llm_errors_total', 'Failed LLM call attempts, by error class.', ['class']);
  const modelCalls = counter('dmh_llm_model_calls_total', 'LLM call attempts by provider, model and outcome.', ['provider', 'model', 'outcome']);
  const modelTokens = counter('dmh_llm_model_tokens_total', "Tokens by provider, model and kind (prompt, completion, cached: prompt tokens read from the provider's cache, summary).", ['provider', 'model', 'kind']);
  const cost = counter('dmh_llm_cost_total', "Cost of LLM calls by provider, model and currency, from the host config's prices (models without a price: not counted).", ['provider', 'model', 'currency']);
  const toolErrors = counter('dmh_tool_errors_total', 'Tool call attempts that did not give the model a plain result, by server, tool and error class.', ['server', 'tool', 'class']);
  const approvalsEnded = counter('dmh_approvals_decided_total', 'Approval waits that ended, by how (approved, rejected, timed_out, cancelled).', ['decision']);
  // Waits this worker saw begin, with the time they end at the latest (the policy's timeout): a
  // turn terminated mid-wait, or moved to another worker, cannot leave one counted for ever.
  const waiting = new Map<string, number>();
  new Gauge({
    name: 'dmh_approvals_pending',
    help: 'Tool calls waiting for a person to approve them, among the waits this worker saw begin.',
    registers: [registry],
    collect() {
      const now = Date.now();
      for (const [key, deadline] of waiting) if (deadline < now) waiting.delete(key);
      this.set(waiting.size);
    },
  });
  new Gauge({
    name: 'dmh_mcp_circuit_state',
    help: "The worker's circuit breaker per MCP server: 0 closed, 1 half open, 2 open.",
    labelNames: ['server'],
    registers: [registry],
    collect() {
      this.reset();
      for (const c of opts.circuits()) this.set({ server: c.server }, CIRCUIT_STATE_VALUE[c.state]);
    },
  });
  return {
    registry,
    observer: {
      mcpOperation: (l, seconds) =>
        mcpOperations.observe(
          { mcp_method_name: l.method, server: l.server, target: l.target, error_type: l.errorType, network_transport: l.transport, mcp_protocol_version: l.protocolVersion },
          seconds,
        ),
      llmCall: (outcome, seconds, errorClass, model) => {
        llm.observe({ outcome }, seconds);
        if (errorClass) llmErrors.inc({ class: errorClass });
        if (model) modelCalls.inc({ ...model, outcome });
      },
      llmTokens: (usage, purpose = 'turn', model) => {
        if (model) {
          const price = opts.prices ? priceOf(opts.prices(), model.provider, model.model) : undefined;
          if (price) cost.inc({ ...model, currency: price.currency }, costOf(price, usage.promptTokens, usage.completionTokens));
          if (usage.cachedTokens) modelTokens.inc({ ...model, kind: 'cached' }, usage.cachedTokens);
        }
        if (purpose === 'summary') {
          tokens.inc({ kind: 'summary' }, usage.promptTokens + usage.completionTokens);
          if (model) modelTokens.inc({ ...model, kind: 'summary' }, usage.promptTokens + usage.completionTokens);
          return;
        }
        tokens.inc({ kind: 'prompt' }, usage.promptTokens);
        tokens.inc({ kind: 'completion' }, usage.completionTokens);
        if (model) {
          modelTokens.inc({ ...model, kind: 'prompt' }, usage.promptTokens);
          modelTokens.inc({ ...model, kind: 'completion' }, usage.completionTokens);
        }
      },
      toolCall: (server, toolName, outcome, seconds, errorClass) => {
        tool.observe({ server, tool: toolName, outcome }, seconds);
        if (errorClass) toolErrors.inc({ server, tool: toolName, class: errorClass });
      },
      turnFinished: (outcome, seconds, events) => {
        turns.observe({ outcome }, seconds);
        historyEvents.observe(events);
      },
      approvalWaiting: (key, deadline) => void waiting.set(key, deadline),
      approvalEnded: (key, how) => {
        waiting.delete(key);
        approvalsEnded.inc({ decision: how });
      },
    },
  };
}

/** What the API's parts report; absent metrics: nothing is counted. */
export interface ApiObserver {
  /** A new turn was accepted (a repeated Idempotency-Key is not a new one). */
  turnSubmitted(kind: 'message' | 'tool_call'): void;
}

export function createApiMetrics(opts: { liveTurns?: () => number; liveSubscribers?: () => number } = {}): {
  registry: Registry;
  request(method: string, route: string, status: number, seconds: number): void;
  observer: ApiObserver;
} {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'dmh_api_' });
  registerHeapLive(registry, 'dmh_api_');
  const submitted = new Counter({ name: 'dmh_turns_submitted_total', help: 'Turns accepted by this API process, by kind.', labelNames: ['kind'], registers: [registry] });
  const gauge = (name: string, help: string, read: (() => number) | undefined) => {
    if (!read) return;
    new Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        this.set(read());
      },
    });
  };
  gauge('dmh_live_turns', "Turns whose live LLM text this API process holds (the current step's, for streams that join).", opts.liveTurns);
  gauge('dmh_live_subscribers', 'Open streams (SSE, WebSocket) following live text on this API process.', opts.liveSubscribers);
  const http = new Histogram({
    name: 'dmh_http_request_duration_seconds',
    help: 'HTTP requests by method, route pattern and status (SSE streams last as long as the turn).',
    labelNames: ['method', 'route', 'status'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 60],
    registers: [registry],
  });
  return {
    registry,
    request: (method, route, status, seconds) => http.observe({ method, route, status: String(status) }, seconds),
    observer: { turnSubmitted: (kind) => submitted.inc({ kind }) },
  };
}

/** `Authorization: Bearer <token>` compared in constant time. */
export function presentsToken(authorization: string | undefined, token: string): boolean {
  const given = Buffer.from(authorization?.replace(/^Bearer\s+/i, '') ?? '');
  const want = Buffer.from(token);
  return given.length === want.length && timingSafeEqual(given, want);
}

/**
 * The worker's metrics endpoint: GET /metrics on its own port, nothing else. `more` adds another
 * exposition to the same answer (the Temporal SDK's own metrics, which its runtime serves on a
 * loopback port of its own); when it fails, this process's metrics are still served.
 */
/**
 * Beside the metrics (a worker has no other port): GET /healthz/live always answers 200 while the
 * process runs; GET /healthz/ready (and /healthz) answer 200 or 503 with `ready()`'s body.
 */
export interface HealthEndpoints {
  ready(): { ready: boolean } & Record<string, unknown>;
}

export async function serveMetrics(registry: Registry, host: string, port: number, more?: () => Promise<string>, health?: HealthEndpoints): Promise<Server> {
  const server = createServer((req, res) => {
    const path = req.url?.split('?')[0];
    if (req.method === 'GET' && health && (path === '/healthz' || path === '/healthz/ready' || path === '/healthz/live')) {
      const body = path === '/healthz/live' ? { status: 'live', uptimeSeconds: Math.round(process.uptime()) } : health.ready();
      const status = path === '/healthz/live' || (body as { ready?: boolean }).ready ? 200 : 503;
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      return;
    }
    if (req.method !== 'GET' || path !== '/metrics') {
      res.writeHead(404).end();
      return;
    }
    Promise.all([registry.metrics(), more ? more().catch(() => '') : Promise.resolve('')]).then(
      ([own, extra]) => res.writeHead(200, { 'content-type': registry.contentType }).end(extra ? `${own}\n${extra}` : own),
      () => res.writeHead(500).end(),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  return server;
}
