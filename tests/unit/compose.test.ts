/**
 * The production compose stack, checked as far as a machine without a Docker engine allows: the file
 * is loaded by compose-go, the library `docker compose` itself uses (schema, interpolation,
 * references between services), through scripts/compose-check.sh, and the normalized project is
 * checked for the defects an operator hit before (unreachable servers, start order, restart
 * policies, a fixed API port that blocked --scale, retention) and for safe defaults (issue 25 §5): the
 * example env file copied as it is does not start, placeholder secrets that get past compose are
 * refused by the processes, the Temporal UI stays on loopback, shards, limits, log rotation, exact
 * image versions, the demo model in its own profile. The images themselves are not built or run here
 * (tests/e2e/image.e2e.test.ts runs the image's file layout instead).
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { builtinModules } from 'node:module';
import path from 'node:path';
import { promisify } from 'node:util';
import { loadAuthConfig } from '../../src/api/auth';
import { loadEnvConfig, loadHostConfig } from '../../src/config';
import { loadPolicyFile } from '../../src/config/policy';
import { loadMcpConfig } from '../../src/mcp/config';
import { ROOT } from '../helpers/system';

const run = promisify(execFile);
const COMPOSE = path.join(ROOT, 'docker-compose.yml');

/** The variables deploy/env.example sets, as an operator's .env copied from it unchanged would. */
function exampleEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const line of readFileSync(path.join(ROOT, 'deploy/env.example'), 'utf8').split('\n')) {
    const m = /^([A-Z_]+)=(.*)$/.exec(line);
    if (m) env[m[1] as string] = m[2] as string;
  }
  return env;
}

/** The example with every empty value filled in as the operator is told to: random secrets, a model. */
function filledEnv(): Record<string, string> {
  const env = exampleEnv();
  for (const [k, v] of Object.entries(env)) if (v === '') env[k] = randomBytes(32).toString('hex');
  // A payload key is an id and a 32-byte key in base64, not a plain secret.
  return { ...env, PAYLOAD_KEYS: `k1:${randomBytes(32).toString('base64')}`, LLM_BASE_URL: 'https://llm.example.com/v1', LLM_MODEL: 'some-model' };
}

/** The old example's values: still in operators' .env files. */
const OLD_PLACEHOLDERS = {
  POSTGRES_PASSWORD: 'CHANGE-postgres-password',
  LIVE_SECRET: 'CHANGE-0123456789abcdef0123456789abcdef',
  TOKEN_SEAL_KEY: 'CHANGE-0123456789abcdef0123456789abcdef',
  JWT_SECRET: 'CHANGE-0123456789abcdef0123456789abcdef',
  METRICS_TOKEN: 'CHANGE-0123456789abcdef0123456789abcdef',
};

async function composeConfig(env: Record<string, string>): Promise<{ ok: true; project: Project } | { ok: false; error: string }> {
  const args = [path.join(ROOT, 'scripts/compose-check.sh'), ...Object.entries(env).flatMap(([k, v]) => ['-env', `${k}=${v}`]), COMPOSE];
  try {
    const { stdout } = await run('bash', args, { cwd: ROOT, maxBuffer: 16 * 1024 * 1024 });
    return { ok: true, project: JSON.parse(stdout) as Project };
  } catch (err) {
    return { ok: false, error: String((err as { stderr?: string }).stderr ?? err) };
  }
}

interface Service {
  image?: string;
  build?: unknown;
  command?: string[];
  environment?: Record<string, string>;
  ports?: Array<{ target: number; published?: string; host_ip?: string }>;
  logging?: { driver?: string; options?: Record<string, string> };
  deploy?: { resources?: { limits?: { cpus?: number; memory?: string } } };
  profiles?: string[];
  depends_on?: Record<string, { condition: string }>;
  restart?: string;
  healthcheck?: { test?: string[] };
  volumes?: Array<{ type: string; source: string; target: string; read_only?: boolean }>;
}
interface Project {
  services: Record<string, Service>;
}

let project: Project;
beforeAll(async () => {
  const loaded = await composeConfig(filledEnv());
  if (!loaded.ok) throw new Error(`docker-compose.yml does not load: ${loaded.error}`);
  project = loaded.project;
}, 180_000);

const service = (name: string): Service => {
  const s = project.services[name];
  if (!s) throw new Error(`no service ${name}`);
  return s;
};

test('maintained Temporal images on PostgreSQL: schema step, server, namespace step, UI; never auto-setup', () => {
  const images = Object.values(project.services).map((s) => s.image ?? '');
  expect(images.some((i) => i.includes('auto-setup'))).toBe(false);
  expect(service('temporal').image).toMatch(/^temporalio\/server:1\.32\.\d+$/);
  expect(service('temporal-schema').image).toMatch(/^temporalio\/admin-tools:/);
  expect(service('temporal-namespace').image).toMatch(/^temporalio\/admin-tools:/);
  expect(service('temporal-ui').image).toMatch(/^temporalio\/ui:/);
  expect(service('temporal').environment).toMatchObject({ DB: 'postgres12', POSTGRES_SEEDS: 'postgresql' });
  // The order: schema before the server, the namespace (with its retention) before api and worker.
  expect(service('temporal-schema').depends_on?.['postgresql']?.condition).toBe('service_healthy');
  expect(service('temporal').depends_on?.['temporal-schema']?.condition).toBe('service_completed_successfully');
  // The namespace step starts with the server and waits for its gRPC health itself (a check from the
  // admin-tools image), so start order never depends on what the server image happens to contain.
  expect(service('temporal-namespace').depends_on?.['temporal']?.condition).toBe('service_started');
  expect(readFileSync(path.join(ROOT, 'deploy/temporal/create-namespace.sh'), 'utf8')).toMatch(/until temporal operator cluster health --address/);
  expect(service('temporal-namespace').environment?.['NAMESPACE_RETENTION']).toBe('720h');
  for (const name of ['api', 'worker']) {
    expect(service(name).depends_on?.['temporal-namespace']?.condition).toBe('service_completed_successfully');
  }
  // The scripts the steps run are in the repository, where the compose file mounts them from.
  for (const s of ['temporal-schema', 'temporal-namespace']) {
    const mount = service(s).volumes?.find((v) => v.target === '/deploy');
    const script = service(s).command?.[0] ?? '';
    expect(existsSync(path.join(ROOT, mount?.source ?? '', path.basename(script)))).toBe(true);
  }
});

test('api replicas behind a load balancer: no fixed API port, healthchecks and restart policies', () => {
  expect(service('api').ports ?? []).toEqual([]);
  expect(service('lb').ports?.map((p) => [p.target, p.published])).toEqual([[8000, '3000']]);
  expect(readFileSync(path.join(ROOT, 'deploy/caddy/Caddyfile'), 'utf8')).toMatch(/dynamic a \{\s*name api\s*port 3000/);
  for (const name of ['api', 'worker']) {
    expect(service(name).restart).toBe('unless-stopped');
    expect(service(name).healthcheck?.test?.join(' ')).toMatch(/fetch\('http:\/\/127\.0\.0\.1:\d+\/(healthz|healthz\/ready)'\)/);
  }
  // The worker's healthcheck reads the readiness endpoint beside the metrics it is told to serve.
  expect(service('worker').environment).toMatchObject({ WORKER_METRICS_PORT: '9464', WORKER_METRICS_HOST: '0.0.0.0' });
});

test('shared state wired: PostgreSQL for every replica and worker, live text and reports to the replicas by service name, audit in the table', () => {
  const api = service('api').environment ?? {};
  const worker = service('worker').environment ?? {};
  expect(api['POSTGRES_URL']).toMatch(/^postgres:\/\/[^@]+@postgresql:5432\/dmh$/);
  expect(worker['POSTGRES_URL']).toBe(api['POSTGRES_URL']);
  expect(worker['AUDIT_STORE']).toBe('postgres');
  expect(worker['LIVE_PUSH_URL']).toBe(`http://api:${api['API_PORT']}/internal/live`);
  expect(worker['LIVE_SECRET']).toBe(api['LIVE_SECRET']);
  expect(service('temporal-schema').environment?.['DMH_DATABASE']).toBe('dmh');
});

test('the public load balancer refuses /internal/* before it proxies anything', () => {
  const caddyfile = readFileSync(path.join(ROOT, 'deploy/caddy/Caddyfile'), 'utf8').replace(/^\s*#.*$/gm, '');
  // A named matcher for /internal and everything under it, answered 404 in its own handle block...
  const matcher = /@(\w+)\s+path\s+\/internal\s+\/internal\/\*/.exec(caddyfile);
  expect(matcher).not.toBeNull();
  const refuse = new RegExp(`handle\\s+@${matcher?.[1]}\\s*\\{[^}]*respond\\s+\\S.*\\s404\\s*\\}`).exec(caddyfile);
  expect(refuse).not.toBeNull();
  // ...and the proxy lives only in the fallback handle, which handle blocks never reach for a matched path.
  expect(caddyfile.match(/reverse_proxy/g)).toHaveLength(1);
  expect(caddyfile.indexOf('reverse_proxy')).toBeGreaterThan(caddyfile.indexOf(refuse?.[0] ?? '') + (refuse?.[0].length ?? 0));
  expect(caddyfile).toMatch(/handle\s*\{\s*reverse_proxy/);
  // Nothing else publishes the API: only the balancer has a host port.
  expect(Object.entries(project.services).filter(([, s]) => (s.ports ?? []).some((p) => p.target === 3000 || p.target === 8000)).map(([n]) => n)).toEqual(['lb']);
});

test('the payments server listens beyond loopback and accepts the name the worker uses', () => {
  const command = service('payments').command ?? [];
  const url = new URL(service('worker').environment?.['PAYMENTS_SERVER_URL'] ?? '');
  expect(command[command.indexOf('--host') + 1]).toBe('0.0.0.0');
  expect(command[command.indexOf('--allowed-host') + 1]).toBe(url.host);
  expect(command).toContain(url.port);
});

test("the user's MCP config, host config and policy are mounted read-only, and the defaults load", () => {
  const mounts = Object.fromEntries((service('worker').volumes ?? []).map((v) => [v.target, v]));
  for (const target of ['/app/config/mcp.json', '/app/config/host.json', '/app/config/policy.json']) {
    expect(mounts[target]?.read_only).toBe(true);
    expect(existsSync(path.resolve(ROOT, mounts[target]?.source ?? ''))).toBe(true);
  }
  expect(service('api').environment).toMatchObject({ HOST_CONFIG: '/app/config/host.json', POLICY_FILE: '/app/config/policy.json' });
  const mcp = loadMcpConfig(path.resolve(ROOT, mounts['/app/config/mcp.json']?.source ?? ''), { PAYMENTS_SERVER_URL: 'http://payments:4020/mcp' });
  // Every context resource the host config names comes from a configured server.
  const host = loadHostConfig(path.resolve(ROOT, mounts['/app/config/host.json']?.source ?? ''));
  const named = [host.context, ...Object.values(host.contextByRole ?? {})].flatMap((c) => c?.resources ?? []).map((r) => r.server);
  expect(Object.keys(mcp.mcpServers)).toEqual(expect.arrayContaining([...new Set(named)]));
  expect(() => loadPolicyFile(path.resolve(ROOT, mounts['/app/config/policy.json']?.source ?? ''))).not.toThrow();
});

test('missing secrets stop the stack before it starts, naming each one', async () => {
  const env = filledEnv();
  for (const secret of ['POSTGRES_PASSWORD', 'LIVE_SECRET', 'TOKEN_SEAL_KEY', 'METRICS_TOKEN', 'LLM_BASE_URL', 'LLM_MODEL']) {
    const { [secret]: _dropped, ...rest } = env;
    const result = await composeConfig(rest);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error).toContain(`required variable ${secret} is missing a value`);
  }
  // The API's tokens: a shared secret or a key set, and compose refuses neither.
  const { JWT_SECRET: _secret, ...noAuth } = env;
  const result = await composeConfig(noAuth);
  expect(result.ok).toBe(false);
  if (!result.ok) expect(result.error).toMatch(/set JWT_SECRET to 32 or more random characters, or JWT_JWKS_URL/);
}, 60_000);

test('the example env file copied unchanged is refused by compose, naming every value to fill in', async () => {
  const result = await composeConfig(exampleEnv());
  expect(result.ok).toBe(false);
  if (result.ok) return;
  for (const name of ['POSTGRES_PASSWORD', 'LIVE_SECRET', 'TOKEN_SEAL_KEY', 'METRICS_TOKEN', 'LLM_BASE_URL', 'LLM_MODEL']) {
    expect(result.error).toContain(`required variable ${name} is missing a value`);
  }
  expect(result.error).toMatch(/or JWT_JWKS_URL/);
}, 60_000);

test("placeholder values get past compose but not the processes: the API's and worker's environments are refused", async () => {
  const loaded = await composeConfig({ ...filledEnv(), ...OLD_PLACEHOLDERS });
  if (!loaded.ok) throw new Error(loaded.error);
  for (const name of ['api', 'worker']) {
    const env = loaded.project.services[name]?.environment ?? {};
    let message = '';
    try {
      loadEnvConfig(env);
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(/LIVE_SECRET: is a placeholder/);
    expect(message).toMatch(/TOKEN_SEAL_KEY: is a placeholder/);
    expect(message).toMatch(/POSTGRES_URL: its password is a placeholder/);
    if (name === 'api') expect(message).toMatch(/JWT_SECRET: is a placeholder/);
    for (const value of Object.values(OLD_PLACEHOLDERS)) expect(message).not.toContain(value);
  }
  // The schema step refuses the database password before it creates anything with it.
  const refuse = (value: string) =>
    run('sh', [path.join(ROOT, 'deploy/temporal/refuse-placeholder.sh'), 'POSTGRES_PASSWORD', value]).then(
      () => 'accepted',
      (err: { stderr?: string }) => err.stderr ?? '',
    );
  const refused = await refuse(OLD_PLACEHOLDERS.POSTGRES_PASSWORD);
  expect(refused).toMatch(/^POSTGRES_PASSWORD is a placeholder/);
  expect(refused).not.toContain(OLD_PLACEHOLDERS.POSTGRES_PASSWORD);
  expect(await refuse(randomBytes(32).toString('hex'))).toBe('accepted');
  expect(readFileSync(path.join(ROOT, 'deploy/temporal/setup-postgres.sh'), 'utf8')).toMatch(/refuse_placeholder POSTGRES_PASSWORD "\$SQL_PASSWORD" \|\| exit 1/);
}, 60_000);

test('the API takes a JWKS without any shared secret, and the auth, CORS and rate-limit settings pass through', async () => {
  const { JWT_SECRET: _secret, ...env } = filledEnv();
  const loaded = await composeConfig({
    ...env,
    JWT_JWKS_URL: 'https://idp.example.com/.well-known/jwks.json',
    JWT_ISSUER: 'https://idp.example.com/',
    JWT_AUDIENCE: 'dmh-api',
    CORS_ORIGINS: 'https://app.example.com,https://admin.example.com',
    RATE_LIMIT_USER_PER_MIN: '5',
    RATE_LIMIT_TENANT_PER_MIN: '50',
    MCP_ALLOWED_HOSTS: 'mcp.example.com',
  });
  if (!loaded.ok) throw new Error(loaded.error);
  const cfg = loadEnvConfig(loaded.project.services['api']?.environment ?? {});
  expect(loadAuthConfig(cfg)).toEqual({ jwksUrl: 'https://idp.example.com/.well-known/jwks.json', issuer: 'https://idp.example.com/', audience: 'dmh-api' });
  expect(cfg.CORS_ORIGINS).toEqual(['https://app.example.com', 'https://admin.example.com']);
  expect([cfg.RATE_LIMIT_USER_PER_MIN, cfg.RATE_LIMIT_TENANT_PER_MIN]).toEqual([5, 50]);
  expect(cfg.MCP_ALLOWED_HOSTS).toEqual(['mcp.example.com']);
  // Unset, they keep the API's own defaults.
  const defaults = loadEnvConfig(service('api').environment ?? {});
  expect([defaults.RATE_LIMIT_USER_PER_MIN, defaults.RATE_LIMIT_TENANT_PER_MIN, defaults.CORS_ORIGINS]).toEqual([60, 600, []]);
}, 60_000);

test('the production image needs no dev dependency at run time: every package dist/ requires is a dependency', () => {
  const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
  const dockerfile = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
  const runtime = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
  expect(runtime).toMatch(/npm ci --omit=dev/);
  // What the runtime stage copies from the build: compiled src and examples, never tests or bench.
  const copied = [...runtime.matchAll(/^COPY --from=build (.+) \S+$/gm)].flatMap((m) => (m[1] as string).split(' ').map((p) => p.replace(/^\/app\//, '')));
  expect(copied.every((p) => p.startsWith('dist/src') || p.startsWith('dist/examples/'))).toBe(true);
  expect(copied).toContain('dist/src');
  const missing = new Set<string>();
  const check = (file: string): void => {
    for (const m of readFileSync(file, 'utf8').matchAll(/require\("([^".][^"]*)"\)/g)) {
      const spec = m[1] as string;
      const name = spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : (spec.split('/')[0] as string);
      if (builtinModules.includes(name) || name.startsWith('node:')) continue;
      if (!(name in pkg.dependencies)) missing.add(`${path.relative(ROOT, file)}: ${name}`);
    }
  };
  const walk = (dir: string): void => {
    if (!statSync(dir).isDirectory()) return check(dir);
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const file = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(file);
      else if (entry.name.endsWith('.js') && !entry.name.startsWith('workflow-bundle')) check(file);
    }
  };
  for (const dir of copied) walk(path.join(ROOT, dir));
  expect([...missing]).toEqual([]);
});

test('Temporal is created with 512 history shards unless the operator picks another count, and says it is fixed', async () => {
  expect(service('temporal').environment?.['NUM_HISTORY_SHARDS']).toBe('512');
  const loaded = await composeConfig({ ...filledEnv(), NUM_HISTORY_SHARDS: '1024' });
  if (!loaded.ok) throw new Error(loaded.error);
  expect(loaded.project.services['temporal']?.environment?.['NUM_HISTORY_SHARDS']).toBe('1024');
  const compose = readFileSync(COMPOSE, 'utf8');
  expect(compose.slice(0, compose.indexOf('NUM_HISTORY_SHARDS:'))).toMatch(/FIXED for the life of the cluster[^]*docs\/SCALING\.md[^]*$/);
}, 60_000);

test('the Temporal UI, which has no sign-in, is published on loopback only; only the load balancer is public', () => {
  expect(service('temporal-ui').ports?.map((p) => [p.host_ip, p.target])).toEqual([['127.0.0.1', 8080]]);
  const publicPorts = Object.entries(project.services).flatMap(([n, s]) => (s.ports ?? []).filter((p) => p.host_ip !== '127.0.0.1').map(() => n));
  expect(publicPorts).toEqual(['lb']);
});

test('every service, the demo profile included, has CPU and memory limits and rotated logs', async () => {
  const loaded = await composeConfig({ ...filledEnv(), COMPOSE_PROFILES: 'demo' });
  if (!loaded.ok) throw new Error(loaded.error);
  const services = Object.entries(loaded.project.services);
  expect(services.map(([n]) => n)).toContain('demo-model');
  for (const [name, s] of services) {
    const limits = s.deploy?.resources?.limits;
    expect([name, typeof limits?.cpus, typeof limits?.memory]).toEqual([name, 'number', 'string']);
    expect([name, Number(limits?.memory)]).toEqual([name, expect.any(Number)]);
    expect(Number(limits?.memory)).toBeGreaterThan(0);
    expect([name, s.logging?.driver, s.logging?.options?.['max-size'], s.logging?.options?.['max-file']]).toEqual([name, 'json-file', '10m', '5']);
  }
}, 60_000);

test('the demo model runs only in the demo profile, and the workers never fall back to it', async () => {
  expect(project.services['demo-model']).toBeUndefined();
  expect(readFileSync(COMPOSE, 'utf8')).not.toMatch(/LLM_BASE_URL:-/);
  expect(service('worker').environment?.['LLM_BASE_URL']).toBe('https://llm.example.com/v1');
  const demo = await composeConfig({ ...filledEnv(), COMPOSE_PROFILES: 'demo', LLM_BASE_URL: 'http://demo-model:4010/v1', LLM_MODEL: 'demo-model' });
  if (!demo.ok) throw new Error(demo.error);
  expect(demo.project.services['demo-model']?.profiles).toEqual(['demo']);
  const url = new URL(demo.project.services['worker']?.environment?.['LLM_BASE_URL'] ?? '');
  expect(demo.project.services['demo-model']?.command).toEqual(expect.arrayContaining(['--port', url.port]));
}, 60_000);

test('images: exact versions, each a documented variable that also takes a digest', async () => {
  const exact = /^[a-z0-9/._-]+:\d+\.\d+(\.\d+)?(@sha256:[0-9a-f]{64})?$/;
  for (const [name, s] of Object.entries(project.services)) {
    if (s.build) continue; // this repository's image, built by compose
    expect([name, s.image]).toEqual([name, expect.stringMatching(exact)]);
  }
  const example = readFileSync(path.join(ROOT, 'deploy/env.example'), 'utf8');
  const compose = readFileSync(COMPOSE, 'utf8');
  const variables = [...compose.matchAll(/image: [^$\n]*\$\{([A-Z_]+_VERSION):-/g)].map((m) => m[1] as string);
  expect(new Set(variables)).toEqual(new Set(['POSTGRES_VERSION', 'TEMPORAL_VERSION', 'TEMPORAL_UI_VERSION', 'CADDY_VERSION']));
  for (const v of variables) expect(example).toMatch(new RegExp(`${v}=\\d`));
  const digest = `sha256:${'ab'.repeat(32)}`;
  const pinned = await composeConfig({ ...filledEnv(), TEMPORAL_VERSION: `1.32.2@${digest}` });
  if (!pinned.ok) throw new Error(pinned.error);
  expect(pinned.project.services['temporal']?.image).toBe(`temporalio/server:1.32.2@${digest}`);
  // The host's own image starts from an exact Node release too.
  const dockerfile = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
  expect(dockerfile).toMatch(/^ARG NODE_IMAGE=node:\d+\.\d+\.\d+-bookworm-slim$/m);
  expect(dockerfile.match(/^FROM .*$/gm)).toEqual(['FROM ${NODE_IMAGE} AS build', 'FROM ${NODE_IMAGE}']);
}, 60_000);
