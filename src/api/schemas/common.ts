/** The pieces every part of the contract shares: ids, times, the error shape, parsing a request part. */
import { z } from 'zod';
import { describeIssues } from '../../shared/issues';
import { SESSION_ID_PATTERN } from '../../shared/ids';
import { TURN_STATUSES } from '../../shared/turn';
import { HttpError } from '../errors';

/** `path: sessionId: must match ...`: where the problem is, then each issue (see src/shared/issues.ts). */
export function describeProblem(where: string, error: z.ZodError): string {
  return `${where}: ${describeIssues(error.issues, '').join('; ')}`;
}

/** Parses a request part; a mismatch is the caller's mistake: 400 `invalid_request`. */
export function parseRequest<S extends z.ZodType>(schema: S, value: unknown, where: string): z.output<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  throw new HttpError(400, 'invalid_request', describeProblem(where, result.error));
}

export const SessionId = z
  .string()
  .regex(SESSION_ID_PATTERN, 'must match ^[a-zA-Z0-9_-]{1,64}$')
  .describe('Conversation id, chosen by the client; per user (two users may both use `demo`).');
export const TurnId = z.string().min(1).max(200).describe('Turn id, as returned by `POST /v1/sessions/:sessionId/messages`.');
export const ToolCallId = z
  .string()
  .min(1)
  .max(200)
  .describe('The tool call waiting for a decision (`toolCallId` of the `approval_required` event).');
export const IdempotencyKey = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces')
  .describe('Printable ASCII without spaces. A repeated key (same user and session) returns the same turn with `200` instead of starting a second one.');

export const DateTime = z.string().meta({ format: 'date-time' });

/** The one error shape of the API: `{ "error": { "code", "message" } }`, never a stack trace. */
export const ErrorBody = z.object({
  error: z.object({
    code: z.string().describe('Stable, machine-readable code, e.g. `not_found`.'),
    message: z.string().describe('For people; never contains secrets or stack traces.'),
  }),
});

export const TurnStatusSchema = z.enum(TURN_STATUSES);
