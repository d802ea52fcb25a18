/**
 * Who is calling: verifies the bearer JWT of every API request (seed 000 §9.8, seed 001 §3.4, §3.8:
 * "always verify the JWT signature before trusting claims") and turns its claims into a
 * `UserContext`. Also the I/O half of configuration the pure core cannot do: reading the auth
 * settings from the environment and the policy file from disk.
 *
 * Two modes, exactly one per deployment:
 * - a shared secret (`JWT_SECRET`): HS256 only, for the demo and tests (`mintDevToken`);
 * - a JSON Web Key Set (`JWT_JWKS_URL`) of an identity provider: RS256, ES256 or EdDSA only, so a
 *   token can never pick a symmetric algorithm against a public key.
 *
 * Every failure is an `HttpError(401)` with a stable code; messages never contain the token, any part
 * of it, or the secret. Failures that are not the caller's fault (the JWKS endpoint is down) are 503.
 */
import { createRemoteJWKSet, decodeProtectedHeader, errors, jwtVerify, SignJWT, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import { z } from 'zod';
import { ConfigError, type EnvConfig } from '../config';
import { HttpError } from './errors';
import { NAME_PATTERN, UserContextSchema } from '../config/policy';
import type { UserContext } from '../shared/user';
import { describeIssues } from '../shared/issues';
import { isPlaceholder } from '../config/placeholders';

export const DEFAULT_ISSUER = 'durable-mcp-host';
export const DEFAULT_AUDIENCE = 'durable-mcp-host-api';
/** Shortest accepted HS256 secret, in characters (RFC 7518 §3.2 asks for at least 256 bits). */
export const MIN_SECRET_LENGTH = 32;
export const SECRET_ALGORITHMS = ['HS256'] as const;
export const JWKS_ALGORITHMS = ['RS256', 'ES256', 'EdDSA'] as const;
/** Longer bearer tokens are refused before any parsing. */
const MAX_TOKEN_LENGTH = 8192;
const DEFAULT_CLOCK_TOLERANCE_SEC = 5;
const JWKS_TIMEOUT_MS = 5_000;

export interface AuthOptions {
  /** Shared HS256 secret, at least 32 characters. Exactly one of `hs256Secret` and `jwksUrl`. */
  hs256Secret?: string;
  /** URL of the identity provider's JSON Web Key Set (http or https). */
  jwksUrl?: string;
  /** Required `iss`. */
  issuer: string;
  /** Required in `aud`. */
  audience: string;
  /** Leeway for `exp` and `nbf`, in seconds; default 5. */
  clockToleranceSec?: number;
  /** How long one JWKS fetch may take, in milliseconds; default 5000. */
  jwksTimeoutMs?: number;
}

export interface Authenticator {
  /** The verified caller, or an `HttpError` (401 for a bad or missing token, 503 when keys are unreachable). */
  authenticate(authorizationHeader: string | undefined): Promise<UserContext>;
}

const unauthorized = (code: string, message: string) => new HttpError(401, code, message);

function unavailable(cause: unknown): HttpError {
  const e = new HttpError(503, 'auth_unavailable', 'The keys needed to verify the token could not be fetched; try again shortly.');
  (e as { cause?: unknown }).cause = cause;
  return e;
}

/** Claims we read; anything else in the token is ignored. */
const ClaimsSchema = z.object({
  sub: z.string().min(1).max(256),
  role: z.string().regex(NAME_PATTERN),
  tenant_id: z.string().regex(NAME_PATTERN),
  scopes: z.array(z.string()).max(256).optional(),
  scope: z.string().max(8192).optional(),
});

const CLAIM_RULES: Record<string, string> = {
  sub: 'must be a non-empty string of at most 256 characters',
  role: 'must be a string matching ^[a-zA-Z0-9_.-]{1,64}$',
  tenant_id: 'must be a string matching ^[a-zA-Z0-9_.-]{1,64}$',
  scopes: 'must be an array of scope strings',
  scope: 'must be a space-separated string of scopes',
};

function invalidClaims(problems: string[]): HttpError {
  return unauthorized('invalid_claims', `The token's claims are invalid: ${problems.join('; ')}.`);
}

/** Verified claims → UserContext. Messages name the claim and the rule, never the value. */
export function userFromClaims(payload: JWTPayload): UserContext {
  const parsed = ClaimsSchema.safeParse(payload);
  if (!parsed.success) {
    const problems = new Map<string, string>();
    for (const issue of parsed.error.issues) {
      const claim = String(issue.path[0] ?? '?');
      if (problems.has(claim)) continue;
      const missing = (payload as Record<string, unknown>)[claim] === undefined;
      problems.set(claim, `"${claim}" ${missing ? 'is missing' : (CLAIM_RULES[claim] ?? 'is invalid')}`);
    }
    throw invalidClaims([...problems.values()]);
  }
  const claims = parsed.data;
  const scopes = new Set<string>(claims.scopes ?? []);
  for (const s of (claims.scope ?? '').split(' ')) if (s) scopes.add(s);
  const user = UserContextSchema.safeParse({ id: claims.sub, role: claims.role, tenant: claims.tenant_id, scopes: [...scopes] });
  if (!user.success) {
    // Only the scopes can still fail: blame the claim they came from.
    const claim = claims.scopes !== undefined ? 'scopes' : 'scope';
    throw invalidClaims([`"${claim}" must hold at most 256 scopes of printable ASCII without spaces, quotes or backslashes`]);
  }
  return user.data;
}

/** jose's failure → our 401 (or 503). jose's own messages are never passed on. */
function mapVerifyError(err: unknown): HttpError {
  const code = (err as { code?: unknown } | null)?.code;
  switch (code) {
    case errors.JWTExpired.code:
      return unauthorized('token_expired', 'The token has expired; get a new one.');
    case errors.JWTClaimValidationFailed.code: {
      const { claim, reason } = err as InstanceType<typeof errors.JWTClaimValidationFailed>;
      if (claim === 'iss') {
        return unauthorized('wrong_issuer', reason === 'missing' ? 'The token has no issuer ("iss" claim).' : 'The token was issued by an issuer this API does not trust.');
      }
      if (claim === 'aud') {
        return unauthorized('wrong_audience', reason === 'missing' ? 'The token has no audience ("aud" claim).' : 'The token is not meant for this API (wrong "aud").');
      }
      if (claim === 'nbf' && reason === 'check_failed') {
        return unauthorized('token_not_yet_valid', 'The token is not valid yet ("nbf" is in the future).');
      }
      const name = /^[a-z_]{1,16}$/i.test(claim) ? claim : '?';
      return invalidClaims([`"${name}" ${reason === 'missing' ? 'is missing' : 'is invalid'}`]);
    }
    case errors.JWSSignatureVerificationFailed.code:
      return unauthorized('bad_signature', 'The token signature does not verify.');
    case errors.JWKSNoMatchingKey.code:
    case errors.JWKSMultipleMatchingKeys.code:
      return unauthorized('bad_signature', 'No trusted key matches the token ("kid" / "alg"); the signature cannot be verified.');
    case errors.JOSEAlgNotAllowed.code:
      return unauthorized('unsupported_alg', 'The token signing algorithm is not accepted.');
    case errors.JWSInvalid.code:
    case errors.JWTInvalid.code:
    case errors.JOSENotSupported.code:
      return unauthorized('malformed_token', 'The token is not a well-formed signed JWT.');
    default:
      // JWKS timeouts, unreachable or broken JWKS endpoints, unexpected failures: not the caller's fault.
      return unavailable(err);
  }
}

/** A verifier for one deployment's tokens. Throws `ConfigError` when the options are unusable. */
export function createAuthenticator(opts: AuthOptions): Authenticator {
  const { hs256Secret, jwksUrl } = opts;
  if ((hs256Secret === undefined) === (jwksUrl === undefined)) {
    throw new ConfigError('authentication: configure exactly one of a shared secret (JWT_SECRET) and a JWKS URL (JWT_JWKS_URL)');
  }
  if (!opts.issuer) throw new ConfigError('authentication: the issuer must not be empty');
  if (!opts.audience) throw new ConfigError('authentication: the audience must not be empty');
  const clockTolerance = opts.clockToleranceSec ?? DEFAULT_CLOCK_TOLERANCE_SEC;
  if (!Number.isFinite(clockTolerance) || clockTolerance < 0) {
    throw new ConfigError('authentication: clockToleranceSec must be a non-negative number');
  }

  let key: Uint8Array | JWTVerifyGetKey;
  let algorithms: readonly string[];
  if (hs256Secret !== undefined) {
    if (hs256Secret.length < MIN_SECRET_LENGTH) {
      throw new ConfigError(`JWT_SECRET must be at least ${MIN_SECRET_LENGTH} characters`);
    }
    key = new TextEncoder().encode(hs256Secret);
    algorithms = SECRET_ALGORITHMS;
  } else {
    key = createRemoteJWKSet(parseJwksUrl(jwksUrl ?? ''), { timeoutDuration: opts.jwksTimeoutMs ?? JWKS_TIMEOUT_MS });
    algorithms = JWKS_ALGORITHMS;
  }

  return {
    async authenticate(authorizationHeader) {
      const header = authorizationHeader?.trim();
      if (!header) {
        throw unauthorized('missing_token', 'Authentication required: send an "Authorization: Bearer <token>" header.');
      }
      const match = /^Bearer +(\S+)$/i.exec(header);
      const token = match?.[1];
      if (!token) throw unauthorized('malformed_authorization', 'The Authorization header must be "Bearer <token>".');
      // Three base64url parts; the signature may be empty so that `alg: none` is reported as such.
      if (token.length > MAX_TOKEN_LENGTH || !/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/.test(token)) {
        throw unauthorized('malformed_token', 'The bearer token is not a well-formed JWT (header.payload.signature, base64url).');
      }
      let alg: unknown;
      try {
        alg = decodeProtectedHeader(token).alg;
      } catch {
        throw unauthorized('malformed_token', 'The token header is not valid base64url-encoded JSON.');
      }
      if (typeof alg !== 'string') throw unauthorized('malformed_token', 'The token header has no "alg".');
      if (!algorithms.includes(alg)) {
        throw unauthorized('unsupported_alg', `The token signing algorithm is not accepted (accepted: ${algorithms.join(', ')}).`);
      }

      let payload: JWTPayload;
      try {
        ({ payload } = await jwtVerify(token, key, {
          algorithms: [...algorithms],
          issuer: opts.issuer,
          audience: opts.audience,
          clockTolerance,
          requiredClaims: ['exp'],
        }));
      } catch (err) {
        throw mapVerifyError(err);
      }
      return userFromClaims(payload);
    },
  };
}

function parseJwksUrl(value: string): URL {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError('JWT_JWKS_URL must be a URL such as https://idp.example.com/.well-known/jwks.json');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new ConfigError('JWT_JWKS_URL must be an http(s) URL');
  return url;
}

export interface AuthConfig {
  hs256Secret?: string;
  jwksUrl?: string;
  issuer: string;
  audience: string;
}

/** The authentication variables, as read by the one environment reader (src/config). */
export type AuthEnv = Partial<Pick<EnvConfig, 'JWT_SECRET' | 'JWT_JWKS_URL' | 'JWT_ISSUER' | 'JWT_AUDIENCE'>>;

/** `JWT_ISSUER` and `JWT_AUDIENCE`, defaults applied (an empty value counts as unset). */
export function issuerAndAudience(env: AuthEnv): { issuer: string; audience: string } {
  return { issuer: env.JWT_ISSUER || DEFAULT_ISSUER, audience: env.JWT_AUDIENCE || DEFAULT_AUDIENCE };
}

/**
 * The authentication settings from the environment: `JWT_SECRET` (≥ 32 characters, not a
 * placeholder) or `JWT_JWKS_URL` (no shared secret needed then), plus `JWT_ISSUER` and `JWT_AUDIENCE`. Throws `ConfigError` naming the variable;
 * the secret itself never appears in a message.
 */
export function loadAuthConfig(env: AuthEnv): AuthConfig {
  const secret = env.JWT_SECRET || undefined;
  const jwksUrl = env.JWT_JWKS_URL || undefined;
  if (secret === undefined && jwksUrl === undefined) {
    throw new ConfigError(
      'API authentication is not configured: set JWT_SECRET (a shared HS256 secret of at least 32 characters) ' +
        'or JWT_JWKS_URL (the JSON Web Key Set URL of your identity provider)',
    );
  }
  if (secret !== undefined && jwksUrl !== undefined) {
    throw new ConfigError('set only one of JWT_SECRET and JWT_JWKS_URL, not both');
  }
  if (secret !== undefined && secret.length < MIN_SECRET_LENGTH) {
    throw new ConfigError(`JWT_SECRET must be at least ${MIN_SECRET_LENGTH} characters`);
  }
  // Anyone can mint tokens with a secret copied from an example file.
  if (secret !== undefined && isPlaceholder(secret)) {
    throw new ConfigError('JWT_SECRET is a placeholder, not a secret; replace it with a random value (openssl rand -hex 32)');
  }
  if (jwksUrl !== undefined) parseJwksUrl(jwksUrl);
  return { ...(secret !== undefined ? { hs256Secret: secret } : { jwksUrl: jwksUrl as string }), ...issuerAndAudience(env) };
}

export interface DevTokenOptions {
  secret: string;
  sub: string;
  role: string;
  tenant: string;
  scopes: string[];
  /** Lifetime in seconds; default 3600. */
  ttlSec?: number;
  issuer?: string;
  audience?: string;
}

/** An HS256 token the secret-mode authenticator accepts: for the demo, the CLI and tests only. */
export async function mintDevToken(opts: DevTokenOptions): Promise<string> {
  if (opts.secret.length < MIN_SECRET_LENGTH) throw new Error(`the secret must be at least ${MIN_SECRET_LENGTH} characters`);
  const ttlSec = opts.ttlSec ?? 3600;
  if (!Number.isInteger(ttlSec) || ttlSec <= 0) throw new Error('ttlSec must be a positive integer');
  const user = UserContextSchema.safeParse({ id: opts.sub, role: opts.role, tenant: opts.tenant, scopes: opts.scopes });
  if (!user.success) {
    const names: Record<string, string> = { id: 'sub', tenant: 'tenant' };
    // Named after the options the caller passed (`sub`, `tenant`), not the fields they become.
    const issues = user.error.issues.map((i) => ({ ...i, path: [names[String(i.path[0])] ?? i.path[0] ?? '?', ...i.path.slice(1)] }));
    const detail = describeIssues(issues);
    throw new Error(`cannot mint a token: ${detail.join('; ')}`);
  }
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ role: user.data.role, tenant_id: user.data.tenant, scopes: user.data.scopes })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(user.data.id)
    .setIssuer(opts.issuer ?? DEFAULT_ISSUER)
    .setAudience(opts.audience ?? DEFAULT_AUDIENCE)
    .setIssuedAt(now)
    .setExpirationTime(now + ttlSec)
    .sign(new TextEncoder().encode(opts.secret));
}
