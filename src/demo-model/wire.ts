/**
 * A wire format the demo model speaks (OpenAI chat completions, Anthropic messages, Gemini
 * generateContent): how its requests become the OpenAI-shaped messages the rule engine (rules.ts)
 * answers, and how a scripted answer goes back as that provider's JSON or SSE events. The server
 * (server.ts) owns everything else once for all of them: faults, recorded requests, delays, hang-ups.
 */
import type http from 'node:http';
import type { z } from 'zod';
import { describeIssues } from '../shared/issues';
import type { ChatMessageLike, DemoAnswer } from './rules';

export type OkAnswer = Extract<DemoAnswer, { ok: true }>;

export class HttpError extends Error {
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

/** A request in the rule engine's terms. */
export interface WireRequest {
  messages: ChatMessageLike[];
  stream: boolean;
  /** OpenAI sends usage in a stream only when asked (stream_options.include_usage); the others always do. */
  includeUsage: boolean;
  /** The characters of the request's cacheable prefix (tools and system prompt up to a cache breakpoint); 0: none. */
  cachePrefix?: string;
  /** The names of the tools the request offers. */
  tools: string[];
}

export interface ReplyPlan {
  id: string;
  created: number;
  model: string;
  reply: OkAnswer;
  includeUsage: boolean;
  usage: { promptTokens: number; completionTokens: number; cachedTokens: number; cacheWriteTokens: number };
}

/** One server-sent event; `text` marks a text delta (paced by the server's chunk delay). */
export interface SseFrame {
  event?: string;
  data: unknown;
  text?: boolean;
}

export interface Dialect {
  readonly name: 'openai' | 'anthropic' | 'gemini';
  /** Whether this dialect serves the POST route; with Gemini, the path names the model and the method. */
  handles(path: string): boolean;
  authorized(req: http.IncomingMessage, apiKey: string): boolean;
  /** Validated request (throws HttpError 400 on a bad shape). */
  parse(body: unknown, path: string, url: URL): WireRequest;
  stream(plan: ReplyPlan): { frames: SseFrame[]; trailer?: string };
  whole(plan: ReplyPlan): unknown;
  errorBody(err: HttpError, retryAfterSeconds?: number): unknown;
}

export function estimateTokens(chars: number): number {
  return Math.ceil(chars / 4);
}

/** Characters of a conversation, as the demo model counts prompt tokens. */
export function promptChars(messages: readonly ChatMessageLike[]): number {
  let chars = 0;
  for (const m of messages) {
    chars += typeof m.content === 'string' ? m.content.length : (m.content ?? []).reduce((n, p) => n + (p.text?.length ?? 0), 0);
    for (const c of m.tool_calls ?? []) chars += c.function.name.length + (c.function.arguments?.length ?? 0);
  }
  return chars;
}

export function completionChars(reply: OkAnswer): number {
  let chars = reply.text?.length ?? 0;
  for (const c of reply.toolCalls) chars += c.name.length + c.arguments.length;
  return chars;
}

/** Splits text into word-sized deltas (long words further cut) whose concatenation is the text. */
export function textPieces(text: string, maxLen = 8): string[] {
  const pieces: string[] = [];
  for (const word of text.match(/\s*\S+\s*|\s+/g) ?? []) {
    for (let i = 0; i < word.length; i += maxLen) pieces.push(word.slice(i, i + maxLen));
  }
  return pieces;
}

export function argumentPieces(args: string): string[] {
  const pieces: string[] = [];
  for (let i = 0; i < args.length; i += 12) pieces.push(args.slice(i, i + 12));
  return pieces;
}

export function invalidRequest(message: string, param: string | null = null): HttpError {
  return new HttpError(400, `demo model: invalid request: ${message}`, 'invalid_request_error', 'invalid_request', param);
}

/** A request body checked against its dialect's schema; the first issue as the 400 the real endpoints would send. */
export function parseBody<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  const parsed = schema.safeParse(body);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  throw invalidRequest(issue ? (describeIssues([issue], '(body)')[0] ?? 'bad shape') : 'bad shape', issue ? issue.path.map(String).join('.') : null);
}

/** Scripted arguments may be deliberately invalid JSON (rawArguments): the fallback then. */
export function jsonOr(text: string, fallback: unknown): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return fallback;
  }
}
