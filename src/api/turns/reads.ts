/** Reading turns and sessions: the caller's turn and its view, a session's transcript, what a queued turn waits for. */
import type { z } from 'zod';
import type { UserContext } from '../../shared/user';
import { TERMINAL_STATUSES, type TurnState } from '../../shared/turn';
import { encodeSessionCursor, type SessionList, type SessionMessages, type TurnView, type WaitingView } from '../contract';
import type { SessionCursor } from '../gateway';
import { notFound } from '../errors';
import { mcpMessages } from './mcp-messages';
import type { TurnServiceOptions } from './options';
import { unavailableOnError } from './unavailable';
import { approvalTimeoutMs, decidable, ownedBy, readableBy, turnView } from './views';

/** The caller's turn with its events after `after`: 404 unless the caller may read it. */
export async function readTurn(
  opts: TurnServiceOptions,
  user: UserContext,
  turnId: string,
  read: { after?: number; likelyRunning?: boolean } = {},
): Promise<TurnState> {
  const state = await unavailableOnError(() =>
    opts.gateway.getTurn(turnId, read.after, read.likelyRunning ? { likelyRunning: true } : undefined),
  );
  if (!state || !readableBy(state, user, opts.policy())) throw notFound(`turn ${turnId}`);
  return state;
}

export function createReads(opts: TurnServiceOptions) {
  const { gateway } = opts;
  return {
    /** The caller's turn with its events after `after`. */
    turn: (user: UserContext, turnId: string, read: { after?: number; likelyRunning?: boolean } = {}): Promise<TurnState> =>
      readTurn(opts, user, turnId, read),

    /** The caller's turn's MCP messages (mcp-messages.ts), arguments redacted as in the audit log. */
    mcpMessages: async (user: UserContext, turnId: string) => mcpMessages(await readTurn(opts, user, turnId), opts.redactArguments),

    /** The caller's sessions, newest first: at most `limit` after `cursor`, and where the next page starts. */
    sessions: (user: UserContext, limit: number, cursor?: SessionCursor) => unavailableOnError(() => gateway.listSessions(user, limit, cursor)),

    /**
     * GET /v1/sessions: a page of the caller's sessions, each with its newest message (read from its
     * newest turn, one read each: a session that cannot answer now is listed without it).
     */
    async sessionList(user: UserContext, limit: number, cursor?: SessionCursor): Promise<z.output<typeof SessionList>> {
      const page = await unavailableOnError(() => gateway.listSessions(user, limit, cursor));
      const sessions = await Promise.all(
        page.sessions.map(async (s) => {
          const last = (await gateway.getSession(user, s.sessionId, 1).catch(() => null))?.messages.at(-1);
          return {
            sessionId: s.sessionId,
            title: s.title ?? null,
            startedAt: s.startedAt,
            open: s.open,
            ...(last ? { lastMessage: { role: last.role, preview: last.content.slice(0, 200), at: last.at } } : {}),
            messagesUrl: `/v1/sessions/${s.sessionId}/messages`,
          };
        }),
      );
      return { sessions, ...(page.next ? { nextCursor: encodeSessionCursor(page.next) } : {}) };
    },

    /** The caller's turns, newest first (at most `limit`). */
    turns: (user: UserContext, limit: number) => unavailableOnError(() => gateway.listTurns(user, limit)),

    async view(user: UserContext, turnId: string): Promise<TurnView> {
      const state = await readTurn(opts, user, turnId);
      return turnView(state, {
        approvalTimeoutMs: approvalTimeoutMs(opts.policy()),
        ...(ownedBy(state, user) ? {} : { redactArguments: opts.redactArguments }),
      });
    },

    async hasSession(user: UserContext, sessionId: string): Promise<boolean> {
      return (await unavailableOnError(() => gateway.getSession(user, sessionId))) !== null;
    },

    /**
     * What the queued turn `state` waits for: the session's turn ahead of it, and that turn's pending
     * approvals (a decision nobody takes holds the whole session up to the policy's timeout). Undefined
     * once it runs (or ended). Only the owner follows a queued turn, so arguments are not redacted.
     */
    async waitingOn(state: TurnState): Promise<WaitingView | undefined> {
      if (!state.owner || TERMINAL_STATUSES.includes(state.status)) return undefined;
      const session = await gateway.getSession(state.owner, state.sessionId);
      const behind = session?.activeTurnId;
      if (!behind || behind === state.turnId || !session?.queuedTurnIds.includes(state.turnId)) return undefined;
      const ahead = await gateway.getTurn(behind);
      if (!ahead || TERMINAL_STATUSES.includes(ahead.status)) return undefined;
      return {
        turnId: state.turnId,
        behind,
        status: ahead.status === 'awaiting_approval' ? 'awaiting_approval' : 'running',
        pendingApprovals: decidable(ahead, approvalTimeoutMs(opts.policy())),
        cancelUrl: `/v1/turns/${behind}/cancel`,
      };
    },

    async session(user: UserContext, sessionId: string): Promise<z.output<typeof SessionMessages>> {
      // Read from the turns themselves: an answer is in the transcript as soon as its turn has it.
      const [view, summary] = await unavailableOnError(() => Promise.all([gateway.getSession(user, sessionId), gateway.sessionSummary(user, sessionId)]));
      if (!view) throw notFound(`session ${sessionId}`);
      const activeId = view.activeTurnId;
      const activeTurn = activeId ? await unavailableOnError(() => gateway.getTurn(activeId, undefined, { likelyRunning: true })) : null;
      const pending = activeTurn?.status === 'awaiting_approval' ? decidable(activeTurn, approvalTimeoutMs(opts.policy())) : [];
      return {
        sessionId,
        title: summary?.title ?? null,
        messages: view.messages,
        totalMessages: view.totalMessages,
        firstRetainedIndex: view.messages[0]?.index ?? view.totalMessages,
        ...(view.summary ? { summary: view.summary } : {}),
        ...(view.activeTurnId ? { activeTurnId: view.activeTurnId } : {}),
        queuedTurnIds: view.queuedTurnIds,
        ...(pending.length ? { pendingApprovals: pending } : {}),
      };
    },
  };
}
