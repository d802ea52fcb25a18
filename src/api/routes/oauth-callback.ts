/**
 * GET /v1/oauth/callback: the redirect URI of OAuth-protected MCP servers. The user's browser lands
 * here after consenting; the authorization code is put beside the pending authorization in the
 * sealed store, where the worker finds it on the tool call's next attempt and exchanges it (it holds
 * the PKCE verifier and the client's credentials). No bearer token: a browser redirect carries none,
 * and the unguessable `state` names the authorization. Answers a short HTML page for the person.
 */
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { OAUTH_CALLBACK_PATH } from '../../config';
import { oauthKeys, PENDING_AUTHORIZATION_MS, type OAuthStore, type PendingAuthorization } from '../../security/oauth-store';
import { OAuthCallbackQuery } from '../contract';
import { routeSchemas } from '../openapi';

export interface OAuthCallbackOptions {
  store: OAuthStore;
  /** Tells a turn waiting for this authorization to try its call again. */
  resume?: (turnId: string, server: string) => Promise<void>;
}

const escapeHtml = (text: string): string =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string);

function page(reply: FastifyReply, status: number, title: string, body: string): FastifyReply {
  return reply
    .status(status)
    .header('content-type', 'text/html; charset=utf-8')
    // The page echoes nothing secret, but it is the end of a credential exchange: never cached.
    .header('cache-control', 'no-store')
    .header('referrer-policy', 'no-referrer')
    .send(`<!doctype html><html><head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head><body><h1>${escapeHtml(title)}</h1><p>${escapeHtml(body)}</p></body></html>`);
}

export const oauthCallbackRoutes: FastifyPluginAsync<OAuthCallbackOptions> = async (app, { store, resume }) => {
  app.get(OAUTH_CALLBACK_PATH, { schema: routeSchemas.oauthCallback }, async (request, reply) => {
    const parsed = OAuthCallbackQuery.safeParse(request.query);
    if (!parsed.success) return page(reply, 400, 'Authorization failed', 'The link is incomplete: it names no authorization.');
    const { state, code, error, error_description: description, iss } = parsed.data;
    const key = oauthKeys.pending(state);
    const answered = await store.withLock(key, async () => {
      const pending = await store.get<PendingAuthorization>(key);
      if (!pending || Date.now() - pending.createdAt > PENDING_AUTHORIZATION_MS || pending.code || pending.error) return undefined;
      const answer: PendingAuthorization = error
        ? { ...pending, error: `${error}${description ? `: ${description.slice(0, 200)}` : ''}` }
        : code
          ? { ...pending, code, ...(iss !== undefined ? { iss } : {}) }
          : { ...pending, error: 'the authorization server sent neither a code nor an error' };
      await store.set(key, answer);
      return answer;
    });
    if (!answered) {
      return page(reply, 400, 'Authorization failed', 'This authorization is unknown, expired or already used. Ask for the action again to get a new link.');
    }
    request.log.info({ server: answered.server, outcome: answered.error ? 'refused' : 'authorized', turns: answered.turnIds?.length ?? 0 }, 'OAuth callback');
    // Waiting turns try again either way: after a refusal their call reports it to the model. A turn
    // that has ended meanwhile is no reason to fail the user's page.
    if (resume) {
      await Promise.all(
        (answered.turnIds ?? []).map((turnId) =>
          resume(turnId, answered.server).catch((err: unknown) => request.log.warn({ turnId, err: String(err) }, 'could not resume a turn after OAuth callback')),
        ),
      );
    }
    if (answered.error) return page(reply, 200, 'Authorization refused', `Server "${answered.server}" was not authorized (${answered.error}).`);
    return page(reply, 200, 'Authorized', `The host may now act for you on server "${answered.server}". You can close this window and ask again in the chat.`);
  });
};
