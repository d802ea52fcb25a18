/** Sessions: the caller's list of them and one session's conversation. */
import { z } from 'zod';
import { DateTime, TurnStatusSchema } from './common';
import type { SessionCursor } from '../gateway';
import { DecidableApproval } from './turns';

/** A session's title as its owner set it; null until set. */
const TitleOut = z.string().nullable().describe("The title the session's owner gave it (`PATCH /v1/sessions/{sessionId}`); `null` until one is set.");

/** GET /v1/sessions/:sessionId/messages (`TranscriptMessage` of src/shared/session.ts for the items). */
export const SessionMessages = z.object({
  sessionId: z.string(),
  title: TitleOut,
  messages: z
    .array(
      z.object({
        index: z.number().int().nonnegative().describe('Position in the whole conversation; stable.'),
        role: z.enum(['user', 'assistant']),
        content: z.string(),
        turnId: z.string(),
        at: DateTime,
        status: z
          .enum(['queued', ...TurnStatusSchema.options])
          .describe("The turn's outcome; user messages carry it too, so a queued or failed request is visible."),
      }),
    )
    .describe('The retained transcript, oldest first.'),
  summary: z.string().optional().describe('Summary of the older messages the model no longer sees verbatim.'),
  activeTurnId: z.string().optional().describe('The turn running now, if any.'),
  queuedTurnIds: z.array(z.string()).describe('Turns waiting behind the active one, in order.'),
  pendingApprovals: z
    .array(DecidableApproval)
    .optional()
    .describe("The active turn's calls waiting for a decision: the queued turns wait for them too (present while it is `awaiting_approval`)."),
  firstRetainedIndex: z.number().int().nonnegative().describe('Position in the whole conversation of the first message returned.'),
  totalMessages: z.number().int().nonnegative().describe('Messages in the whole conversation, retained or not.'),
});


const CURSOR = /^[A-Za-z0-9_-]{1,400}$/;
const CURSOR_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** The opaque `cursor` of GET /v1/sessions: base64url of the last listed session's latest message time, a space and its id. */
export function encodeSessionCursor(cursor: SessionCursor): string {
  return Buffer.from(`${cursor.lastAt} ${cursor.sessionId}`).toString('base64url');
}

/** The cursor `encodeSessionCursor` made, or undefined for anything else. */
export function decodeSessionCursor(text: string): SessionCursor | undefined {
  if (!CURSOR.test(text)) return undefined;
  const match = /^(\S+) (.+)$/.exec(Buffer.from(text, 'base64url').toString('utf8'));
  const lastAt = match?.[1];
  const sessionId = match?.[2];
  if (!lastAt || !sessionId || !CURSOR_TIME.test(lastAt) || Number.isNaN(Date.parse(lastAt))) return undefined;
  return { lastAt, sessionId };
}

/** GET /v1/sessions: a page of the caller's sessions. */
export const SessionsQuery = z
  .object({
    limit: z.coerce.number().int().min(1).max(100).default(20).describe('Sessions per page, 1 to 100 (default 20).'),
    cursor: z
      .string()
      .regex(CURSOR, "not a cursor of this list (pass a page's `nextCursor` as it came)")
      .optional()
      .describe("Where the page starts: the previous page's `nextCursor`, as it was sent (an opaque string). Anything else: `400 invalid_request`."),
  })
  .strict();

export const SessionList = z.object({
  sessions: z
    .array(
      z.object({
        sessionId: z.string(),
        title: TitleOut,
        startedAt: DateTime.describe("When the session's first message was sent."),
        open: z.boolean().describe('Always `true`: a session is the chain of its turns and takes a message at any time (kept for clients of the earlier protocol).'),
        lastMessage: z
          .object({
            role: z.enum(['user', 'assistant']),
            preview: z.string().describe('Its first 200 characters.'),
            at: DateTime,
          })
          .optional()
          .describe('The newest message of the conversation; absent when the session cannot be read right now or has none retained.'),
        messagesUrl: z.string().describe('`/v1/sessions/{sessionId}/messages`: the whole conversation.'),
      }),
    )
    .describe('Newest first, by their latest message.'),
  nextCursor: z.string().optional().describe('Pass as `cursor` for the next page; absent on the last page.'),
});

/** Longest session title, in characters. */
export const SESSION_TITLE_MAX = 200;
/** Not blank, one line: no control character, something besides white space (trimmed before it is kept). */
const TITLE = /^[^\x00-\x1f\x7f]*[^\s\x00-\x1f\x7f][^\x00-\x1f\x7f]*$/;

/** PATCH /v1/sessions/:sessionId: the session's new title. */
export const SessionTitleBody = z
  .object({
    title: z
      .string()
      .trim()
      .min(1, 'must not be blank')
      .max(SESSION_TITLE_MAX, `must be at most ${SESSION_TITLE_MAX} characters`)
      .regex(TITLE, 'must be one line of text without control characters')
      .describe(`The new title: one line, 1 to ${SESSION_TITLE_MAX} characters once white space at either end is trimmed (it is kept trimmed).`),
  })
  .strict();

/** GET and PATCH /v1/sessions/:sessionId: the session as the list shows it, without its last message. */
export const SessionInfo = z.object({
  sessionId: z.string(),
  title: TitleOut,
  startedAt: DateTime.describe("When the session's first message was sent."),
  lastAt: DateTime.describe('When its latest message was sent.'),
  messagesUrl: z.string().describe('`/v1/sessions/{sessionId}/messages`: the whole conversation.'),
});
