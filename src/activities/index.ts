import { ApplicationFailure, CancelledFailure, Context } from '@temporalio/activity';
import type { LlmClient } from '../llm/client';
import { classifyLlmError, redact } from '../llm/errors';
import type { McpContextSource } from '../mcp/context-source';
import type { McpHub } from '../mcp/types';
import type { ContextPiece } from '../core/host-loop';
import { IDEMPOTENCY_KEY_META_KEY, TRACE_META_KEY } from '../shared/meta';
import type { Catalog, ToolOutcome } from '../shared/tool-types';
import type { ContextSpec, LlmRequest, LlmResponse } from '../shared/turn';
import type { Logger } from '../logger';

export interface ArgumentCheck {
  validate(schema: Record<string, unknown>, args: unknown): { ok: true } | { ok: false; message: string };
}

export interface ActivityDeps {
  hub: McpHub & McpContextSource;
  llm: LlmClient;
  validator: ArgumentCheck;
  logger: Logger;
  /** Values that must never leave the worker (keys, tokens); scrubbed from error messages. */
  secrets: readonly string[];
  /** How often a long call heartbeats even without progress, so a dead worker is noticed quickly. */
  heartbeatEveryMs?: number;
}

export interface ToolCallInput {
  turnId: string;
  server: string;
  tool: string;
  llmName: string;
  arguments: Record<string, unknown>;
  idempotencyKey: string;
}

export interface GatheredContext {
  pieces: ContextPiece[];
  failures: { server: string; ref: string; error: string }[];
}

/** Activities are closures over the worker's long-lived dependencies; the worker owns their lifetimes. */
export function createActivities(deps: ActivityDeps) {
  const heartbeatEveryMs = deps.heartbeatEveryMs ?? 5_000;
  const scrub = (text: string) => redact(text, deps.secrets);

  /** Heartbeats on a timer while `work` runs; returns what `work` returns. */
  async function withHeartbeats<T>(work: (beat: (details?: unknown) => void) => Promise<T>): Promise<T> {
    const ctx = Context.current();
    const beat = (details?: unknown) => ctx.heartbeat(details);
    const timer = setInterval(() => beat(), heartbeatEveryMs);
    try {
      return await work(beat);
    } finally {
      clearInterval(timer);
    }
  }

  return {
    async listCatalog(): Promise<Catalog> {
      return await deps.hub.catalog();
    },

    async gatherContext(spec: ContextSpec): Promise<GatheredContext> {
      const signal = Context.current().cancellationSignal;
      const jobs: Promise<ContextPiece>[] = [
        ...spec.resources.map(async (r): Promise<ContextPiece> => ({
          kind: 'resource',
          server: r.server,
          ref: r.uri,
          text: await deps.hub.readResource(r.server, r.uri, { signal }),
        })),
        ...spec.prompts.map(async (p): Promise<ContextPiece> => ({
          kind: 'prompt',
          server: p.server,
          ref: p.name,
          text: await deps.hub.getPrompt(p.server, p.name, p.arguments, { signal }),
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

    async callLlm(req: LlmRequest): Promise<LlmResponse> {
      const ctx = Context.current();
      return await withHeartbeats(async (beat) => {
        let lastBeat = 0;
        try {
          return await deps.llm.complete(req, {
            signal: ctx.cancellationSignal,
            onChunk: () => {
              const now = Date.now();
              if (now - lastBeat > 1_000) {
                lastBeat = now;
                beat();
              }
            },
          });
        } catch (err) {
          // A cancelled turn is not an LLM failure: report the cancellation as such.
          if (ctx.cancellationSignal.aborted) throw new CancelledFailure('LLM call cancelled');
          const failure = classifyLlmError(err, deps.secrets);
          deps.logger.warn(
            { turnId: req.turnId, step: req.step, attempt: ctx.info.attempt, status: failure.status, retryable: failure.retryable },
            `LLM call failed: ${failure.message}`,
          );
          if (!failure.retryable) throw ApplicationFailure.nonRetryable(failure.message, 'LlmRequestRejected');
          throw ApplicationFailure.create({
            message: failure.message,
            type: 'LlmUnavailable',
            // A zero delay would end the retries; no hint means the policy's backoff applies.
            nextRetryDelay: failure.retryAfterMs ? failure.retryAfterMs : undefined,
          });
        }
      });
    },

    async callTool(input: ToolCallInput): Promise<ToolOutcome> {
      const ctx = Context.current();
      const catalog = await deps.hub.catalog();
      const entry = catalog.tools.find((t) => t.server === input.server && t.tool === input.tool);
      if (!entry) {
        const server = catalog.servers.find((s) => s.server === input.server);
        if (!server || server.state !== 'connected') {
          // The server may come back (respawn, network): let Temporal retry with backoff.
          throw ApplicationFailure.retryable(
            `server ${input.server} is unavailable${server?.error ? `: ${scrub(server.error)}` : ''}`,
            'McpServerUnavailable',
          );
        }
        return { isError: true, text: `Tool ${input.tool} no longer exists on server ${input.server}.` };
      }
      const check = deps.validator.validate(entry.inputSchema, input.arguments);
      if (!check.ok) return { isError: true, text: `Invalid arguments for ${input.llmName}: ${check.message}` };

      return await withHeartbeats(async (beat) => {
        try {
          return await deps.hub.callTool({
            server: input.server,
            tool: input.tool,
            arguments: input.arguments,
            meta: { [IDEMPOTENCY_KEY_META_KEY]: input.idempotencyKey, [TRACE_META_KEY]: input.turnId },
            signal: ctx.cancellationSignal,
            onProgress: (p) => beat(p),
          });
        } catch (err) {
          const message = scrub(errorMessage(err));
          deps.logger.warn(
            { turnId: input.turnId, server: input.server, tool: input.tool, attempt: ctx.info.attempt },
            `tool call failed: ${message}`,
          );
          if (ctx.cancellationSignal.aborted) throw new CancelledFailure('tool call cancelled');
          if (err instanceof Error && err.name === 'McpPermanentError') {
            throw ApplicationFailure.nonRetryable(message, 'McpPermanentError');
          }
          throw ApplicationFailure.retryable(message, 'McpTransientError');
        }
      });
    },
  };
}

export type Activities = ReturnType<typeof createActivities>;

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
