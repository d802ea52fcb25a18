/**
 * Sampling: a server asks the host's model for a completion during a tool call
 * (`sampling/createMessage`, protocol 2025-11-25; deprecated in 2026-07-28, so kept small). It goes to
 * the same LLM client as the turn, within limits the turn hands the call (src/workflows/turn.ts, from
 * the policy's `sampling`): which servers may sample at all, the largest completion per request, and
 * the tokens left in the turn's budget. Every request is audited by the activity.
 */
import type { CreateMessageRequest, CreateMessageResult } from '@modelcontextprotocol/sdk/types.js';
import type { LlmClient } from '../llm/client';
import type { ChatMessage, SamplingAllowance } from '../shared/turn';
import type { SamplingRequest } from './pool';

export class SamplingRefused extends Error {
  override readonly name = 'SamplingRefused';
}

/** What one tool call may sample, and what it used. */
export class SamplingSession {
  /** Tokens (prompt and completion) this call's sampling used. */
  used = 0;
  requests = 0;

  constructor(
    private readonly llm: LlmClient,
    private readonly allowance: SamplingAllowance | undefined,
    private readonly turnId: string,
    /** Called after each request (for the audit trail), with the tokens it used or the refusal. */
    private readonly onRequest: (outcome: { tokens: number } | { refused: string }) => Promise<void>,
  ) {}

  async sample(params: CreateMessageRequest['params'], signal: AbortSignal): Promise<CreateMessageResult> {
    const refuse = async (reason: string): Promise<never> => {
      await this.onRequest({ refused: reason });
      throw new SamplingRefused(reason);
    };
    if (!this.allowance) return await refuse('this host does not let this server use its model');
    const left = this.allowance.budgetTokens - this.used;
    if (left <= 0) return await refuse("the turn's sampling budget is spent");
    this.requests += 1;
    const maxTokens = Math.min(params.maxTokens, this.allowance.maxTokens, left);
    const messages: ChatMessage[] = [
      ...(params.systemPrompt ? [{ role: 'system' as const, content: params.systemPrompt }] : []),
      ...params.messages.map((m): ChatMessage => ({ role: m.role, content: textOf(m.content) }) as ChatMessage),
    ];
    const response = await this.llm.complete({ turnId: this.turnId, step: 0, messages, tools: [], maxTokens }, { signal });
    const tokens = (response.usage?.promptTokens ?? 0) + (response.usage?.completionTokens ?? 0);
    this.used += tokens;
    await this.onRequest({ tokens });
    return {
      role: 'assistant',
      content: { type: 'text', text: response.text ?? '' },
      model: this.llm.model,
      stopReason: response.finishReason === 'length' ? 'maxTokens' : 'endTurn',
    };
  }
}

/** Text of a sampling message's content; what is not text is named, not sent. */
function textOf(content: CreateMessageRequest['params']['messages'][number]['content']): string {
  const parts = Array.isArray(content) ? content : [content];
  return parts.map((p) => (p.type === 'text' ? p.text : `[${p.type} omitted]`)).join('\n');
}

/** The worker's sampling handler for the pool: the calling tool call's session, or a refusal. */
export async function sampleForCaller(request: SamplingRequest): Promise<CreateMessageResult> {
  const session = request.caller?.sampling;
  if (!session) throw new SamplingRefused('sampling is only available during a tool call of a turn');
  return await session.sample(request.params, request.signal);
}
