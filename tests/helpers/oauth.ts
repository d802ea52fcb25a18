import type { Authorizer } from '../../src/mcp/oauth';

/**
 * Plays the user's browser for authorization servers that consent on their own (test servers): opens
 * the authorization URL, does not follow the redirect, and reads the code (and `iss`) from where it points.
 */
export const headlessAuthorizer: Authorizer = async (pending) => {
  const response = await fetch(pending.authorizationUrl, { redirect: 'manual' });
  await response.body?.cancel();
  const location = response.headers.get('location');
  if (!location) throw new Error(`the authorization server answered ${response.status} without a redirect`);
  const back = new URL(location);
  const error = back.searchParams.get('error');
  if (error) throw new Error(`the authorization server refused: ${error}`);
  const code = back.searchParams.get('code');
  if (!code) throw new Error('the redirect carries no authorization code');
  const iss = back.searchParams.get('iss');
  return { code, ...(iss !== null ? { iss } : {}) };
};
