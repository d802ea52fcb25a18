/**
 * Placeholder secrets are refused by the processes themselves (loadEnvConfig, which the API and the
 * worker call first, and loadAuthConfig), naming the variable and never the value; the values `npm
 * start` generates, and the ones the test suites use, still pass.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { loadAuthConfig } from '../../src/api/auth';
import { ConfigError, loadEnvConfig } from '../../src/config';
import { isPlaceholder, placeholderProblems, SECRET_VARIABLES } from '../../src/config/placeholders';
import { ROOT } from '../helpers/system';

/** The values deploy/env.example shipped before it left the secrets empty: operators still have them in .env files. */
const OLD_EXAMPLE = {
  POSTGRES_PASSWORD: 'CHANGE-postgres-password',
  LIVE_SECRET: 'CHANGE-0123456789abcdef0123456789abcdef',
  TOKEN_SEAL_KEY: 'CHANGE-0123456789abcdef0123456789abcdef',
  JWT_SECRET: 'CHANGE-0123456789abcdef0123456789abcdef',
  METRICS_TOKEN: 'CHANGE-0123456789abcdef0123456789abcdef',
};

function configError(env: NodeJS.ProcessEnv): string {
  try {
    loadEnvConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('loadEnvConfig accepted the environment');
}

test('each secret of the old example env file stops the process, naming the variable and not the value', () => {
  for (const variable of SECRET_VARIABLES) {
    const value = OLD_EXAMPLE[variable];
    const message = configError({ [variable]: value });
    expect(message).toMatch(new RegExp(`^environment: ${variable}: is a placeholder`));
    expect(message).not.toContain(value);
    expect(message).not.toContain('0123456789abcdef');
  }
});

test("POSTGRES_URL with the example's password is refused; the message names the variable, not the password", () => {
  const url = `postgres://temporal:${OLD_EXAMPLE.POSTGRES_PASSWORD}@postgresql:5432/dmh`;
  const message = configError({ POSTGRES_URL: url });
  expect(message).toMatch(/POSTGRES_URL: its password is a placeholder \(in the compose stack: POSTGRES_PASSWORD\)/);
  expect(message).not.toContain('postgres-password');
  // Percent-encoded, it is still the same password.
  expect(() => loadEnvConfig({ POSTGRES_URL: 'postgres://u:%43HANGE-me@db:5432/dmh' })).toThrow(/POSTGRES_URL/);
});

test('every placeholder at once: one line per variable', () => {
  const env = { ...OLD_EXAMPLE, POSTGRES_URL: `postgres://temporal:${OLD_EXAMPLE.POSTGRES_PASSWORD}@postgresql:5432/dmh` };
  expect(placeholderProblems(env).map((p) => p.variable)).toEqual([...SECRET_VARIABLES, 'POSTGRES_URL']);
  expect(configError(env).split('\n')).toHaveLength(5);
});

test.each([
  'changeme',
  'CHANGEME-please-0123456789abcdef0123456789',
  'change_me_to_something_random_0123456789',
  'change-this-secret-0123456789abcdef0123456',
  'replace-me-0123456789abcdef0123456789abcdef',
  'your-secret-here-0123456789abcdef0123456789',
  'your-jwt-secret-at-least-32-characters-long',
  '<your 32-character secret goes right here!!>',
  '${JWT_SECRET}',
  'secret',
  'Password',
  'x'.repeat(40),
  '*'.repeat(32),
])('%s is a placeholder', (value) => {
  expect(isPlaceholder(value)).toBe(true);
});

test('what npm start generates and openssl prints is never refused', () => {
  for (let i = 0; i < 500; i++) {
    for (const value of [randomBytes(32).toString('hex'), randomBytes(24).toString('hex'), randomBytes(32).toString('base64'), randomBytes(32).toString('base64url')]) {
      expect(isPlaceholder(value)).toBe(false);
    }
  }
});

test("the suites' own secrets and the local cluster's password pass", () => {
  const env = {
    JWT_SECRET: 'unit-test-secret-0123456789-abcdefghijklmnop',
    TOKEN_SEAL_KEY: 'oauth-browser-seal-key-0123456789abcdef',
    LIVE_SECRET: 'worker-secret-0123456789',
    METRICS_TOKEN: 'metrics-token-for-the-test-0123',
    POSTGRES_URL: 'postgres://dmh:dmh-local@127.0.0.1:5432/dmh',
  };
  expect(placeholderProblems(env)).toEqual([]);
  expect(() => loadEnvConfig(env)).not.toThrow();
  // Words that merely start like a marker are not markers.
  expect(isPlaceholder('changes-every-quarter-0123456789abcdef01')).toBe(false);
});

test('loadAuthConfig refuses a placeholder JWT_SECRET on its own, and takes a JWKS URL without any secret', () => {
  expect(() => loadAuthConfig({ JWT_SECRET: OLD_EXAMPLE.JWT_SECRET })).toThrow(/JWT_SECRET is a placeholder/);
  try {
    loadAuthConfig({ JWT_SECRET: OLD_EXAMPLE.JWT_SECRET });
  } catch (err) {
    expect((err as Error).message).not.toContain(OLD_EXAMPLE.JWT_SECRET);
  }
  expect(loadAuthConfig({ JWT_SECRET: '', JWT_JWKS_URL: 'https://idp.example/.well-known/jwks.json' })).toMatchObject({
    jwksUrl: 'https://idp.example/.well-known/jwks.json',
  });
});

test('deploy/env.example ships no secret value: each is empty, so compose refuses the copy as it is', () => {
  const lines = readFileSync(path.join(ROOT, 'deploy/env.example'), 'utf8').split('\n');
  for (const variable of [...SECRET_VARIABLES, 'POSTGRES_PASSWORD']) {
    const line = lines.find((l) => l.startsWith(`${variable}=`));
    expect(line).toBe(`${variable}=`);
  }
});
