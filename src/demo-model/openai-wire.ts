/** The demo model's OpenAI Chat Completions dialect: POST /v1/chat/completions (also /chat/completions). */
import { z } from 'zod';
import { type Dialect, type HttpError, parseBody, type ReplyPlan, type SseFrame, argumentPieces, textPieces } from './wire';

const ContentSchema = z
  .union([z.string(), z.array(z.looseObject({ type: z.string().optional(), text: z.string().optional() }))])
  .nullish();

const MessageSchema = z.looseObject({
  role: z.enum(['system', 'developer', 'user', 'assistant', 'tool', 'function']),
  content: ContentSchema,
  tool_calls: z
    .array(
      z.looseObject({
        id: z.string(),
        type: z.string().optional(),
        function: z.looseObject({ name: z.string(), arguments: z.string().optional() }),
      }),
    )
    .nullish(),
  tool_call_id: z.string().optional(),
});

const ChatRequestSchema = z.looseObject({
  model: z.string(),
  messages: z.array(MessageSchema).min(1),
  stream: z.boolean().nullish(),
  stream_options: z.looseObject({ include_usage: z.boolean().nullish() }).nullish(),
  tools: z.array(z.looseObject({ function: z.looseObject({ name: z.string() }).optional() })).nullish(),
});

function errorTypeFor(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 429) return 'rate_limit_error';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}

function usage(plan: ReplyPlan) {
  const { promptTokens, completionTokens } = plan.usage;
  return { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens };
}

export const openAiWire: Dialect = {
  name: 'openai',
  handles: (path) => path === '/v1/chat/completions' || path === '/chat/completions',
  authorized: (req, apiKey) => req.headers.authorization === `Bearer ${apiKey}`,
  parse(body) {
    const request = parseBody(ChatRequestSchema, body);
    return { messages: request.messages, stream: request.stream === true, includeUsage: request.stream_options?.include_usage === true, tools: (request.tools ?? []).flatMap((t) => (t.function ? [t.function.name] : [])) };
  },
  stream(plan) {
    const { id, created, model, reply } = plan;
    const base = { id, object: 'chat.completion.chunk', created, model, system_fingerprint: null };
    const frames: SseFrame[] = [];
    const choice = (delta: Record<string, unknown>, finish: string | null = null) => ({
      ...base,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
      // With include_usage, OpenAI sends `usage: null` on every chunk but the last; clients may rely on it.
      ...(plan.includeUsage ? { usage: null } : {}),
    });
    frames.push({ data: choice({ role: 'assistant', content: '', refusal: null }) });
    for (const piece of textPieces(reply.text ?? '')) frames.push({ data: choice({ content: piece }), text: true });
    reply.toolCalls.forEach((call, index) => {
      frames.push({ data: choice({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] }) });
      for (const piece of argumentPieces(call.arguments)) frames.push({ data: choice({ tool_calls: [{ index, function: { arguments: piece } }] }) });
    });
    frames.push({ data: choice({}, reply.finishReason) });
    if (plan.includeUsage) frames.push({ data: { ...base, choices: [], usage: usage(plan) } });
    return { frames, trailer: 'data: [DONE]\n\n' };
  },
  whole(plan) {
    const { reply } = plan;
    return {
      id: plan.id,
      object: 'chat.completion',
      created: plan.created,
      model: plan.model,
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: reply.text,
            refusal: null,
            ...(reply.toolCalls.length > 0
              ? { tool_calls: reply.toolCalls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } })) }
              : {}),
          },
          logprobs: null,
          finish_reason: reply.finishReason,
        },
      ],
      usage: usage(plan),
    };
  },
  errorBody: (err: HttpError) => ({ error: { message: err.message, type: err.type === 'injected' ? errorTypeFor(err.status) : err.type, param: err.param, code: err.code } }),
};
