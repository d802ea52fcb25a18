/**
 * The fetch an OAuth-protected server's transport uses: it sends the stored access token, and on a
 * 401 (or a 403 `insufficient_scope`) it runs the SDK's `auth()` and tries again, at most
 * MAX_AUTH_ROUNDS times per request so a server that never accepts cannot loop us.
 *
 * When `auth()` needs the user's browser, the authorizer is asked for the code. The worker's
 * authorizer has none until the user came back through the API's callback route, so the request
 * fails with `AuthorizationRequiredError` carrying the URL to send the user to; the next attempt
 * after the callback exchanges the code (src/mcp/oauth/provider.ts keeps the PKCE verifier).
 * Servers whose authorization server asks for DPoP get proofs and DPoP-bound tokens (./dpop.ts).
 */
import { auth, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { challengeParams, dpopSession, isDpopToken } from './dpop';
import { issuerRefusal } from './issuer';
import { HostOAuthProvider } from './provider';
import { oauthKeys, PENDING_AUTHORIZATION_MS, type OAuthStore, type PendingAuthorization } from '../../security/oauth-store';

/** Authorization requests per MCP request: the first, then a step-up, then one more. */
export const MAX_AUTH_ROUNDS = 3;

/** The user must authorize this host with the server: send them to `authorizationUrl`. */
export class AuthorizationRequiredError extends Error {
  override readonly name = 'AuthorizationRequiredError';
  constructor(
    readonly server: string,
    readonly authorizationUrl: string,
  ) {
    super(`server "${server}" needs your authorization: open ${authorizationUrl}`);
  }
}

/** The authorization server refused (the user denied consent, or the code was rejected). */
export class AuthorizationDeniedError extends Error {
  override readonly name = 'AuthorizationDeniedError';
  constructor(
    readonly server: string,
    reason: string,
  ) {
    super(`authorization with server "${server}" failed: ${reason}`);
  }
}

/** What the authorization server's redirect carried back: the code, and its `iss` when it sent one (RFC 9207). */
export interface AuthorizationResponse {
  code: string;
  iss?: string;
}

/**
 * Gets the authorization response for a started authorization: from the callback route's record
 * (the worker), or by driving the browser step itself (headless test clients). `undefined`: not yet.
 */
export type Authorizer = (pending: PendingAuthorization) => Promise<AuthorizationResponse | undefined>;

/** The worker's authorizer: the code the API's callback route stored, once the user came back. */
export const callbackAuthorizer: Authorizer = (pending) =>
  Promise.resolve(pending.code === undefined ? undefined : { code: pending.code, ...(pending.iss !== undefined ? { iss: pending.iss } : {}) });

export interface OAuthFetchOptions {
  server: string;
  /** The MCP server's URL: the protected resource. */
  serverUrl: string;
  provider: OAuthClientProvider;
  store: OAuthStore;
  /** Serializes token work for one user and server; the provider's principal for user OAuth. */
  principal: string;
  authorizer?: Authorizer;
}

export function withOAuth(opts: OAuthFetchOptions, base: FetchLike = fetch): FetchLike {
  const { provider } = opts;
  const authorizer = opts.authorizer ?? callbackAuthorizer;
  const lockKey = oauthKeys.lock(opts.server, opts.principal);
  const dpop = dpopSession(opts.server, opts.principal);
  const authFetch = dpop.tokenFetch(base, async () => (await provider.discoveryState?.())?.authorizationServerMetadata);

  const send = async (input: string | URL, init: RequestInit | undefined): Promise<{ response: Response; token?: string }> => {
    const tokens = await provider.tokens();
    const token = tokens?.access_token;
    if (token && isDpopToken(tokens)) return { response: await dpop.sendWithToken(base, input, init, token), token };
    const headers = new Headers(init?.headers);
    if (token) headers.set('authorization', `Bearer ${token}`);
    return { response: await base(input, { ...init, headers }), ...(token ? { token } : {}) };
  };

  const authorize = async (response: Response, usedToken: string | undefined): Promise<void> => {
    const challenge = challengeParams(response);
    const stepUp = response.status === 403;
    await opts.store.withLock(lockKey, async () => {
      const current = await provider.tokens();
      // Another request renewed the token while this one waited for the lock: use that one.
      if (!stepUp && current?.access_token && current.access_token !== usedToken) return;
      const scope = unionScopes(current?.scope, challenge.scope);
      const authOptions = {
        serverUrl: opts.serverUrl,
        ...(challenge.resourceMetadataUrl ? { resourceMetadataUrl: challenge.resourceMetadataUrl } : {}),
        ...(scope ? { scope } : {}),
        fetchFn: authFetch,
      };
      if (provider instanceof HostOAuthProvider && (await exchangePendingCode(provider, authorizer, authOptions))) return;
      // More scope needs a new grant: refreshing would only renew the old one.
      if (stepUp) await provider.invalidateCredentials?.('tokens');
      // A token that worked is refused: the server may have moved to another authorization server
      // (SEP-2352), so discover again; credentials bound to the old one are then not presented.
      else if (usedToken) await provider.invalidateCredentials?.('discovery');
      const result = await auth(provider, authOptions);
      if (result === 'AUTHORIZED') return;
      if (!(provider instanceof HostOAuthProvider)) throw new AuthorizationDeniedError(opts.server, 'the server asked for a browser step');
      if (!(await exchangePendingCode(provider, authorizer, authOptions))) {
        const started = await provider.pending();
        throw new AuthorizationRequiredError(opts.server, started?.record.authorizationUrl ?? '(no authorization URL)');
      }
    });
  };

  return async (input, init) => {
    let { response, token } = await send(input, init);
    for (let round = 0; round < MAX_AUTH_ROUNDS && needsAuthorization(response); round++) {
      await response.body?.cancel().catch(() => undefined);
      await authorize(response, token);
      ({ response, token } = await send(input, init));
    }
    return response;
  };
}

/**
 * Finishes the authorization this user started, if its code is here: true when tokens were
 * obtained. A started authorization still young and without a code is offered again (the user may
 * be on its page right now) rather than replaced.
 */
async function exchangePendingCode(
  provider: HostOAuthProvider,
  authorizer: Authorizer,
  authOptions: Parameters<typeof auth>[1],
): Promise<boolean> {
  const pending = await provider.pending();
  if (!pending) return false;
  if (pending.record.error) {
    await provider.forgetPending(pending.state);
    throw new AuthorizationDeniedError(provider.server, pending.record.error);
  }
  const answer = await authorizer(pending.record);
  if (answer === undefined) {
    if (Date.now() - pending.record.createdAt < PENDING_AUTHORIZATION_MS) {
      await provider.addWaitingTurn(pending.state, pending.record);
      throw new AuthorizationRequiredError(provider.server, pending.record.authorizationUrl);
    }
    await provider.forgetPending(pending.state);
    return false;
  }
  const refusal = issuerRefusal(answer.iss, (await provider.discoveryState())?.authorizationServerMetadata);
  if (refusal) {
    await provider.forgetPending(pending.state);
    throw new AuthorizationDeniedError(provider.server, refusal);
  }
  await provider.usePending(pending.state, pending.record);
  const result = await auth(provider, { ...authOptions, authorizationCode: answer.code });
  return result === 'AUTHORIZED';
}

function needsAuthorization(response: Response): boolean {
  if (response.status === 401) return true;
  return response.status === 403 && challengeParams(response).error === 'insufficient_scope';
}

/** What the user granted before plus what the server now asks for, so nothing granted is lost. */
function unionScopes(granted: string | undefined, challenged: string | undefined): string | undefined {
  const all = new Set([...(granted?.split(' ') ?? []), ...(challenged?.split(' ') ?? [])].filter(Boolean));
  return all.size > 0 ? [...all].join(' ') : undefined;
}
