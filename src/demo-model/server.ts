/**
 * The demo model as an HTTP server speaking the OpenAI Chat Completions API, so the host talks to
 * it through the very same client code it uses for a real provider. Built on node:http alone so
 * its wire behaviour (SSE framing, hang-ups, status codes) is explicit and easy to fault-inject.
 *
 * Routes:
 *   POST /v1/chat/completions (also /chat/completions)   scripted answer, streaming or not
 *   GET  /v1/models, /v1/models/:id                     the single configured model
 *   GET|POST|DELETE /__demo/faults                       inspect / replace / clear the fault queue
 *   GET|DELETE /__demo/requests                          inspect / clear recorded requests
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import {
  answer,
  conversationHash,
  messageText,
  parseDemoRules,
  type DemoAnswer,
  type DemoRules,
  type ResolvedDemoRules,
} from './rules';
import { describeIssues } from '../shared/issues';

export const FaultSchema = z
  .object({
    /** Answer with this HTTP status and an OpenAI-style error body. */
    status: z.number().int().min(400).max(599).optional(),
    /** Seconds, sent as the `retry-after` header with `status`. */
    retryAfter: z.number().nonnegative().optional(),
    message: z.string().optional(),
    /** Wait this long before answering (combines with the other fields). */
    delayMs: z.number().int().nonnegative().optional(),
    /** Destroy the socket instead of answering. */
    hangup: z.boolean().optional(),
    /** With `hangup` on a streaming request: send this many SSE chunks first. */
    afterChunks: z.number().int().nonnegative().optional(),
    /** On a streaming request: wait this long after each text delta (overrides the server's chunkDelayMs). */
    chunkDelayMs: z.number().int().nonnegative().max(60_000).optional(),
    /** How many chat-completion requests this fault applies to. */
    times: z.number().int().positive().default(1),
  })
  .refine((f) => f.status !== undefined || f.delayMs !== undefined || f.hangup === true || f.chunkDelayMs !== undefined, {
    message: 'a fault needs status, delayMs, hangup or chunkDelayMs',
  });
export type Fault = z.input<typeof FaultSchema>;
type ResolvedFault = z.output<typeof FaultSchema>;
const FaultListSchema = z.array(FaultSchema);

export interface RecordedRequest {
  method: string;
  path: string;
  /** Lower-cased header names; `authorization` is redacted. */
  headers: Record<string, string>;
  /** Parsed JSON body; the raw text when it was not JSON; undefined when empty. */
  body: unknown;
  /** Epoch milliseconds. */
  at: number;
}

/** Structurally compatible with pino, so callers can pass their logger as is. */
export interface DemoModelLogger {
  info(obj: Record<string, unknown>, msg?: string): void;
  warn(obj: Record<string, unknown>, msg?: string): void;
}

export interface DemoModelOptions {
  rules: DemoRules;
  /** Defaults to 127.0.0.1: the demo model is a local test double, never a public service. */
  host?: string;
  /** 0 (the default) picks a free port. */
  port?: number;
  /** When set, /v1 requests without `Authorization: Bearer <apiKey>` get a 401. */
  apiKey?: string;
  logger?: DemoModelLogger;
  /**
   * Pause after each streamed text delta, so text arrives over time as from a real model (live
   * streaming can then be watched, and tested). 0, the default, only yields between chunks.
   */
  chunkDelayMs?: number;
}

export interface DemoModelHandle {
  /** Base URL for an OpenAI client, e.g. http://127.0.0.1:PORT/v1 */
  url: string;
  port: number;
  close(): Promise<void>;
  /** Replaces the fault queue. */
  setFaults(faults: Fault[]): void;
  /** Swaps the scripts without restarting (validated like the rules file). */
  setRules(rules: DemoRules): void;
  requests(): RecordedRequest[];
  resetRequests(): void;
}

// A long-running demo must not grow without bound; tests never come close to this.
const MAX_RECORDED = 1000;
const MAX_BODY_BYTES = 10 * 1024 * 1024;

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
});
type ChatRequest = z.output<typeof ChatRequestSchema>;

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly type: string,
    readonly code: string | null,
    readonly param: string | null = null,
  ) {
    super(message);
  }
}

function errorBody(message: string, type: string, code: string | null, param: string | null = null): unknown {
  return { error: { message, type, param, code } };
}

function errorTypeFor(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 429) return 'rate_limit_error';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}

function writable(res: http.ServerResponse): boolean {
  return !res.destroyed && !res.writableEnded;
}

function sendJson(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (!writable(res)) return;
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(new HttpError(413, 'request body too large', 'invalid_request_error', 'body_too_large'));
        req.resume();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function estimateTokens(chars: number): number {
  return Math.ceil(chars / 4);
}

function usageFor(request: ChatRequest, reply: Extract<DemoAnswer, { ok: true }>) {
  let promptChars = 0;
  for (const m of request.messages) {
    promptChars += messageText(m.content).length;
    for (const c of m.tool_calls ?? []) promptChars += c.function.name.length + (c.function.arguments?.length ?? 0);
  }
  let completionChars = reply.text?.length ?? 0;
  for (const c of reply.toolCalls) completionChars += c.name.length + c.arguments.length;
  const prompt_tokens = estimateTokens(promptChars);
  const completion_tokens = estimateTokens(completionChars);
  return { prompt_tokens, completion_tokens, total_tokens: prompt_tokens + completion_tokens };
}

/** Splits text into word-sized deltas (long words further cut) whose concatenation is the text. */
export function textPieces(text: string, maxLen = 8): string[] {
  const pieces: string[] = [];
  for (const word of text.match(/\s*\S+\s*|\s+/g) ?? []) {
    for (let i = 0; i < word.length; i += maxLen) pieces.push(word.slice(i, i + maxLen));
  }
  return pieces;
}

function argumentPieces(args: string): string[] {
  const pieces: string[] = [];
  for (let i = 0; i < args.length; i += 12) pieces.push(args.slice(i, i + 12));
  return pieces;
}

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

export async function startDemoModel(opts: DemoModelOptions): Promise<DemoModelHandle> {
  let rules: ResolvedDemoRules = parseDemoRules(opts.rules);
  const host = opts.host ?? '127.0.0.1';
  const logger = opts.logger;
  const chunkDelayMs = opts.chunkDelayMs ?? 0;
  if (!Number.isInteger(chunkDelayMs) || chunkDelayMs < 0) throw new Error(`demo model: invalid chunkDelayMs ${chunkDelayMs}`);
  let faults: ResolvedFault[] = [];
  let recorded: RecordedRequest[] = [];
  let closed = false;
  // Delayed answers must not keep close() (and jest) waiting, so their timers are tracked.
  const sleepers = new Set<{ timer: NodeJS.Timeout; wake: () => void }>();

  const sleep = (ms: number): Promise<void> =>
    new Promise((resolve) => {
      if (closed) {
        resolve();
        return;
      }
      const sleeper = {
        timer: setTimeout(() => {
          sleepers.delete(sleeper);
          resolve();
        }, ms),
        wake: resolve,
      };
      sleepers.add(sleeper);
    });

  const takeFault = (): ResolvedFault | undefined => {
    const head = faults[0];
    if (!head) return undefined;
    if (head.times <= 1) faults = faults.slice(1);
    else faults = [{ ...head, times: head.times - 1 }, ...faults.slice(1)];
    return head;
  };

  const record = (req: http.IncomingMessage, path: string, raw: string): void => {
    let body: unknown = undefined;
    if (raw !== '') {
      try {
        body = JSON.parse(raw);
      } catch {
        body = raw;
      }
    }
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) {
      if (v === undefined) continue;
      headers[k] = k === 'authorization' ? '[redacted]' : Array.isArray(v) ? v.join(', ') : v;
    }
    recorded.push({ method: req.method ?? 'GET', path, headers, body, at: Date.now() });
    if (recorded.length > MAX_RECORDED) recorded = recorded.slice(-MAX_RECORDED);
  };

  const checkAuth = (req: http.IncomingMessage): void => {
    if (opts.apiKey === undefined) return;
    if (req.headers.authorization !== `Bearer ${opts.apiKey}`) {
      throw new HttpError(401, 'demo model: incorrect API key provided', 'invalid_request_error', 'invalid_api_key');
    }
  };

  const parseJson = (raw: string): unknown => {
    try {
      return JSON.parse(raw) as unknown;
    } catch {
      throw new HttpError(400, 'demo model: request body is not valid JSON', 'invalid_request_error', 'invalid_json');
    }
  };

  const handleChat = async (req: http.IncomingMessage, res: http.ServerResponse, raw: string): Promise<void> => {
    const fault = takeFault();
    if (fault) {
      logger?.info({ fault }, 'demo model: applying fault');
      if (fault.delayMs !== undefined) await sleep(fault.delayMs);
      if (fault.hangup && fault.afterChunks === undefined) {
        req.socket.destroy();
        return;
      }
      if (fault.status !== undefined) {
        const headers: Record<string, string> = {};
        if (fault.retryAfter !== undefined) headers['retry-after'] = String(fault.retryAfter);
        const message = fault.message ?? `demo model: injected fault (HTTP ${fault.status})`;
        sendJson(res, fault.status, errorBody(message, errorTypeFor(fault.status), 'injected_fault'), headers);
        return;
      }
    }
    checkAuth(req);
    const parsed = ChatRequestSchema.safeParse(parseJson(raw));
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const param = issue ? issue.path.map(String).join('.') : null;
      throw new HttpError(
        400,
        `demo model: invalid request: ${issue ? describeIssues([issue], '(body)')[0] : 'bad shape'}`,
        'invalid_request_error',
        'invalid_request',
        param,
      );
    }
    const request = parsed.data;
    const reply = answer(rules, request.messages);
    logger?.info(
      { script: reply.script, step: reply.step, ok: reply.ok, stream: request.stream === true },
      'demo model: chat completion',
    );
    if (!reply.ok) {
      throw new HttpError(400, reply.message, 'invalid_request_error', reply.code);
    }
    const id = `chatcmpl-demo${conversationHash(request.messages)}`;
    const created = Math.floor(Date.now() / 1000);
    const usage = usageFor(request, reply);
    const hangupAfter = fault?.hangup ? fault.afterChunks : undefined;
    if (request.stream === true) {
      await streamReply(res, {
        id,
        created,
        model: rules.model,
        reply,
        usage: request.stream_options?.include_usage === true ? usage : undefined,
        hangupAfter,
        chunkDelayMs: fault?.chunkDelayMs ?? chunkDelayMs,
        sleep,
      });
      return;
    }
    if (hangupAfter !== undefined) {
      req.socket.destroy();
      return;
    }
    sendJson(res, 200, {
      id,
      object: 'chat.completion',
      created,
      model: rules.model,
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: reply.text,
            refusal: null,
            ...(reply.toolCalls.length > 0
              ? {
                  tool_calls: reply.toolCalls.map((c) => ({
                    id: c.id,
                    type: 'function',
                    function: { name: c.name, arguments: c.arguments },
                  })),
                }
              : {}),
          },
          logprobs: null,
          finish_reason: reply.finishReason,
        },
      ],
      usage,
    });
  };

  const handleControl = (req: http.IncomingMessage, res: http.ServerResponse, path: string, raw: string): void => {
    const method = req.method ?? 'GET';
    if (path === '/__demo/faults') {
      if (method === 'GET') return sendJson(res, 200, faults);
      if (method === 'DELETE') {
        faults = [];
        return sendJson(res, 200, { ok: true });
      }
      if (method === 'POST') {
        const body = parseJson(raw);
        const parsed = FaultListSchema.safeParse(Array.isArray(body) ? body : [body]);
        if (!parsed.success) {
          const issue = parsed.error.issues[0];
          throw new HttpError(
            400,
            `demo model: invalid faults: ${issue ? describeIssues([issue], '')[0] : 'bad shape'}`,
            'invalid_request_error',
            'invalid_faults',
          );
        }
        faults = parsed.data;
        return sendJson(res, 200, { ok: true, faults: faults.length });
      }
    }
    if (path === '/__demo/requests') {
      if (method === 'GET') return sendJson(res, 200, recorded);
      if (method === 'DELETE') {
        recorded = [];
        return sendJson(res, 200, { ok: true });
      }
    }
    throw new HttpError(404, `demo model: no route for ${method} ${path}`, 'invalid_request_error', 'not_found');
  };

  const route = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    const method = req.method ?? 'GET';
    const path = new URL(req.url ?? '/', 'http://demo.invalid').pathname.replace(/\/+$/, '') || '/';
    const raw = await readBody(req);
    if (path.startsWith('/__demo/')) return handleControl(req, res, path, raw);
    record(req, path, raw);

    if (path === '/v1/chat/completions' || path === '/chat/completions') {
      if (method !== 'POST') {
        throw new HttpError(405, `demo model: use POST for ${path}`, 'invalid_request_error', 'method_not_allowed');
      }
      return handleChat(req, res, raw);
    }
    const modelMatch = /^\/(?:v1\/)?models(?:\/(.+))?$/.exec(path);
    if (modelMatch && method === 'GET') {
      checkAuth(req);
      const model = { id: rules.model, object: 'model', created: 0, owned_by: 'demo' };
      const wanted = modelMatch[1];
      if (wanted === undefined) return sendJson(res, 200, { object: 'list', data: [model] });
      if (decodeURIComponent(wanted) === rules.model) return sendJson(res, 200, model);
      throw new HttpError(404, `demo model: the model '${wanted}' does not exist`, 'invalid_request_error', 'model_not_found');
    }
    throw new HttpError(404, `demo model: no route for ${method} ${path}`, 'invalid_request_error', 'not_found');
  };

  const server = http.createServer((req, res) => {
    // A client that goes away mid-answer must not take the server down with it.
    res.on('error', () => undefined);
    req.on('error', () => undefined);
    route(req, res).catch((err: unknown) => {
      if (err instanceof HttpError) {
        sendJson(res, err.status, errorBody(err.message, err.type, err.code, err.param));
        return;
      }
      logger?.warn({ err: err instanceof Error ? err.message : String(err) }, 'demo model: internal error');
      sendJson(res, 500, errorBody('demo model: internal error', 'server_error', 'internal_error'));
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const urlHost = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '[::1]' : host.includes(':') ? `[${host}]` : host;
  const url = `http://${urlHost}:${port}/v1`;
  logger?.info({ url, model: rules.model, scripts: rules.scripts.length }, 'demo model listening');

  return {
    url,
    port,
    close: async () => {
      if (closed) return;
      closed = true;
      for (const s of sleepers) {
        clearTimeout(s.timer);
        s.wake();
      }
      sleepers.clear();
      const done = new Promise<void>((resolve) => server.close(() => resolve()));
      // close() alone waits for keep-alive sockets the OpenAI client holds open.
      server.closeAllConnections();
      await done;
    },
    setFaults: (next) => {
      faults = FaultListSchema.parse(next);
    },
    setRules: (next) => {
      rules = parseDemoRules(next);
    },
    requests: () => recorded.map((r) => ({ ...r })),
    resetRequests: () => {
      recorded = [];
    },
  };
}

interface StreamPlan {
  id: string;
  created: number;
  model: string;
  reply: Extract<DemoAnswer, { ok: true }>;
  usage: ReturnType<typeof usageFor> | undefined;
  hangupAfter: number | undefined;
  /** Pause after each text delta (0: just yield). */
  chunkDelayMs: number;
  /** The server's tracked sleep, so close() does not wait for a slow stream. */
  sleep: (ms: number) => Promise<void>;
}

async function streamReply(res: http.ServerResponse, plan: StreamPlan): Promise<void> {
  const { id, created, model, reply, usage } = plan;
  const base = { id, object: 'chat.completion.chunk', created, model, system_fingerprint: null };
  // With include_usage, OpenAI sends `usage: null` on every chunk but the last; clients may rely on it.
  const usageField = usage ? { usage: null } : {};
  const chunks: unknown[] = [];
  const textChunks = new Set<unknown>();
  const choice = (delta: Record<string, unknown>, finish: string | null = null) => ({
    ...base,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    ...usageField,
  });

  chunks.push(choice({ role: 'assistant', content: '', refusal: null }));
  for (const piece of textPieces(reply.text ?? '')) {
    const chunk = choice({ content: piece });
    chunks.push(chunk);
    textChunks.add(chunk);
  }
  reply.toolCalls.forEach((call, index) => {
    chunks.push(
      choice({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] }),
    );
    for (const piece of argumentPieces(call.arguments)) {
      chunks.push(choice({ tool_calls: [{ index, function: { arguments: piece } }] }));
    }
  });
  chunks.push(choice({}, reply.finishReason));
  if (usage) chunks.push({ ...base, choices: [], usage });

  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
  });
  let sent = 0;
  for (const chunk of chunks) {
    if (plan.hangupAfter !== undefined && sent >= plan.hangupAfter) {
      res.socket?.destroy();
      return;
    }
    if (!writable(res)) return;
    res.write(`data: ${JSON.stringify(chunk)}\n\n`);
    sent++;
    // Yielding between chunks lets them reach the client separately, as from a real model.
    if (plan.chunkDelayMs > 0 && textChunks.has(chunk)) await plan.sleep(plan.chunkDelayMs);
    else await tick();
  }
  if (writable(res)) res.end('data: [DONE]\n\n');
}
