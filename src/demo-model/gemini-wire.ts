/**
 * The demo model's Gemini dialect: POST /v1beta/models/{model}:generateContent and
 * :streamGenerateContent?alt=sse (data-only SSE, each event a GenerateContentResponse; function calls
 * whole, never in fragments, and without ids, as the Gemini API sends them).
 */
import { z } from 'zod';
import type { ChatMessageLike } from './rules';
import { type Dialect, type HttpError, invalidRequest, jsonOr, parseBody, type ReplyPlan, type SseFrame, textPieces } from './wire';

const Part = z.looseObject({
  text: z.string().optional(),
  functionCall: z.looseObject({ id: z.string().optional(), name: z.string(), args: z.record(z.string(), z.unknown()).optional() }).optional(),
  functionResponse: z.looseObject({ id: z.string().optional(), name: z.string(), response: z.record(z.string(), z.unknown()).optional() }).optional(),
});

const GenerateRequestSchema = z.looseObject({
  contents: z.array(z.looseObject({ role: z.enum(['user', 'model']), parts: z.array(Part).min(1) })).min(1),
  systemInstruction: z.looseObject({ parts: z.array(Part) }).optional(),
  tools: z.array(z.looseObject({ functionDeclarations: z.array(z.looseObject({ name: z.string() })).optional() })).optional(),
});
type GenerateRequest = z.output<typeof GenerateRequestSchema>;

const ROUTE = /^\/v1(?:beta)?\/models\/([^/:]+):(generateContent|streamGenerateContent)$/;

/** Gemini's contents as the rule engine's OpenAI-shaped messages; a call without id is known by its name. */
export function geminiToChat(request: GenerateRequest): ChatMessageLike[] {
  const out: ChatMessageLike[] = [];
  // One system message per part: the host sends each of its system messages (prompt, context) as one.
  for (const p of request.systemInstruction?.parts ?? []) if (p.text) out.push({ role: 'system', content: p.text });
  for (const c of request.contents) {
    if (c.role === 'model') {
      const text = c.parts.map((p) => p.text ?? '').join('');
      const calls = c.parts.flatMap((p) => (p.functionCall ? [p.functionCall] : []));
      out.push({ role: 'assistant', content: text || null, ...(calls.length ? { tool_calls: calls.map((f) => ({ id: f.id ?? f.name, function: { name: f.name, arguments: JSON.stringify(f.args ?? {}) } })) } : {}) });
      continue;
    }
    const texts: string[] = [];
    for (const p of c.parts) {
      const r = p.functionResponse;
      if (r) {
        const response = r.response ?? {};
        const value = 'output' in response ? response['output'] : 'error' in response ? response['error'] : response;
        out.push({ role: 'tool', tool_call_id: r.id ?? r.name, content: typeof value === 'string' ? value : JSON.stringify(value) });
      } else if (p.text !== undefined) texts.push(p.text);
    }
    if (texts.length) out.push({ role: 'user', content: texts.join('') });
  }
  return out;
}

function statusName(status: number): string {
  if (status === 400) return 'INVALID_ARGUMENT';
  if (status === 401) return 'UNAUTHENTICATED';
  if (status === 403) return 'PERMISSION_DENIED';
  if (status === 404) return 'NOT_FOUND';
  if (status === 429) return 'RESOURCE_EXHAUSTED';
  if (status === 503) return 'UNAVAILABLE';
  return status >= 500 ? 'INTERNAL' : 'FAILED_PRECONDITION';
}

function usageMetadata(plan: ReplyPlan) {
  const { promptTokens, completionTokens } = plan.usage;
  return { promptTokenCount: promptTokens, candidatesTokenCount: completionTokens, totalTokenCount: promptTokens + completionTokens };
}

const callParts = (plan: ReplyPlan) => plan.reply.toolCalls.map((c) => ({ functionCall: { name: c.name, args: jsonOr(c.arguments, {}) } }));

export const geminiWire: Dialect = {
  name: 'gemini',
  handles: (path) => ROUTE.test(path),
  authorized: (req, apiKey) => req.headers['x-goog-api-key'] === apiKey,
  parse(body, path, url) {
    const request = parseBody(GenerateRequestSchema, body);
    const stream = ROUTE.exec(path)?.[2] === 'streamGenerateContent';
    if (stream && url.searchParams.get('alt') !== 'sse') throw invalidRequest('the demo model streams with alt=sse only');
    return { messages: geminiToChat(request), stream, includeUsage: true, tools: (request.tools ?? []).flatMap((t) => (t.functionDeclarations ?? []).map((f) => f.name)) };
  },
  stream(plan) {
    const frames: SseFrame[] = [];
    const chunk = (parts: unknown[], last: boolean) => ({
      candidates: [{ content: { role: 'model', parts }, index: 0, ...(last ? { finishReason: 'STOP' } : {}) }],
      ...(last ? { usageMetadata: usageMetadata(plan) } : {}),
      modelVersion: plan.model,
      responseId: plan.id,
    });
    const pieces = textPieces(plan.reply.text ?? '');
    const calls = callParts(plan);
    pieces.forEach((piece, i) => frames.push({ data: chunk([{ text: piece }], calls.length === 0 && i === pieces.length - 1), text: true }));
    // Parallel calls arrive together, in the last chunk.
    if (calls.length > 0 || pieces.length === 0) frames.push({ data: chunk(calls.length > 0 ? calls : [{ text: '' }], true) });
    return { frames };
  },
  whole(plan) {
    const parts = [...(plan.reply.text ? [{ text: plan.reply.text }] : []), ...callParts(plan)];
    return { candidates: [{ content: { role: 'model', parts }, index: 0, finishReason: 'STOP' }], usageMetadata: usageMetadata(plan), modelVersion: plan.model, responseId: plan.id };
  },
  errorBody: (err: HttpError, retryAfterSeconds?: number) => ({
    error: {
      code: err.status,
      message: err.message,
      status: statusName(err.status),
      ...(retryAfterSeconds !== undefined ? { details: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: `${retryAfterSeconds}s` }] } : {}),
    },
  }),
};
