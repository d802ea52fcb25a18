/**
 * The authorization server's identity, checked where the SDK (1.x) does not (MCP 2026-07-28,
 * SEP-2468): the metadata must name the issuer it was fetched for (RFC 8414 §3.3), and an
 * authorization response must come back from that issuer (RFC 9207), so a code from one server is
 * never exchanged at another (the mix-up attack).
 */
import type { OAuthDiscoveryState } from '@modelcontextprotocol/sdk/client/auth.js';

type Metadata = OAuthDiscoveryState['authorizationServerMetadata'];

/**
 * Why discovered metadata must not be used, or undefined. The issuer must be the URL it was
 * discovered from, compared as written; only the `/` the SDK itself appends to a pathless URL (its
 * fallback to the MCP server's origin) is not held against it.
 */
export function metadataIssuerRefusal(state: OAuthDiscoveryState): string | undefined {
  const issuer = state.authorizationServerMetadata?.issuer;
  if (issuer === undefined) return undefined;
  const expected = state.authorizationServerUrl;
  const pathlessSlash = (url: string) => url.endsWith('/') && URL.canParse(url) && new URL(url).pathname === '/' && !url.slice(0, -1).endsWith('/');
  if (issuer === expected || (pathlessSlash(expected) && issuer === expected.slice(0, -1))) return undefined;
  return `the authorization server's metadata names issuer ${JSON.stringify(issuer)}, not ${JSON.stringify(expected)} it was fetched for (RFC 8414)`;
}

/**
 * Why an authorization response must be refused, or undefined: an `iss` that is not the issuer's
 * own (compared as written: no case folding, no trailing-slash or port normalization), or none where
 * the server promised one.
 */
export function issuerRefusal(iss: string | undefined, metadata: Metadata): string | undefined {
  if (!metadata) return undefined;
  if (iss !== undefined && iss !== metadata.issuer) {
    return `the authorization response came from issuer ${JSON.stringify(iss)}, not ${JSON.stringify(metadata.issuer)} (RFC 9207); it was not used`;
  }
  if (iss === undefined && (metadata as Record<string, unknown>)['authorization_response_iss_parameter_supported'] === true) {
    return 'the authorization server promised an `iss` in its response (RFC 9207) and sent none; it was not used';
  }
  return undefined;
}
