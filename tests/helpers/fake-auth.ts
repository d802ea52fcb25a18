import type { Authenticator } from '../../src/api/app';
import type { Policy } from '../../src/shared/policy';
import { HttpError } from '../../src/api/errors';

/**
 * For API tests without JWTs: "Bearer <user>@<tenant>" stands for a verified token of that user
 * (role teacher). The JWT checks have their own tests.
 */
export const fakeAuth: Authenticator = {
  async authenticate(header) {
    const m = /^Bearer ([a-z]+)@([a-z]+)$/.exec(header ?? '');
    if (!m) throw new HttpError(401, 'missing_token', 'Authentication required');
    return { id: m[1] as string, role: 'teacher', tenant: m[2] as string, scopes: [] };
  },
};

/** The fake users' role (teacher) may use every tool; the policy's own decisions have their own tests. */
export const openPolicy: Policy = { roles: { teacher: { servers: { '*': { tools: '*' } } } }, toolScopes: {} };
