/**
 * Sampling: a server asks the host's model for a completion during a tool call
 * (`sampling/createMessage`, protocol 2025-11-25; deprecated in 2026-07-28, so kept small). It goes to
 * the same LLM client as the turn, within limits the turn hands the call (src/workflows/turn.ts, from
 * the policy's `sampling`): which servers may sample at all, the largest completion per request, and
 * the tokens left in the turn's budget. Every request is audited by the activity.
 */
import type { CreateMessageRequest, CreateMessageResult } from '@modelcontextprotocol/sdk/types.js';
import type { LlmClient } from '../llm/client';
import { type ChatMessage } from '../shared/turn';
import { NO_CONTENT_SCHEMA, type SamplingAllowance } from '../shared/user-input';
import type { ElicitationSession } from './elicitation';
import type { SamplingRequest } from './server-requests';
import type { CallSampling } from './user-token';

/** How much of the server's prompt the user is shown when asked to allow a request. */
const PROMPT_SHOWN_CHARS = 400;

export class SamplingRefused extends Error {
  override readonly name = 'SamplingRefused';
}

/** What one tool call may sample, and what it used. */
export class SamplingSession implements CallSampling {
  /** Tokens (prompt and completion) this call's sampling used. */
  used = 0;
  requests = 0;

  constructor(
    private readonly llm: LlmClient,
    private readonly allowance: SamplingAllowance | undefined,
    private readonly turnId: string,
    /** Called after each request (for the audit trail), with the tokens it used or the refusal. */
    private readonly onRequest: (outcome: { tokens: number } | { refused: string }) => Promise<void>,
    /** Where the user's leave is asked for when the allowance wants approval (the call's questions). */
    private readonly approvals?: { server: string; session: ElicitationSession },
  ) {}

  async sample(params: CreateMessageRequest['params'], signal: AbortSignal): Promise<CreateMessageResult> {
    const refuse = async (reason: string): Promise<never> => {
      await this.onRequest({ refused: reason });
      throw new SamplingRefused(reason);
    };
    if (!this.allowance) return await refuse('this host does not let this server use its model');
    const left = this.allowance.budgetTokens - this.used;
    if (left <= 0) return await refuse("the turn's sampling budget is spent");
    const maxTokens = Math.min(params.maxTokens, this.allowance.maxTokens, left);
    const messages: ChatMessage[] = [
      ...(params.systemPrompt ? [{ role: 'system' as const, content: params.systemPrompt }] : []),
      ...params.messages.map((m): ChatMessage => ({ role: m.role, content: textOf(m.content) }) as ChatMessage),
    ];
    if (this.allowance.approval) {
      // The user sees what the server wants the model to answer and says yes or no; until they have,
      // the call is abandoned (its question recorded) and issued again with the answer.
      const session = this.approvals?.session;
      if (!session) return await refuse('sampling needs the user\'s approval, and no user can be asked');
      const answer = session.ask({ mode: 'sampling', message: approvalQuestion(this.approvals?.server ?? 'the server', messages, maxTokens), requestedSchema: NO_CONTENT_SCHEMA });
      if (!answer) throw new SamplingRefused('waiting for the user to allow this request');
      if (answer.action !== 'accept') return await refuse(`the user did not allow this request (${answer.action})`);
    }
    this.requests += 1;
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

/** What the user is asked: who wants the model, for how much, and the prompt's last user message. */
function approvalQuestion(server: string, messages: readonly ChatMessage[], maxTokens: number): string {
  const last = [...messages].reverse().find((m) => m.role === 'user');
  const prompt = last?.content ?? '';
  const shown = prompt.length > PROMPT_SHOWN_CHARS ? `${prompt.slice(0, PROMPT_SHOWN_CHARS)}…` : prompt;
  return `${server} asks to use the model (up to ${maxTokens} tokens) for: ${shown}`;
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
