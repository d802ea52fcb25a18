/**
 * The `requestState` of an `input_required` answer (MCP 2026-07-28, multi-round-trip requests): which
 * turn the retried call continues, which question it answers, and for whom. It travels through the
 * client, so it is sealed (AES-256-GCM, ../../security/seal.ts): a client can neither read nor alter it,
 * and a state minted for one caller, or older than its lifetime, is refused.
 */
import { z } from 'zod';
import { sealToken, unsealToken } from '../../security/seal';
import type { UserContext } from '../../shared/user';

const State = z.object({
  v: z.literal(1),
  turnId: z.string(),
  sessionId: z.string(),
  /** What the client was asked: a decision on a tool call, or a server's question on it. */
  kind: z.enum(['approval', 'question']),
  toolCallId: z.string(),
  /** Events up to here were seen: following resumes after it. */
  after: z.number().int().nonnegative(),
  sub: z.string(),
  tenant: z.string(),
  exp: z.number(),
});
export type ChatState = Omit<z.output<typeof State>, 'v' | 'sub' | 'tenant' | 'exp'>;

/** How long a client may take to answer before its retry is refused (the turn keeps waiting regardless). */
const STATE_TTL_MS = 60 * 60 * 1000;

export function mintState(key: string, user: UserContext, state: ChatState, now = Date.now()): string {
  return sealToken(JSON.stringify({ v: 1, ...state, sub: user.id, tenant: user.tenant, exp: now + STATE_TTL_MS }), key);
}

/** The state, or undefined when it was not minted here for this caller, was altered, or has expired. */
export function openState(key: string, user: UserContext, sealed: string, now = Date.now()): ChatState | undefined {
  const text = unsealToken(sealed, key);
  if (text === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  const state = State.safeParse(parsed);
  if (!state.success || state.data.sub !== user.id || state.data.tenant !== user.tenant || state.data.exp < now) return undefined;
  const { turnId, sessionId, kind, toolCallId, after } = state.data;
  return { turnId, sessionId, kind, toolCallId, after };
}
