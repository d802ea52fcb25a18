/**
 * The model calls among the activities: a turn's LLM step (`callLlm`) and a session's summary
 * (`summarizeConversation`), through the provider interface (src/llm/provider.ts), so any configured
 * provider answers with the same retry decisions (src/llm/errors.ts). The result says which provider
 * and model answered; it is the activity's result, so the turn's history records it.
 *
 * Every attempt's tokens are in the usage ledger before the attempt ends, answered or failed
 * (./usage.ts); a step's result counts its earlier attempts' too, so a turn's usage is what it spent.
 */
import { ApplicationFailure, CancelledFailure, Context } from '@temporalio/activity';
import type { LlmClient } from '../llm/client';
import { classifyLlmError, type LlmErrorClass } from '../llm/errors';
import type { LlmOutcome } from '../metrics';
import { Failure } from '../shared/failures';
import type { ChatMessage, LlmRequest, LlmResponse, LlmToolSpec } from '../shared/turn';
import type { ActivityDeps } from './deps';
import { retryNotice } from './retry-notice';
import { turnFields, type WithHeartbeats } from './shared';
import { attemptUsage, ownerOf } from './usage';

export interface SummarizeInput {
  sessionId: string;
  previousSummary?: string;
  messages: ChatMessage[];
  maxChars: number;
}

type LlmDeps = Pick<ActivityDeps, 'llm' | 'models' | 'live' | 'metrics' | 'logger' | 'secrets' | 'usage'>;

interface ToolOffer {
  /** The tool specs a request offers (resolved from its names, a searched catalog's subset). */
  specs: (req: LlmRequest) => Promise<LlmToolSpec[]>;
  /** The response with what its search calls found (./tool-search.ts). */
  withFound: (response: LlmResponse, req: LlmRequest) => LlmResponse;
  withHeartbeats: WithHeartbeats;
}

export function createLlmActivities(deps: LlmDeps, tools: ToolOffer) {
  const { withHeartbeats } = tools;

  /** The model a request names (the host config's `models`), or the worker's default; an unknown name is final. */
  function modelFor(req: LlmRequest): LlmClient {
    if (req.model === undefined) return deps.llm;
    const named = deps.models?.get(req.model);
    if (named) return named;
    const known = [...(deps.models?.keys() ?? [])];
    throw ApplicationFailure.nonRetryable(
      `no model named "${req.model}" in the host config's models${known.length ? ` (configured: ${known.join(', ')})` : ' (none configured)'}`,
      Failure.LlmRequestRejected,
    );
  }

  const usage = attemptUsage(deps);

  return {
    async callLlm(req: LlmRequest): Promise<LlmResponse> {
      const ctx = Context.current();
      const started = performance.now();
      const llm = modelFor(req);
      const labels = { provider: llm.provider, model: llm.model };
      const observe = (outcome: LlmOutcome, errorClass?: LlmErrorClass) => deps.metrics?.llmCall(outcome, (performance.now() - started) / 1000, errorClass, labels);
      return await withHeartbeats(async (beat) => {
        // A long stream beats once a second as it goes; the first beat after a second of it, not at the
        // first chunk: the worker's core holds an activity's completion until a heartbeat in flight is
        // answered, so a beat at once costs every quick answer a round trip to the server.
        let lastBeat = Date.now();
        // What the stream reported, kept for the ledger should the attempt fail after it.
        let reported: LlmResponse['usage'];
        try {
          const attempt = ctx.info.attempt;
          const response = await llm.complete({ ...req, tools: await tools.specs(req) }, {
            signal: ctx.cancellationSignal,
            onChunk: (delta) => {
              if (delta.usage) reported = delta.usage;
              // Live text for watching clients; a retried attempt announces itself with a reset.
              if (delta.text) deps.live?.delta(req.turnId, req.step, attempt, delta.text);
              const now = Date.now();
              if (now - lastBeat > 1_000) {
                lastBeat = now;
                beat();
              }
            },
          });
          deps.live?.end(req.turnId, req.step, attempt);
          observe('ok');
          // Recorded before the step ends; the result adds what the step's earlier attempts spent.
          return tools.withFound(await usage.answered('llm', llm, response, req.turnId, { owner: ownerOf(req) }), req);
        } catch (err) {
          await usage.failed('llm', llm, reported, req.turnId, ownerOf(req));
          // A cancelled turn is not an LLM failure: report the cancellation as such.
          if (ctx.cancellationSignal.aborted) {
            observe('cancelled');
            throw new CancelledFailure('LLM call cancelled');
          }
          const failure = classifyLlmError(err, deps.secrets, llm.endpoint);
          observe(failure.retryable ? 'retryable_error' : 'rejected', failure.errorClass);
          deps.logger.warn(
            { ...turnFields(req.turnId), step: req.step, attempt: ctx.info.attempt, ...labels, status: failure.status, errorClass: failure.errorClass, retryable: failure.retryable },
            `LLM call failed: ${failure.message}`,
          );
          if (!failure.retryable) throw ApplicationFailure.nonRetryable(failure.message, Failure.LlmRequestRejected);
          // Clients watching the turn hear of it now, not only if every attempt fails.
          const retry = retryNotice({
            attempt: ctx.info.attempt,
            ...(ctx.info.retryPolicy ? { policy: ctx.info.retryPolicy } : {}),
            ...(failure.retryAfterMs ? { retryAfterMs: failure.retryAfterMs } : {}),
            reason: `The model call failed: ${failure.message}`,
          });
          if (retry) deps.live?.notice(req.turnId, req.step, ctx.info.attempt, retry.message);
          throw ApplicationFailure.create({
            message: failure.message,
            type: Failure.LlmUnavailable,
            // A zero delay would end the retries; no hint means the policy's backoff applies.
            nextRetryDelay: failure.retryAfterMs ? failure.retryAfterMs : undefined,
          });
        }
      });
    },

    /**
     * Condenses older conversation messages (and the previous summary) into a new summary, so long
     * sessions keep their gist within the model's context window.
     */
    async summarizeConversation(input: SummarizeInput): Promise<{ summary: string }> {
      const ctx = Context.current();
      const transcript = input.messages
        .map((m) => `${m.role}: ${typeof m.content === 'string' ? m.content : ''}`)
        .join('\n');
      const request: LlmRequest = {
        turnId: `summary-${input.sessionId}`,
        step: 1,
        tools: [],
        messages: [
          {
            role: 'system',
            content: `You summarize conversations for an assistant's memory. Keep facts, names, numbers, decisions and open requests; drop pleasantries. Answer with the summary only, at most ${Math.floor(input.maxChars / 2)} characters.`,
          },
          {
            role: 'user',
            content: `Summarize the conversation below (${input.messages.length} messages).${input.previousSummary ? `\n\nEarlier summary:\n${input.previousSummary}` : ''}\n\nConversation:\n${transcript}`,
          },
        ],
      };
      const llm = deps.llm;
      let reported: LlmResponse['usage'];
      let response: LlmResponse;
      try {
        response = await withHeartbeats(() =>
          llm.complete(request, { signal: ctx.cancellationSignal, onChunk: (delta) => void (delta.usage && (reported = delta.usage)) }),
        );
      } catch (err) {
        await usage.failed('summary', llm, reported, input.sessionId);
        const failure = classifyLlmError(err, deps.secrets, llm.endpoint);
        if (!failure.retryable) throw ApplicationFailure.nonRetryable(failure.message, Failure.LlmRequestRejected);
        throw ApplicationFailure.create({ message: failure.message, type: Failure.LlmUnavailable });
      }
      // Spent whatever becomes of the answer: counted before it is checked.
      await usage.answered('summary', llm, response, input.sessionId, { withEarlier: false });
      const summary = (response.text ?? '').trim();
      if (!summary) throw ApplicationFailure.nonRetryable('the model returned an empty summary', Failure.LlmRequestRejected);
      return { summary: summary.slice(0, input.maxChars) };
    },
  };
}
