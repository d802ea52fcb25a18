/**
 * Live LLM text: the side channel from the worker's callLlm activity to the API process. Token
 * deltas travel here instead of through Temporal history (one history event per token would bloat
 * every turn); the durable record stays the final text in workflow state. Chunks are best effort:
 * `offset` lets the receiver detect gaps and duplicates, and `attempt` tells a retried LLM call (whose
 * partial text must be discarded) from the attempt before it.
 *
 * The same channel carries copies of the turn's durable events (kind `event`, from the workflow's
 * sink), so the API can stream them without querying the workflow; an event too large to carry
 * travels as a `poll` hint (its id in `offset`). Event ids are dense per turn: a receiver sees a lost
 * one as a gap and reads the turn from Temporal instead (docs/decisions/0015-durable-events-pushed.md).
 */
import { z } from 'zod';
import { type PushedTurn, TURN_EVENT_TYPES } from '../shared/turn';

/** Longest turn id accepted (turn ids reach ~110 characters). */
export const MAX_TURN_ID_CHARS = 200;
/** Longest text of one chunk, in UTF-16 code units (JS string length); publishers split longer deltas. */
export const MAX_CHUNK_TEXT_CHARS = 64 * 1024;
/** Longest message of a notice chunk. */
export const MAX_NOTICE_CHARS = 1_000;
/** Largest event an `event` chunk carries, in JSON characters; a larger one travels as a `poll` hint. */
export const MAX_EVENT_CHARS = 64 * 1024;
/** Largest memory a `memory` chunk carries, in JSON characters; a larger one is not sent (the next turn reads it from Temporal). */
export const MAX_MEMORY_CHARS = 64 * 1024;
/** Most chunks in one batch. */
export const MAX_BATCH_CHUNKS = 1000;

/** A durable turn event as the workflow's record numbered it (src/shared/turn.ts TurnEvent). */
export const PushedEventSchema = z.object({
  id: z.number().int().min(1).max(10_000_000),
  type: z.enum(TURN_EVENT_TYPES),
  at: z.string().max(64),
  data: z.record(z.string(), z.unknown()),
});

/** Whose turn an event belongs to, so the API can serve a stream's first read without asking Temporal. */
export const PushedTurnSchema: z.ZodType<PushedTurn> = z.object({
  sessionId: z.string().min(1).max(MAX_TURN_ID_CHARS),
  owner: z.object({ id: z.string().min(1).max(MAX_TURN_ID_CHARS), tenant: z.string().min(1).max(MAX_TURN_ID_CHARS) }).optional(),
});

/**
 * The memory a turn of a chain handed on when it ended (TurnMemory: its summary and exchanges, each
 * message a user's request or an answer in plain text); the publisher sends only what passes it.
 */
export const HandedMemorySchema = z.object({
  summary: z.string().optional(),
  messages: z.array(z.object({ role: z.enum(['user', 'assistant']), content: z.string() })).max(10_000),
});

export const LiveChunkSchema = z
  .object({
    turnId: z.string().min(1).max(MAX_TURN_ID_CHARS),
    /** The LLM step within the turn (1-based), as in LlmRequest.step. */
    step: z.number().int().min(1).max(1_000_000),
    /** The activity attempt (1-based); a higher attempt of the same step replaces the text. */
    attempt: z.number().int().min(1).max(1_000_000),
    /**
     * `reset`: a new attempt starts, discard partial text; `end`: the step's text is complete;
     * `notice`: this attempt failed and another follows (`text` says why and when; not part of the answer);
     * with `toolCallId`, about that tool call (its attempt `attempt` starts; step 1), not about the step's text;
     * `progress`: a tool call's server reported progress (`toolCallId`, `progress`, `total`; `text` is its message);
     * `event`: a durable turn event (`event`, `turn`); `poll`: durable event `offset` exists but was too large to carry;
     * `memory`: the turn ended and handed on `memory` to the next turn of its session (decision 0033).
     * Step and attempt mean nothing for these four (1).
     */
    kind: z.enum(['delta', 'reset', 'end', 'notice', 'progress', 'event', 'poll', 'memory']),
    /** Where `text` starts within this attempt's text (for `end`: the total length sent). */
    offset: z.number().int().min(0),
    text: z.string().max(MAX_CHUNK_TEXT_CHARS),
    toolCallId: z.string().min(1).max(MAX_TURN_ID_CHARS).optional(),
    progress: z.number().finite().optional(),
    total: z.number().finite().optional(),
    event: PushedEventSchema.optional(),
    turn: PushedTurnSchema.optional(),
    memory: HandedMemorySchema.optional(),
  })
  .refine((c) => c.kind === 'delta' || c.kind === 'notice' || c.kind === 'progress' || c.text === '', { message: 'reset and end chunks carry no text', path: ['text'] })
  .refine((c) => (c.kind !== 'notice' && c.kind !== 'progress') || c.text.length <= MAX_NOTICE_CHARS, {
    message: `a notice or progress message is at most ${MAX_NOTICE_CHARS} characters`,
    path: ['text'],
  })
  .refine((c) => c.kind !== 'progress' || (c.toolCallId !== undefined && c.progress !== undefined), {
    message: 'a progress chunk names its toolCallId and progress',
    path: ['toolCallId'],
  })
  .refine((c) => (c.kind === 'event') === (c.event !== undefined), { message: 'an event chunk, and only it, carries an event', path: ['event'] })
  .refine((c) => (c.kind === 'memory') === (c.memory !== undefined), { message: 'a memory chunk, and only it, carries a memory', path: ['memory'] })
  .refine((c) => c.kind !== 'poll' || c.offset >= 1, { message: 'a poll chunk names the event id it stands for', path: ['offset'] });

export type LiveChunk = z.output<typeof LiveChunkSchema>;

/** Progress and notices of a tool call: about no step's text, they go out as they come and none is kept. */
export const aboutToolCall = (c: LiveChunk): boolean => c.kind === 'progress' || (c.kind === 'notice' && c.toolCallId !== undefined);
export type LiveChunkKind = LiveChunk['kind'];

export const LiveBatchSchema = z.object({ chunks: z.array(LiveChunkSchema).max(MAX_BATCH_CHUNKS) });
export type LiveBatch = z.output<typeof LiveBatchSchema>;

/** Structurally compatible with pino, so callers can pass their logger as is. */
export interface LiveLogger {
  warn(obj: Record<string, unknown>, msg?: string): void;
}
