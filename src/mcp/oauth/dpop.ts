/**
 * DPoP (RFC 9449; SEP-1932 for MCP) at the OAuth fetch layer, with the `dpop` library's proofs
 * (docs/decisions/0044-dpop.md). When the authorization server's metadata lists
 * `dpop_signing_alg_values_supported`, token requests carry a proof (htm POST, htu the token
 * endpoint), and a token the server issued as `token_type: DPoP` is presented as
 * `Authorization: DPoP <token>` with a fresh proof (with `ath`) on every request. A `use_dpop_nonce`
 * answer (400 from the authorization server, 401 from the MCP server) is retried once with the
 * `DPoP-Nonce` it carried; nonces are remembered per origin.
 *
 * One key pair per server entry and principal, in memory for the process's life, its private key
 * not extractable. A token bound to a key that is gone (a restart) is refused by the server and
 * obtained again through the usual 401 path. Proofs, keys and tokens never reach logs or errors.
 */
import { extractWWWAuthenticateParams } from '@modelcontextprotocol/sdk/client/auth.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { OAuthMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { generateKeyPair, generateProof, type JWSAlgorithm, type KeyPair } from 'dpop';

/** What the `dpop` library can sign with, ES256 first: the one every DPoP server must accept. */
const SIGNABLE: readonly JWSAlgorithm[] = ['ES256', 'PS256', 'RS256', 'Ed25519'];

/** ES256 when the server offers it, else the first offered algorithm we can sign with. */
export function chooseDpopAlg(offered: unknown): JWSAlgorithm | undefined {
  if (!Array.isArray(offered)) return undefined;
  if (offered.includes('ES256')) return 'ES256';
  return offered.find((alg): alg is JWSAlgorithm => SIGNABLE.includes(alg as JWSAlgorithm));
}

export const isDpopToken = (tokens: OAuthTokens | undefined): boolean => tokens?.token_type?.toLowerCase() === 'dpop';

/** The parameters of a `Bearer` or `DPoP` challenge (the SDK reads `Bearer` ones only). */
export function challengeParams(response: Response): { resourceMetadataUrl?: URL; scope?: string; error?: string } {
  const bearer = extractWWWAuthenticateParams(response);
  if (bearer.resourceMetadataUrl || bearer.scope || bearer.error) return bearer;
  const match = /^\s*DPoP\s+(.*)$/is.exec(response.headers.get('www-authenticate') ?? '');
  if (!match?.[1]) return bearer;
  const fields = new Map<string, string>();
  for (const [, name, quoted, bare] of match[1].matchAll(/([A-Za-z_]+)\s*=\s*(?:"([^"]*)"|([^\s,]+))/g)) {
    if (name) fields.set(name.toLowerCase(), quoted ?? bare ?? '');
  }
  const metadata = URL.canParse(fields.get('resource_metadata') ?? '') ? new URL(fields.get('resource_metadata') ?? '') : undefined;
  return {
    ...(metadata ? { resourceMetadataUrl: metadata } : {}),
    ...(fields.get('scope') ? { scope: fields.get('scope') } : {}),
    ...(fields.get('error') ? { error: fields.get('error') } : {}),
  };
}

/** htu: the request URI without its query and fragment (RFC 9449 §4.2). */
function htuOf(input: string | URL): URL {
  const url = new URL(input);
  url.search = '';
  url.hash = '';
  return url;
}

const WELL_KNOWN_METADATA = /\/\.well-known\/(oauth-authorization-server|openid-configuration)/;

/** The DPoP state of one server entry and principal: its key pair, the servers' nonces, the token endpoints that want proofs. */
export class DpopSession {
  private key: { alg: JWSAlgorithm; pair: Promise<KeyPair> } | undefined;
  private readonly nonces = new Map<string, string>();
  private readonly tokenEndpoints = new Map<string, JWSAlgorithm>();

  /** Notes an authorization server's metadata: its token endpoint wants proofs when it lists DPoP algorithms. */
  learn(metadata: Partial<OAuthMetadata> | undefined): void {
    const alg = chooseDpopAlg(metadata?.['dpop_signing_alg_values_supported']);
    if (alg && typeof metadata?.token_endpoint === 'string' && URL.canParse(metadata.token_endpoint)) {
      this.tokenEndpoints.set(htuOf(metadata.token_endpoint).href, alg);
    }
  }

  /**
   * The fetch `auth()` uses: token requests to a DPoP authorization server carry a proof, and are
   * sent once more with the server's nonce when it answers `use_dpop_nonce`. `metadata` gives the
   * stored discovery, for when `auth()` does not fetch the metadata again.
   */
  tokenFetch(base: FetchLike, metadata: () => Promise<Partial<OAuthMetadata> | undefined>): FetchLike {
    return async (input, init) => {
      const method = (init?.method ?? 'GET').toUpperCase();
      if (method === 'POST' && !this.tokenEndpoints.has(htuOf(input).href)) this.learn(await metadata());
      const alg = method === 'POST' ? this.tokenEndpoints.get(htuOf(input).href) : undefined;
      if (!alg) {
        const response = await base(input, init);
        if (method === 'GET' && response.ok && WELL_KNOWN_METADATA.test(new URL(input).pathname)) {
          this.learn(await response.clone().json().catch(() => undefined) as Partial<OAuthMetadata> | undefined);
        }
        return response;
      }
      const send = async (): Promise<Response> => this.sendWithProof(base, input, init, alg);
      const response = await send();
      if (response.status !== 400 || !response.headers.has('dpop-nonce')) return response;
      const body = await response.clone().json().catch(() => undefined) as { error?: unknown } | undefined;
      if (body?.error !== 'use_dpop_nonce') return response;
      await response.body?.cancel().catch(() => undefined);
      return await send();
    };
  }

  /** Sends a request presenting a DPoP-bound token, once more with the server's nonce when it asks for one. */
  async sendWithToken(base: FetchLike, input: string | URL, init: RequestInit | undefined, token: string): Promise<Response> {
    const response = await this.sendWithProof(base, input, init, this.key?.alg ?? 'ES256', token);
    if (response.status !== 401 || !response.headers.has('dpop-nonce') || challengeParams(response).error !== 'use_dpop_nonce') return response;
    await response.body?.cancel().catch(() => undefined);
    return await this.sendWithProof(base, input, init, this.key?.alg ?? 'ES256', token);
  }

  private async sendWithProof(base: FetchLike, input: string | URL, init: RequestInit | undefined, alg: JWSAlgorithm, token?: string): Promise<Response> {
    const htu = htuOf(input);
    const headers = new Headers(init?.headers);
    const method = (init?.method ?? 'GET').toUpperCase();
    headers.set('dpop', await generateProof(await this.keyPair(alg), htu.href, method, this.nonces.get(htu.origin), token));
    if (token) headers.set('authorization', `DPoP ${token}`);
    const response = await base(input, { ...init, headers });
    const nonce = response.headers.get('dpop-nonce');
    if (nonce) this.nonces.set(htu.origin, nonce);
    return response;
  }

  /** The session's key pair; a new one when the authorization server wants another algorithm (its tokens are then obtained again). */
  private keyPair(alg: JWSAlgorithm): Promise<KeyPair> {
    if (this.key?.alg !== alg) {
      const pair = generateKeyPair(alg, { extractable: false });
      this.key = { alg, pair };
      // A failed generation is not kept: the next request tries again.
      pair.catch(() => {
        if (this.key?.pair === pair) this.key = undefined;
      });
    }
    return this.key.pair;
  }
}

const sessions = new Map<string, DpopSession>();

/** The DPoP session of a server entry and principal, kept for the process's life. */
export function dpopSession(server: string, principal: string): DpopSession {
  const key = JSON.stringify([server, principal]);
  let session = sessions.get(key);
  if (!session) sessions.set(key, (session = new DpopSession()));
  return session;
}
