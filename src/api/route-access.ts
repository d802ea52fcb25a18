/**
 * Which routes need a user's bearer token: every /v1 route (except the OAuth callback, a browser
 * redirect that carries no token) and the WebSocket at /ws. The auth hook of app.ts and the OpenAPI
 * document both ask this, so they cannot disagree.
 *
 * The question is asked of the route pattern the router matched (`request.routeOptions.url`), never
 * of the raw request URL: the router decodes percent-escapes before matching, so `/%761/servers`
 * reaches `/v1/servers` while its raw URL does not start with `/v1/`. A request that matched no
 * route has no pattern and needs no token: it gets the same 404 with or without one.
 */
import { OAUTH_CALLBACK_PATH } from '../config';

export function needsUserToken(routePattern: string | undefined): boolean {
  if (routePattern === undefined) return false;
  if (routePattern === '/ws' || routePattern.startsWith('/ws/')) return true;
  return routePattern.startsWith('/v1/') && routePattern !== OAUTH_CALLBACK_PATH;
}
