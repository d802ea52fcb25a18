import type { UserContext } from '../shared/user';
import { HttpError } from './errors';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the auth hook of app.ts on every /v1 and /ws request. */
    user?: UserContext;
  }
}

/** The verified caller of a request; a route outside the auth hook's reach gets 401, never a guess. */
export function callerOf(request: { user?: UserContext }): UserContext {
  if (!request.user) throw new HttpError(401, 'missing_token', 'Authentication required');
  return request.user;
}
