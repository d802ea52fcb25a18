/**
 * The demo model as an HTTP server speaking the OpenAI Chat Completions API, Anthropic's Messages API
 * and the Gemini API (wire.ts; one rule engine, rules.ts, answers all three), so the host talks to it
 * through the very same client code it uses for a real provider. Built on node:http alone so its
 * wire behaviour (SSE framing, hang-ups, status codes) is explicit and easy to fault-inject.
 *
 * Routes:
 *   POST /v1/chat/completions (also /chat/completions)   OpenAI: scripted answer, streaming or not
 *   POST /v1/messages                                    Anthropic: the same, as messages and SSE events
 *   POST /v1[beta]/models/:model:streamGenerateContent Gemini (also :generateContent)
 *   GET  /v1/models, /v1/models/:id                     the single configured model
 *   GET|POST|DELETE /__demo/faults                       inspect / replace / clear the fault queue
 *   GET|DELETE /__demo/requests                          inspect / clear recorded requests
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import { answer, type ChatMessageLike, conversationHash, parseDemoRules, type DemoRules, type ResolvedDemoRules } from './rules';
import { describeIssues } from '../shared/issues';
import { anthropicWire } from './anthropic-wire';
import { geminiWire } from './gemini-wire';
import { openAiWire } from './openai-wire';
import { completionChars, type Dialect, estimateTokens, HttpError, promptChars, type ReplyPlan } from './wire';
import { readBody, sendJson, streamReply } from './http-io';

export { textPieces } from './wire';

const DIALECTS: readonly Dialect[] = [openAiWire, anthropicWire, geminiWire];

export const FaultSchema = z
  .object({
    /** Answer with this HTTP status and an error body in the request's wire format. */
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
    /** How many model requests (any wire format) this fault applies to. */
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
  /** Lower-cased header names; the key headers (`authorization`, `x-api-key`, `x-goog-api-key`) are redacted. */
  headers: Record<string, string>;
  /** Parsed JSON body; the raw text when it was not JSON; undefined when empty. */
  body: unknown;
  /** Epoch milliseconds. */
  at: number;
  /** A model request as the rule engine read it (OpenAI-shaped, whatever the wire format), once parsed. */
  conversation?: ChatMessageLike[];
}

const KEY_HEADERS = new Set(['authorization', 'x-api-key', 'x-goog-api-key']);

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
  /** When set, requests without the key (`Authorization: Bearer`, Anthropic's `x-api-key`, Gemini's `x-goog-api-key`) get a 401. */
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
  /** Base URL for the Anthropic and Gemini SDKs (they add /v1/messages, /v1beta/...), e.g. http://127.0.0.1:PORT */
  origin: string;
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

  const record = (req: http.IncomingMessage, path: string, raw: string): RecordedRequest => {
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
      headers[k] = KEY_HEADERS.has(k) ? '[redacted]' : Array.isArray(v) ? v.join(', ') : v;
    }
    const entry: RecordedRequest = { method: req.method ?? 'GET', path, headers, body, at: Date.now() };
    recorded.push(entry);
    if (recorded.length > MAX_RECORDED) recorded = recorded.slice(-MAX_RECORDED);
    return entry;
  };

  const checkAuth = (req: http.IncomingMessage, dialect: Dialect): void => {
    if (opts.apiKey === undefined) return;
    if (!dialect.authorized(req, opts.apiKey)) {
      throw new HttpError(401, 'demo model: incorrect API key provided', 'invalid_request_error', 'invalid_api_key');
    }
  };

  // Prefixes seen with a cache breakpoint (Anthropic): the first request writes them, later ones read.
  const cached = new Set<string>();

  const parseJson = (raw: string): unknown => {
    try {
      return JSON.parse(raw) as unknown;
    } catch {
      throw new HttpError(400, 'demo model: request body is not valid JSON', 'invalid_request_error', 'invalid_json');
    }
  };

  const handleChat = async (req: http.IncomingMessage, res: http.ServerResponse, raw: string, dialect: Dialect, url: URL, entry: RecordedRequest): Promise<void> => {
    const fault = takeFault();
    if (fault) {
      logger?.info({ fault, dialect: dialect.name }, 'demo model: applying fault');
      if (fault.delayMs !== undefined) await sleep(fault.delayMs);
      if (fault.hangup && fault.afterChunks === undefined) {
        req.socket.destroy();
        return;
      }
      if (fault.status !== undefined) {
        const headers: Record<string, string> = {};
        if (fault.retryAfter !== undefined) headers['retry-after'] = String(fault.retryAfter);
        const message = fault.message ?? `demo model: injected fault (HTTP ${fault.status})`;
        sendJson(res, fault.status, dialect.errorBody(new HttpError(fault.status, message, 'injected', 'injected_fault'), fault.retryAfter), headers);
        return;
      }
    }
    checkAuth(req, dialect);
    const request = dialect.parse(parseJson(raw), url.pathname, url);
    entry.conversation = request.messages;
    const reply = answer(rules, request.messages, request.tools);
    logger?.info({ script: reply.script, step: reply.step, ok: reply.ok, stream: request.stream, dialect: dialect.name }, 'demo model: chat completion');
    if (!reply.ok) {
      throw new HttpError(400, reply.message, 'invalid_request_error', reply.code);
    }
    const promptTokens = estimateTokens(promptChars(request.messages) + (request.cachePrefix?.length ?? 0));
    const prefixTokens = request.cachePrefix ? estimateTokens(request.cachePrefix.length) : 0;
    const hit = request.cachePrefix ? cached.has(request.cachePrefix) : false;
    if (request.cachePrefix) cached.add(request.cachePrefix);
    const plan: ReplyPlan = {
      id: `${dialect.name === 'openai' ? 'chatcmpl' : 'msg'}-demo${conversationHash(request.messages)}`,
      created: Math.floor(Date.now() / 1000),
      model: rules.model,
      reply,
      includeUsage: request.includeUsage,
      usage: {
        promptTokens,
        completionTokens: estimateTokens(completionChars(reply)),
        cachedTokens: hit ? prefixTokens : 0,
        cacheWriteTokens: hit ? 0 : prefixTokens,
      },
    };
    const hangupAfter = fault?.hangup ? fault.afterChunks : undefined;
    if (request.stream) {
      await streamReply(res, dialect.stream(plan), { hangupAfter, chunkDelayMs: fault?.chunkDelayMs ?? chunkDelayMs, sleep });
      return;
    }
    if (hangupAfter !== undefined) {
      req.socket.destroy();
      return;
    }
    sendJson(res, 200, dialect.whole(plan));
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
    const url = new URL(req.url ?? '/', 'http://demo.invalid');
    const path = url.pathname.replace(/\/+$/, '') || '/';
    const raw = await readBody(req);
    if (path.startsWith('/__demo/')) return handleControl(req, res, path, raw);
    const entry = record(req, path, raw);

    const dialect = DIALECTS.find((d) => d.handles(path));
    if (dialect) {
      if (method !== 'POST') {
        throw new HttpError(405, `demo model: use POST for ${path}`, 'invalid_request_error', 'method_not_allowed');
      }
      return handleChat(req, res, raw, dialect, url, entry);
    }
    const modelMatch = /^\/(?:v1\/)?models(?:\/(.+))?$/.exec(path);
    if (modelMatch && method === 'GET') {
      checkAuth(req, openAiWire);
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
        const path = new URL(req.url ?? '/', 'http://demo.invalid').pathname;
        sendJson(res, err.status, (DIALECTS.find((d) => d.handles(path)) ?? openAiWire).errorBody(err));
        return;
      }
      logger?.warn({ err: err instanceof Error ? err.message : String(err) }, 'demo model: internal error');
      sendJson(res, 500, openAiWire.errorBody(new HttpError(500, 'demo model: internal error', 'server_error', 'internal_error')));
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
  const origin = `http://${urlHost}:${port}`;
  const url = `${origin}/v1`;
  logger?.info({ url, model: rules.model, scripts: rules.scripts.length }, 'demo model listening');

  return {
    url,
    origin,
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
