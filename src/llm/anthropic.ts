/**
 * Anthropic's Messages API, natively (@anthropic-ai/sdk): the system prompt as system blocks, tools
 * with `input_schema`, tool calls as `tool_use` blocks and results as `tool_result` blocks (several in
 * one user message when the model called tools in parallel), images in tool results, streamed.
 * Prompt caching: a cache breakpoint on the tool list and one on the system prompt, the tools kept in
 * the order the host offers them (the catalog's stable order), so a turn's later steps and the next
 * turns read the prefix from the cache. The SDK's own retries are off, as for every provider.
 */
import Anthropic from '@anthropic-ai/sdk';
import type {
  Base64ImageSource,
  ContentBlockParam,
  MessageCreateParamsStreaming,
  MessageParam,
  TextBlockParam,
  Tool,
  ToolResultBlockParam,
} from '@anthropic-ai/sdk/resources/messages/messages';
import type { ChatMessage, LlmRequest, LlmResponse, LlmToolSpec } from '../shared/turn';
import { describeEndpoint } from './errors';
import { type LlmClient, type LlmSettings, parseArguments } from './provider';

export const ANTHROPIC_DEFAULT_MAX_TOKENS = 4096;
const CACHE = { type: 'ephemeral' } as const;
type ImageMediaType = Base64ImageSource['media_type'];
const IMAGE_TYPES: readonly string[] = ['image/jpeg', 'image/png', 'image/gif', 'image/webp'] satisfies ImageMediaType[];

export function createAnthropicClient(settings: LlmSettings): LlmClient {
  const client = new Anthropic({
    apiKey: settings.apiKey,
    ...(settings.baseUrl ? { baseURL: settings.baseUrl } : {}),
    maxRetries: 0,
    timeout: settings.timeoutMs,
  });
  return {
    provider: 'anthropic',
    model: settings.model,
    endpoint: describeEndpoint(settings.baseUrl ?? 'https://api.anthropic.com'),
    async complete(req, opts = {}) {
      const stream = await client.messages.create(toAnthropicRequest(req, settings), { signal: opts.signal });
      let text = '';
      let stopReason: string | null = null;
      let usage = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
      // Blocks arrive by index: a tool_use block's id and name first, its input as JSON fragments.
      const calls = new Map<number, { id: string; name: string; json: string }>();
      for await (const event of stream) {
        switch (event.type) {
          case 'message_start': {
            const u = event.message.usage;
            usage = { input: u.input_tokens, output: u.output_tokens, cacheRead: u.cache_read_input_tokens ?? 0, cacheWrite: u.cache_creation_input_tokens ?? 0 };
            break;
          }
          case 'content_block_start':
            if (event.content_block.type === 'tool_use') calls.set(event.index, { id: event.content_block.id, name: event.content_block.name, json: '' });
            break;
          case 'content_block_delta':
            if (event.delta.type === 'text_delta') {
              text += event.delta.text;
              opts.onChunk?.({ text: event.delta.text });
              continue;
            }
            if (event.delta.type === 'input_json_delta') {
              const call = calls.get(event.index);
              if (call) call.json += event.delta.partial_json;
            }
            break;
          case 'message_delta':
            stopReason = event.delta.stop_reason;
            if (event.usage.output_tokens !== null) usage.output = event.usage.output_tokens;
            break;
          default:
            break;
        }
        opts.onChunk?.(event.type === 'message_start' || event.type === 'message_delta' ? { usage: hostUsage(usage) } : {});
      }
      // An aborted stream may just end (the SDK stops reading): a partial answer is no answer.
      opts.signal?.throwIfAborted();
      const toolCalls = [...calls.entries()].sort(([a], [b]) => a - b).map(([, c]) => ({ id: c.id, name: c.name, arguments: c.json === '' ? '{}' : c.json }));
      const response: LlmResponse = {
        text: text === '' && toolCalls.length > 0 ? null : text,
        toolCalls,
        finishReason: finishReason(stopReason),
        usage: hostUsage(usage),
        provider: 'anthropic',
        model: settings.model,
      };
      return response;
    },
  };
}

/** Anthropic counts cached input apart; the host's prompt tokens are all of them. */
function hostUsage(u: { input: number; output: number; cacheRead: number; cacheWrite: number }): NonNullable<LlmResponse['usage']> {
  return {
    promptTokens: u.input + u.cacheRead + u.cacheWrite,
    completionTokens: u.output,
    ...(u.cacheRead ? { cachedTokens: u.cacheRead } : {}),
    ...(u.cacheWrite ? { cacheWriteTokens: u.cacheWrite } : {}),
  };
}

/** The request body (exported for the mapping's tests). */
export function toAnthropicRequest(req: LlmRequest, settings: Pick<LlmSettings, 'model' | 'temperature' | 'maxTokens'>): MessageCreateParamsStreaming {
  const system = req.messages.flatMap((m) => (m.role === 'system' && m.content !== '' ? [{ type: 'text' as const, text: m.content }] : []));
  const tools = req.tools.map(toAnthropicTool);
  return {
    model: settings.model,
    max_tokens: req.maxTokens ?? settings.maxTokens ?? ANTHROPIC_DEFAULT_MAX_TOKENS,
    messages: toAnthropicMessages(req.messages),
    // Breakpoints: the tool list (rendered first) and the system prompt; each caches all before it.
    ...(system.length > 0 ? { system: withBreakpoint(system) } : {}),
    ...(tools.length > 0 ? { tools: withBreakpoint(tools) } : {}),
    ...(settings.temperature !== undefined ? { temperature: settings.temperature } : {}),
    stream: true,
  };
}

function withBreakpoint<T extends TextBlockParam | Tool>(items: T[]): T[] {
  return items.map((item, i) => (i === items.length - 1 ? { ...item, cache_control: CACHE } : item));
}

function toAnthropicTool(t: LlmToolSpec): Tool {
  return {
    name: t.name,
    ...(t.description ? { description: t.description } : {}),
    input_schema: { ...t.parameters, type: 'object' } as Tool.InputSchema,
  };
}

/**
 * User and assistant turns alternate: a turn's tool results (parallel calls) share one user message,
 * results first, and a user message right after them joins it. System messages went to `system`.
 */
export function toAnthropicMessages(messages: readonly ChatMessage[]): MessageParam[] {
  const out: Array<{ role: 'user' | 'assistant'; content: ContentBlockParam[] }> = [];
  const push = (role: 'user' | 'assistant', blocks: ContentBlockParam[]) => {
    if (blocks.length === 0) return;
    const last = out.at(-1);
    if (last?.role === role) last.content.push(...blocks);
    else out.push({ role, content: blocks });
  };
  for (const m of messages) {
    switch (m.role) {
      case 'system':
        break;
      case 'user':
        push('user', [{ type: 'text', text: m.content }]);
        break;
      case 'assistant':
        push('assistant', [
          ...(m.content ? [{ type: 'text' as const, text: m.content }] : []),
          ...(m.toolCalls ?? []).map((c) => ({ type: 'tool_use' as const, id: c.id, name: c.name, input: parseArguments(c.arguments) })),
        ]);
        break;
      case 'tool':
        push('user', [toolResult(m)]);
        break;
    }
  }
  return out;
}

function toolResult(m: Extract<ChatMessage, { role: 'tool' }>): ToolResultBlockParam {
  const images = (m.images ?? []).filter((i) => IMAGE_TYPES.includes(i.mimeType));
  const content: ToolResultBlockParam['content'] =
    images.length === 0
      ? m.content
      : [
          ...(m.content ? [{ type: 'text' as const, text: m.content }] : []),
          ...images.map((i) => ({ type: 'image' as const, source: { type: 'base64' as const, media_type: i.mimeType as ImageMediaType, data: i.data } })),
        ];
  return { type: 'tool_result', tool_use_id: m.toolCallId, content, ...(m.isError ? { is_error: true } : {}) };
}

/** Anthropic's stop reasons as the host's (OpenAI's) finish reasons. */
function finishReason(stop: string | null): string | null {
  if (stop === 'end_turn' || stop === 'stop_sequence') return 'stop';
  if (stop === 'tool_use') return 'tool_calls';
  if (stop === 'max_tokens') return 'length';
  return stop;
}
