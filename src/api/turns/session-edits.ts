/**
 * The caller's session as a resource of its own (docs/decisions/0037-renaming-and-deleting-sessions.md):
 * read it, title it, delete it. Only its owner reaches it: the index is keyed by owner, so another
 * user's session is `404` here as it is to every read.
 */
import type { z } from 'zod';
import type { UserContext } from '../../shared/user';
import type { SessionInfo } from '../contract';
import { notFound } from '../errors';
import type { SessionSummary } from '../gateway';
import type { TurnServiceOptions } from './options';
import { unavailableOnError } from './unavailable';

const infoOf = (s: SessionSummary): z.output<typeof SessionInfo> => ({
  sessionId: s.sessionId,
  title: s.title ?? null,
  startedAt: s.startedAt,
  lastAt: s.lastAt,
  messagesUrl: `/v1/sessions/${s.sessionId}/messages`,
});

export function createSessionEdits(opts: TurnServiceOptions) {
  const { gateway } = opts;
  const ownerOf = (user: UserContext) => ({ id: user.id, tenant: user.tenant });
  return {
    /** GET /v1/sessions/:sessionId: 404 unless the caller has (and did not delete) it. */
    async sessionInfo(user: UserContext, sessionId: string): Promise<z.output<typeof SessionInfo>> {
      const found = await unavailableOnError(() => gateway.sessionSummary(ownerOf(user), sessionId));
      if (!found) throw notFound(`session ${sessionId}`);
      return infoOf(found);
    },

    /** PATCH /v1/sessions/:sessionId: `title` is checked already (SessionTitleBody). */
    async renameSession(user: UserContext, sessionId: string, title: string): Promise<z.output<typeof SessionInfo>> {
      const renamed = await unavailableOnError(() => gateway.renameSession(ownerOf(user), sessionId, title));
      if (!renamed) throw notFound(`session ${sessionId}`);
      return infoOf(renamed);
    },

    /** DELETE /v1/sessions/:sessionId: gone from the caller's list and reads; its turns stay in Temporal. */
    async deleteSession(user: UserContext, sessionId: string): Promise<void> {
      if (!(await unavailableOnError(() => gateway.deleteSession(ownerOf(user), sessionId)))) throw notFound(`session ${sessionId}`);
    },
  };
}
