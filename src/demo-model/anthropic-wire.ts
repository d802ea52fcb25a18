/**
 * The demo model's Anthropic Messages dialect: POST /v1/messages, answered as JSON or as the SSE
 * events the real API sends (message_start, content_block_start/delta/stop, message_delta,
 * message_stop). Cache breakpoints are honoured the way the API reports them: the prefix up to the
 * last `cache_control` is written to the cache the first time (cache_creation_input_tokens) and read
 * from it afterwards (cache_read_input_tokens), so a test can see whether the host's prefix is stable.
 */
import { z } from 'zod';
import type { ChatMessageLike } from './rules';
import { argumentPieces, type Dialect, type HttpError, jsonOr, parseBody, type ReplyPlan, type SseFrame, textPieces } from './wire';

const Block = z.looseObject({ type: z.string(), cache_control: z.unknown().optional() });
const TextBlock = z.looseObject({ type: z.literal('text'), text: z.string() });
const ToolUse = z.looseObject({ type: z.literal('tool_use'), id: z.string(), name: z.string(), input: z.unknown() });
const ToolResult = z.looseObject({
  type: z.literal('tool_result'),
  tool_use_id: z.string(),
  content: z.union([z.string(), z.array(Block)]).optional(),
  is_error: z.boolean().optional(),
});

const MessagesRequestSchema = z.looseObject({
  model: z.string().min(1),
  max_tokens: z.number().int().positive(),
  system: z.union([z.string(), z.array(TextBlock)]).optional(),
  messages: z.array(z.looseObject({ role: z.enum(['user', 'assistant']), content: z.union([z.string(), z.array(Block)]) })).min(1),
  tools: z.array(z.looseObject({ name: z.string(), input_schema: z.looseObject({ type: z.literal('object') }), cache_control: z.unknown().optional() })).optional(),
  stream: z.boolean().optional(),
});
type MessagesRequest = z.output<typeof MessagesRequestSchema>;

const textOf = (content: unknown): string =>
  typeof content === 'string'
    ? content
    : Array.isArray(content)
      ? content.map((b: { type?: unknown; text?: unknown; source?: { media_type?: unknown } }) => (b.type === 'text' && typeof b.text === 'string' ? b.text : b.type === 'image' ? `[image ${String(b.source?.media_type)}]` : '')).join('')
      : '';

/** Anthropic's messages as the rule engine's OpenAI-shaped ones. */
export function anthropicToChat(request: MessagesRequest): ChatMessageLike[] {
  const out: ChatMessageLike[] = [];
  // One system message per block: the host sends each of its system messages (prompt, context) as one.
  const system = typeof request.system === 'string' ? [request.system] : (request.system ?? []).map((b) => b.text);
  for (const text of system) if (text) out.push({ role: 'system', content: text });
  for (const m of request.messages) {
    if (typeof m.content === 'string') {
      out.push({ role: m.role, content: m.content });
      continue;
    }
    if (m.role === 'assistant') {
      const text = m.content.flatMap((b) => (TextBlock.safeParse(b).data?.text ?? [])).join('');
      const calls = m.content.flatMap((b) => ToolUse.safeParse(b).data ?? []);
      out.push({ role: 'assistant', content: text || null, ...(calls.length ? { tool_calls: calls.map((c) => ({ id: c.id, function: { name: c.name, arguments: JSON.stringify(c.input ?? {}) } })) } : {}) });
      continue;
    }
    const texts: string[] = [];
    for (const b of m.content) {
      const result = ToolResult.safeParse(b);
      if (result.success) out.push({ role: 'tool', tool_call_id: result.data.tool_use_id, content: textOf(result.data.content) });
      else if (b.type === 'text') texts.push(textOf([b]));
    }
    if (texts.length) out.push({ role: 'user', content: texts.join('') });
  }
  return out;
}

/** The request's cacheable prefix: tools, then system blocks, up to the last cache breakpoint (the API's order). */
function cachePrefix(request: MessagesRequest): string {
  const parts: unknown[] = [...(request.tools ?? []), ...(typeof request.system === 'string' ? [request.system] : (request.system ?? []))];
  let last = -1;
  parts.forEach((p, i) => {
    if (typeof p === 'object' && p !== null && 'cache_control' in p && p.cache_control) last = i;
  });
  // The breakpoint itself is not part of what is compared: only the content.
  return last < 0 ? '' : JSON.stringify(parts.slice(0, last + 1), (k, v: unknown) => (k === 'cache_control' ? undefined : v));
}

function errorType(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 413) return 'request_too_large';
  if (status === 429) return 'rate_limit_error';
  if (status === 529) return 'overloaded_error';
  if (status >= 500) return 'api_error';
  return 'invalid_request_error';
}

const stopReason = (plan: ReplyPlan) => (plan.reply.finishReason === 'tool_calls' ? 'tool_use' : 'end_turn');
const toolId = (id: string) => `toolu_${id}`;

function startUsage(plan: ReplyPlan) {
  const { promptTokens, cachedTokens, cacheWriteTokens } = plan.usage;
  return { input_tokens: promptTokens - cachedTokens - cacheWriteTokens, cache_creation_input_tokens: cacheWriteTokens, cache_read_input_tokens: cachedTokens };
}

export const anthropicWire: Dialect = {
  name: 'anthropic',
  handles: (path) => path === '/v1/messages',
  // The API takes the key as `x-api-key` or, as this SDK version sends it, as a bearer token.
  authorized: (req, apiKey) => req.headers['x-api-key'] === apiKey || req.headers.authorization === `Bearer ${apiKey}`,
  parse(body) {
    const request = parseBody(MessagesRequestSchema, body);
    return { messages: anthropicToChat(request), stream: request.stream === true, includeUsage: true, cachePrefix: cachePrefix(request), tools: (request.tools ?? []).map((t) => t.name) };
  },
  stream(plan) {
    const { reply } = plan;
    const frames: SseFrame[] = [];
    const event = (type: string, data: Record<string, unknown>, text = false) => frames.push({ event: type, data: { type, ...data }, ...(text ? { text } : {}) });
    event('message_start', {
      message: { id: plan.id, type: 'message', role: 'assistant', model: plan.model, content: [], stop_reason: null, stop_sequence: null, usage: { ...startUsage(plan), output_tokens: 1 } },
    });
    event('ping', {});
    let index = 0;
    if (reply.text) {
      event('content_block_start', { index, content_block: { type: 'text', text: '' } });
      for (const piece of textPieces(reply.text)) event('content_block_delta', { index, delta: { type: 'text_delta', text: piece } }, true);
      event('content_block_stop', { index });
      index++;
    }
    for (const call of reply.toolCalls) {
      event('content_block_start', { index, content_block: { type: 'tool_use', id: toolId(call.id), name: call.name, input: {} } });
      for (const piece of argumentPieces(call.arguments)) event('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: piece } });
      event('content_block_stop', { index });
      index++;
    }
    event('message_delta', { delta: { stop_reason: stopReason(plan), stop_sequence: null }, usage: { output_tokens: plan.usage.completionTokens } });
    event('message_stop', {});
    return { frames };
  },
  whole(plan) {
    const { reply } = plan;
    return {
      id: plan.id,
      type: 'message',
      role: 'assistant',
      model: plan.model,
      content: [
        ...(reply.text ? [{ type: 'text', text: reply.text }] : []),
        ...reply.toolCalls.map((c) => ({ type: 'tool_use', id: toolId(c.id), name: c.name, input: jsonOr(c.arguments, {}) })),
      ],
      stop_reason: stopReason(plan),
      stop_sequence: null,
      usage: { ...startUsage(plan), output_tokens: plan.usage.completionTokens },
    };
  },
  errorBody: (err: HttpError) => ({ type: 'error', error: { type: err.type === 'injected' || err.status >= 500 ? errorType(err.status) : err.type, message: err.message } }),
};
