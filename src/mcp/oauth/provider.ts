/**
 * The SDK's `OAuthClientProvider` for a server with `auth: { type: "oauth" }`, on behalf of one user
 * (the principal). The SDK does the protocol (discovery, registration, PKCE, resource indicators,
 * token and refresh requests); this class only keeps what it is handed in the shared store.
 *
 * `redirectToAuthorization` does not open anything: it records the authorization as pending, and
 * the caller (src/mcp/oauth/fetch.ts) decides how the user gets there.
 */
import { randomBytes } from 'node:crypto';
import type { OAuthClientProvider, OAuthDiscoveryState } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { McpAuthConfig } from '../config';
import { oauthKeys, type OAuthStore, type PendingAuthorization } from '../../security/oauth-store';
import { callerContext } from '../user-token';
import { metadataIssuerRefusal } from './issuer';

/** The turn the current request is for, as a list for the pending authorization's record. */
export const waitingTurn = (): string[] => {
  const turnId = callerContext.getStore()?.turnId;
  return turnId ? [turnId] : [];
};

/** OpenID Connect's client kinds, which MCP 2026-07-28 requires in a registration (SEP-837). */
type ApplicationType = 'web' | 'native';

/**
 * The host is a web application (its API's callback receives the code), so `web`; but an
 * authorization server may hold a `web` client to https redirects off the loopback (OpenID Connect
 * Registration §2), so a host whose callback is on the loopback (a developer's machine) says `native`.
 */
export function applicationTypeOf(redirectUrl: string): ApplicationType {
  const host = new URL(redirectUrl).hostname;
  return host === 'localhost' || host === '127.0.0.1' || host === '[::1]' ? 'native' : 'web';
}

type UserOAuthConfig = Extract<McpAuthConfig, { type: 'oauth' }>;

export interface HostOAuthProviderOptions {
  server: string;
  principal: string;
  auth: UserOAuthConfig;
  store: OAuthStore;
  /** The API's callback route, where the authorization server sends the user back. */
  redirectUrl: string;
  clientName: string;
}

export class HostOAuthProvider implements OAuthClientProvider {
  /** Set by the SDK just before it redirects; kept with the pending authorization. */
  private verifier?: string;

  constructor(private readonly opts: HostOAuthProviderOptions) {}

  get server(): string {
    return this.opts.server;
  }

  get principal(): string {
    return this.opts.principal;
  }

  get redirectUrl(): string {
    return this.opts.redirectUrl;
  }

  get clientMetadataUrl(): string | undefined {
    return this.opts.auth.clientMetadataUrl;
  }

  get clientMetadata(): OAuthClientMetadata & { application_type: ApplicationType } {
    const { auth } = this.opts;
    return {
      client_name: this.opts.clientName,
      application_type: applicationTypeOf(this.opts.redirectUrl),
      redirect_uris: [this.opts.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: auth.clientSecret ? 'client_secret_basic' : 'none',
      ...(auth.scope ? { scope: auth.scope } : {}),
    };
  }

  state(): string {
    return randomBytes(24).toString('base64url');
  }

  async clientInformation(): Promise<OAuthClientInformationMixed | undefined> {
    const { auth } = this.opts;
    if (auth.clientId) {
      return { client_id: auth.clientId, ...(auth.clientSecret ? { client_secret: auth.clientSecret } : {}), redirect_uris: [this.opts.redirectUrl] };
    }
    return await this.opts.store.get<OAuthClientInformationMixed>(oauthKeys.client(this.opts.server));
  }

  async saveClientInformation(info: OAuthClientInformationMixed): Promise<void> {
    // A pre-registered client is configuration, not state.
    if (this.opts.auth.clientId) return;
    await this.opts.store.set(oauthKeys.client(this.opts.server), info);
  }

  async tokens(): Promise<OAuthTokens | undefined> {
    return await this.opts.store.get<OAuthTokens>(oauthKeys.tokens(this.opts.server, this.opts.principal));
  }

  async saveTokens(tokens: OAuthTokens): Promise<void> {
    await this.opts.store.set(oauthKeys.tokens(this.opts.server, this.opts.principal), tokens);
  }

  saveCodeVerifier(codeVerifier: string): void {
    this.verifier = codeVerifier;
  }

  codeVerifier(): string {
    if (!this.verifier) throw new Error('no PKCE code verifier: the authorization was not started here');
    return this.verifier;
  }

  async redirectToAuthorization(authorizationUrl: URL): Promise<void> {
    const state = authorizationUrl.searchParams.get('state');
    if (!state || !this.verifier) throw new Error('authorization request without state or code verifier');
    const { server, principal, store } = this.opts;
    const previous = await store.get<string>(oauthKeys.pendingFor(server, principal));
    if (previous) await store.set(oauthKeys.pending(previous), undefined);
    const pending: PendingAuthorization = {
      server,
      principal,
      authorizationUrl: authorizationUrl.toString(),
      codeVerifier: this.verifier,
      createdAt: Date.now(),
      turnIds: waitingTurn(),
    };
    await store.set(oauthKeys.pending(state), pending);
    await store.set(oauthKeys.pendingFor(server, principal), state);
  }

  /** The authorization this user last started with this server, with its state. */
  async pending(): Promise<{ state: string; record: PendingAuthorization } | undefined> {
    const { server, principal, store } = this.opts;
    const state = await store.get<string>(oauthKeys.pendingFor(server, principal));
    if (!state) return undefined;
    const record = await store.get<PendingAuthorization>(oauthKeys.pending(state));
    return record ? { state, record } : undefined;
  }

  /** Another turn waits for the same authorization: the callback route tells it too. */
  async addWaitingTurn(state: string, record: PendingAuthorization): Promise<void> {
    const turns = waitingTurn().filter((t) => !(record.turnIds ?? []).includes(t));
    if (turns.length > 0) await this.opts.store.set(oauthKeys.pending(state), { ...record, turnIds: [...(record.turnIds ?? []), ...turns] });
  }

  /** Uses the pending authorization's verifier for the code exchange, then forgets it. */
  async usePending(state: string, record: PendingAuthorization): Promise<void> {
    this.verifier = record.codeVerifier;
    await this.forgetPending(state);
  }

  async forgetPending(state: string): Promise<void> {
    const { server, principal, store } = this.opts;
    await store.set(oauthKeys.pending(state), undefined);
    if ((await store.get<string>(oauthKeys.pendingFor(server, principal))) === state) {
      await store.set(oauthKeys.pendingFor(server, principal), undefined);
    }
  }

  async invalidateCredentials(scope: 'all' | 'client' | 'tokens' | 'verifier' | 'discovery'): Promise<void> {
    const { server, principal, store } = this.opts;
    if (scope === 'all' || scope === 'tokens') await store.set(oauthKeys.tokens(server, principal), undefined);
    if ((scope === 'all' || scope === 'client') && !this.opts.auth.clientId) await store.set(oauthKeys.client(server), undefined);
    if (scope === 'all' || scope === 'discovery') await store.set(oauthKeys.discovery(server), undefined);
    if (scope === 'all' || scope === 'verifier') this.verifier = undefined;
  }

  async saveDiscoveryState(state: OAuthDiscoveryState): Promise<void> {
    // Called by the SDK between discovery and registration: metadata refused here is never used.
    const refusal = metadataIssuerRefusal(state);
    if (refusal) throw new Error(`server "${this.opts.server}": ${refusal}`);
    await this.opts.store.set(oauthKeys.discovery(this.opts.server), state);
  }

  async discoveryState(): Promise<OAuthDiscoveryState | undefined> {
    return await this.opts.store.get<OAuthDiscoveryState>(oauthKeys.discovery(this.opts.server));
  }
}
