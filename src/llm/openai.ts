import OpenAI from 'openai';
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import type { ChatMessage, LlmRequest, LlmResponse, LlmToolCall } from '../shared/turn';
import { describeEndpoint } from './errors';
import { fallbackCallId, type LlmClient, type LlmSettings } from './provider';

/**
 * Chat completions with tools over any OpenAI-compatible endpoint, streamed. The SDK's own retries
 * are off: the activity's retry policy is the only one, so backoff and attempts stay visible in history.
 */
export function createOpenAiClient(settings: LlmSettings & { baseUrl: string }): LlmClient {
  const client = new OpenAI({
    baseURL: settings.baseUrl,
    apiKey: settings.apiKey,
    maxRetries: 0,
    timeout: settings.timeoutMs,
  });

  return {
    provider: 'openai',
    model: settings.model,
    endpoint: describeEndpoint(settings.baseUrl),
    async complete(req, opts = {}) {
      const stream = await client.chat.completions.create(
        {
          model: settings.model,
          messages: req.messages.map(toOpenAiMessage),
          ...(req.tools.length > 0 ? { tools: req.tools.map(toOpenAiTool) } : {}),
          ...(settings.temperature !== undefined ? { temperature: settings.temperature } : {}),
          ...((req.maxTokens ?? settings.maxTokens) !== undefined ? { max_tokens: req.maxTokens ?? settings.maxTokens } : {}),
          stream: true,
          stream_options: { include_usage: true },
        },
        { signal: opts.signal },
      );

      let text = '';
      let finishReason: string | null = null;
      let usage: LlmResponse['usage'];
      // Streamed tool calls arrive as fragments keyed by index; ids and names come once.
      const calls = new Map<number, { id: string; name: string; arguments: string }>();
      for await (const chunk of stream) {
        if (chunk.usage) {
          const cached = chunk.usage.prompt_tokens_details?.cached_tokens;
          usage = { promptTokens: chunk.usage.prompt_tokens, completionTokens: chunk.usage.completion_tokens, ...(cached ? { cachedTokens: cached } : {}) };
          opts.onChunk?.({ usage });
        }
        const choice = chunk.choices[0];
        if (!choice) continue;
        const delta = choice.delta;
        if (delta?.content) {
          text += delta.content;
          opts.onChunk?.({ text: delta.content });
        } else {
          opts.onChunk?.({});
        }
        for (const tc of delta?.tool_calls ?? []) {
          const entry = calls.get(tc.index) ?? { id: '', name: '', arguments: '' };
          if (tc.id) entry.id = tc.id;
          if (tc.function?.name) entry.name += tc.function.name;
          if (tc.function?.arguments) entry.arguments += tc.function.arguments;
          calls.set(tc.index, entry);
        }
        if (choice.finish_reason) finishReason = choice.finish_reason;
      }

      // An aborted stream may just end (the SDK stops reading): a partial answer is no answer.
      opts.signal?.throwIfAborted();
      const toolCalls: LlmToolCall[] = [...calls.entries()]
        .sort(([a], [b]) => a - b)
        .map(([index, c]) => ({ id: c.id || fallbackCallId(req.step, index), name: c.name, arguments: c.arguments }));
      return { text: text === '' && toolCalls.length > 0 ? null : text, toolCalls, finishReason, usage, provider: 'openai', model: settings.model };
    },
  };
}

function toOpenAiMessage(m: ChatMessage): ChatCompletionMessageParam {
  switch (m.role) {
    case 'system':
    case 'user':
      return { role: m.role, content: m.content };
    case 'assistant':
      return {
        role: 'assistant',
        content: m.content,
        ...(m.toolCalls && m.toolCalls.length > 0
          ? {
              tool_calls: m.toolCalls.map((c) => ({
                id: c.id,
                type: 'function' as const,
                function: { name: c.name, arguments: c.arguments },
              })),
            }
          : {}),
      };
    case 'tool':
      // Tool messages take text only here: images stay the placeholders in `content` (src/mcp/render.ts).
      return { role: 'tool', tool_call_id: m.toolCallId, content: m.content };
  }
}

function toOpenAiTool(t: LlmRequest['tools'][number]): ChatCompletionTool {
  return {
    type: 'function',
    function: { name: t.name, ...(t.description ? { description: t.description } : {}), parameters: t.parameters },
  };
}
