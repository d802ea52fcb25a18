/**
 * OAuth for HTTP MCP servers, per the server's `auth` block: the fetch its transport uses.
 * - `oauth`: authorization code + PKCE for one user (the principal), tokens in the shared store;
 * - `client_credentials`: the host's own identity (client secret or private-key JWT), through the
 *   SDK's providers; tokens in memory, fetched again after a restart.
 */
import { ClientCredentialsProvider, PrivateKeyJwtProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { HttpServerConfig } from '../config';
import { withOAuth, type Authorizer } from './fetch';
import { HostOAuthProvider } from './provider';
import { MemoryOAuthStore, type OAuthStore } from '../../security/oauth-store';

export { AuthorizationDeniedError, AuthorizationRequiredError, callbackAuthorizer, type Authorizer } from './fetch';
export { MemoryOAuthStore, SealedFileOAuthStore, oauthKeys, type OAuthStore, type PendingAuthorization } from '../../security/oauth-store';

export interface OAuthSupport {
  /** Shared with the API, whose callback route delivers authorization codes into it. */
  store: OAuthStore;
  /** The API's callback route, registered with authorization servers as the redirect URI. */
  redirectUrl: string;
  clientName: string;
  authorizer?: Authorizer;
}

/** Whether a server's connections are per user (each user authorizes the host on their own). */
export const isPerUser = (cfg: HttpServerConfig): boolean => cfg.auth?.type === 'oauth';

/**
 * The fetch for `cfg`'s transport on behalf of `principal`, or undefined when the server has no
 * `auth`. Throws when the server needs user OAuth and the host has no token store.
 */
export function authFetchFor(cfg: HttpServerConfig, principal: string, support: OAuthSupport | undefined): FetchLike | undefined {
  const auth = cfg.auth;
  if (!auth) return undefined;
  if (auth.type === 'client_credentials') {
    const scope = auth.scope ? { scope: auth.scope } : {};
    const provider = auth.privateKey
      ? new PrivateKeyJwtProvider({ clientId: auth.clientId, privateKey: auth.privateKey, algorithm: auth.algorithm ?? 'ES256', ...scope })
      : new ClientCredentialsProvider({ clientId: auth.clientId, clientSecret: auth.clientSecret ?? '', ...scope });
    return withOAuth({ server: cfg.name, serverUrl: cfg.url, provider, store: new MemoryOAuthStore(), principal: 'host' });
  }
  if (!support) throw new Error('OAuth servers need the token store: set TOKEN_SEAL_KEY');
  const provider = new HostOAuthProvider({
    server: cfg.name,
    principal,
    auth,
    store: support.store,
    redirectUrl: support.redirectUrl,
    clientName: support.clientName,
  });
  return withOAuth({
    server: cfg.name,
    serverUrl: cfg.url,
    provider,
    store: support.store,
    principal,
    ...(support.authorizer ? { authorizer: support.authorizer } : {}),
  });
}
