/**
 * Mints a demo bearer token (HS256, signed with `JWT_SECRET`) for the API:
 *
 *   JWT_SECRET=... node dist/src/cli/mint-token.js --role admin|teacher|student
 *       [--sub ID] [--tenant demo] [--scopes a,b] [--ttl 3600]
 *
 * Each demo role defaults to its user of the school seed (admin → u-ada, teacher → u-tom,
 * student → u-bob) and that user's scopes. Another role name is accepted with an explicit `--sub`.
 * `JWT_ISSUER` and `JWT_AUDIENCE` are honoured like the API does. Stdout carries only the token,
 * so `TOKEN=$(node dist/src/cli/mint-token.js --role teacher)` works; errors go to stderr (exit 2).
 */
import { parseArgs } from 'node:util';
import { issuerAndAudience, MIN_SECRET_LENGTH, mintDevToken } from '../api/auth';
import { DEMO_USERS, type DemoRole } from '../config/local-mode';

export class UsageError extends Error {
  override name = 'UsageError';
}


const USAGE =
  'usage: mint-token --role admin|teacher|student [--sub ID] [--tenant demo] [--scopes a,b] [--ttl 3600]  (JWT_SECRET must be set)';

/** Parses the arguments and mints the token; throws `UsageError` with a message for people. */
export async function mintTokenFromArgs(argv: string[], env: NodeJS.ProcessEnv): Promise<string> {
  let values: { role?: string; sub?: string; tenant?: string; scopes?: string; ttl?: string; help?: boolean };
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        role: { type: 'string' },
        sub: { type: 'string' },
        tenant: { type: 'string' },
        scopes: { type: 'string' },
        ttl: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (err) {
    throw new UsageError(`${err instanceof Error ? err.message : String(err)}\n${USAGE}`);
  }
  if (values.help) throw new UsageError(USAGE);

  const secret = env.JWT_SECRET;
  if (!secret) throw new UsageError(`JWT_SECRET is not set: export the same secret the API uses (at least ${MIN_SECRET_LENGTH} characters)`);
  if (secret.length < MIN_SECRET_LENGTH) throw new UsageError(`JWT_SECRET must be at least ${MIN_SECRET_LENGTH} characters`);

  const role = values.role;
  if (!role) throw new UsageError(`--role is required\n${USAGE}`);
  const demo = Object.hasOwn(DEMO_USERS, role) ? DEMO_USERS[role as DemoRole] : undefined;
  const sub = values.sub ?? demo?.sub;
  if (!sub) throw new UsageError(`--sub is required for role "${role}" (demo roles: ${Object.keys(DEMO_USERS).join(', ')})`);
  const scopes = values.scopes !== undefined ? values.scopes.split(/[\s,]+/).filter(Boolean) : [...(demo?.scopes ?? [])];

  let ttlSec = 3600;
  if (values.ttl !== undefined) {
    if (!/^\d+$/.test(values.ttl) || Number(values.ttl) <= 0) throw new UsageError('--ttl must be a positive number of seconds');
    ttlSec = Number(values.ttl);
  }

  try {
    return await mintDevToken({ secret, sub, role, tenant: values.tenant ?? 'demo', scopes, ttlSec, ...issuerAndAudience(env) });
  } catch (err) {
    throw new UsageError(err instanceof Error ? err.message : String(err));
  }
}

async function main(): Promise<void> {
  try {
    const token = await mintTokenFromArgs(process.argv.slice(2), process.env);
    if (process.env.JWT_JWKS_URL) {
      process.stderr.write('mint-token: note: JWT_JWKS_URL is set; an API in JWKS mode will not accept this HS256 token\n');
    }
    process.stdout.write(`${token}\n`);
  } catch (err) {
    process.stderr.write(`mint-token: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = err instanceof UsageError ? 2 : 1;
  }
}

if (require.main === module) void main();
