/**
 * The Gemini API, natively (@google/genai): the system prompt as `systemInstruction`, tools as
 * `functionDeclarations` with their JSON Schema as is (`parametersJsonSchema`), calls as `functionCall`
 * parts (several in one answer when the model calls in parallel) and results as `functionResponse`
 * parts (structured content as the response, images as inline parts), streamed with
 * `:streamGenerateContent?alt=sse`. Gemini caches repeated prefixes implicitly; the host keeps the
 * tools' order stable so it can. The SDK's own retries are off, as for every provider.
 */
import { type Content, type FunctionDeclaration, type GenerateContentParameters, GoogleGenAI, type Part } from '@google/genai';
import type { ChatMessage, LlmRequest, LlmResponse, LlmToolCall, LlmToolSpec } from '../shared/turn';
import { describeEndpoint } from './errors';
import { callNames, fallbackCallId, type LlmClient, type LlmSettings, parseArguments } from './provider';

export function createGeminiClient(settings: LlmSettings): LlmClient {
  const ai = new GoogleGenAI({
    apiKey: settings.apiKey,
    httpOptions: {
      ...(settings.baseUrl ? { baseUrl: settings.baseUrl } : {}),
      timeout: settings.timeoutMs,
      retryOptions: { attempts: 1 },
      // Node's own fetch: without one, the SDK hands fetch a dispatcher of its bundled undici, which
      // fails ("fetch failed") where that undici is not the runtime's (seen under jest). The request
      // timeout above bounds a long stream instead.
      fetch: (input, init) => fetch(input, init),
    },
  });
  return {
    provider: 'gemini',
    model: settings.model,
    endpoint: describeEndpoint(settings.baseUrl ?? 'https://generativelanguage.googleapis.com'),
    async complete(req, opts = {}) {
      const params = toGeminiRequest(req, settings);
      const stream = await ai.models.generateContentStream({ ...params, config: { ...params.config, ...(opts.signal ? { abortSignal: opts.signal } : {}) } });
      let text = '';
      let finish: string | undefined;
      let usage: LlmResponse['usage'];
      const toolCalls: LlmToolCall[] = [];
      for await (const chunk of stream) {
        // A stream the caller aborted may still hand over what it had buffered: stop at once.
        opts.signal?.throwIfAborted();
        const candidate = chunk.candidates?.[0];
        for (const part of candidate?.content?.parts ?? []) {
          if (part.thought) continue;
          if (typeof part.text === 'string' && part.text !== '') {
            text += part.text;
            opts.onChunk?.({ text: part.text });
          }
          // Gemini sends each call whole, never in fragments.
          if (part.functionCall?.name) {
            const index = toolCalls.length;
            toolCalls.push({ id: part.functionCall.id || fallbackCallId(req.step, index), name: part.functionCall.name, arguments: JSON.stringify(part.functionCall.args ?? {}) });
          }
        }
        if (candidate?.finishReason) finish = candidate.finishReason;
        const u = chunk.usageMetadata;
        if (u) {
          const cached = u.cachedContentTokenCount ?? 0;
          usage = { promptTokens: u.promptTokenCount ?? 0, completionTokens: (u.candidatesTokenCount ?? 0) + (u.thoughtsTokenCount ?? 0), ...(cached ? { cachedTokens: cached } : {}) };
        }
        opts.onChunk?.(u && usage ? { usage } : {});
      }
      // An aborted stream may just end (the SDK stops reading): a partial answer is no answer.
      opts.signal?.throwIfAborted();
      return {
        text: text === '' && toolCalls.length > 0 ? null : text,
        toolCalls,
        finishReason: toolCalls.length > 0 ? 'tool_calls' : finishReason(finish),
        ...(usage ? { usage } : {}),
        provider: 'gemini',
        model: settings.model,
      };
    },
  };
}

/** The request (exported for the mapping's tests). */
export function toGeminiRequest(req: LlmRequest, settings: Pick<LlmSettings, 'model' | 'temperature' | 'maxTokens'>): GenerateContentParameters {
  const system = req.messages.flatMap((m) => (m.role === 'system' && m.content !== '' ? [{ text: m.content }] : []));
  const maxTokens = req.maxTokens ?? settings.maxTokens;
  return {
    model: settings.model,
    contents: toGeminiContents(req.messages),
    config: {
      ...(system.length > 0 ? { systemInstruction: { parts: system } } : {}),
      ...(req.tools.length > 0 ? { tools: [{ functionDeclarations: req.tools.map(toDeclaration) }] } : {}),
      ...(settings.temperature !== undefined ? { temperature: settings.temperature } : {}),
      ...(maxTokens !== undefined ? { maxOutputTokens: maxTokens } : {}),
    },
  };
}

function toDeclaration(t: LlmToolSpec): FunctionDeclaration {
  return { name: t.name, ...(t.description ? { description: t.description } : {}), parametersJsonSchema: t.parameters };
}

/** Roles `user` and `model`; a turn's function responses (parallel calls) share one `user` content. */
export function toGeminiContents(messages: readonly ChatMessage[]): Content[] {
  const names = callNames(messages);
  const out: Content[] = [];
  const push = (role: 'user' | 'model', parts: Part[]) => {
    if (parts.length === 0) return;
    const last = out.at(-1);
    if (last?.role === role && last.parts) last.parts.push(...parts);
    else out.push({ role, parts });
  };
  for (const m of messages) {
    switch (m.role) {
      case 'system':
        break;
      case 'user':
        push('user', [{ text: m.content }]);
        break;
      case 'assistant':
        push('model', [
          ...(m.content ? [{ text: m.content }] : []),
          ...(m.toolCalls ?? []).map((c) => ({ functionCall: { id: c.id, name: c.name, args: parseArguments(c.arguments) } })),
        ]);
        break;
      case 'tool':
        push('user', [functionResponse(m, names.get(m.toolCallId) ?? 'unknown_tool')]);
        break;
    }
  }
  return out;
}

function functionResponse(m: Extract<ChatMessage, { role: 'tool' }>, name: string): Part {
  // `output` / `error` keys as Gemini's docs name them; structured content goes as it is, beside the text.
  const response: Record<string, unknown> = m.isError ? { error: m.content } : { output: m.content };
  if (m.structured) response['structured'] = m.structured;
  const images = m.images ?? [];
  return {
    functionResponse: {
      id: m.toolCallId,
      name,
      response,
      ...(images.length > 0 ? { parts: images.map((i) => ({ inlineData: { mimeType: i.mimeType, data: i.data } })) } : {}),
    },
  };
}

function finishReason(reason: string | undefined): string | null {
  if (reason === undefined) return null;
  if (reason === 'STOP') return 'stop';
  if (reason === 'MAX_TOKENS') return 'length';
  return reason.toLowerCase();
}
