/**
 * The production image's contents, run: with no Docker engine here, the runtime stage of the
 * Dockerfile is replayed into a temporary directory that stands for /app (its COPY lines, its ENV
 * lines, its jemalloc (this machine's, preloaded as the image preloads it), its `npm ci --omit=dev`:
 * production dependencies only, from the npm cache), and the host
 * runs from there: demo model, payments server over HTTP bound beyond loopback, worker and API. A
 * payment turn completes, so nothing the image leaves out (dev dependencies, tests, sources) is
 * needed at run time, and the payments server accepts the Host name the compose stack uses and
 * refuses others.
 */
import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { randomBytes } from 'node:crypto';
import { mintDevToken } from '../../src/api/auth';
import { freePort, spawnManaged, type ManagedProcess } from '../../src/cli/processes';
import type { TemporalDevServer } from '../../src/cli/processes';
import { DEMO_USERS } from '../../src/config/local-mode';
import { bearer, getJson, postMessage, readSse } from '../helpers/http';
import { JWT_AUDIENCE, JWT_ISSUER, ROOT, startTemporal } from '../helpers/system';

const run = promisify(execFile);
let app: string;
let temporal: TemporalDevServer;
const procs: ManagedProcess[] = [];
let apiUrl = '';
let paymentsPort = 0;
let token = '';

/** Where the image links jemalloc, and where this machine has it (set when the stage installs it). */
const IMAGE_JEMALLOC = '/usr/local/lib/libjemalloc.so.2';
let jemalloc = '';

/** Replays the Dockerfile's last stage into `dir` (standing for /app); returns its ENV, /app rewritten. */
async function replayRuntimeStage(dir: string): Promise<Record<string, string>> {
  const dockerfile = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8').replace(/\\\n/g, ' ');
  const stage = dockerfile.slice(dockerfile.lastIndexOf('\nFROM ')).split('\n');
  const env: Record<string, string> = {};
  const inApp = (p: string) => path.join(dir, p.replace(/^\/app\/?/, ''));
  for (const line of stage) {
    const copy = /^COPY (--from=build )?(.+)$/.exec(line.trim());
    if (copy) {
      const parts = (copy[2] as string).split(/\s+/);
      const target = parts.pop() as string;
      // The build stage's /app is this checkout after `npm test`'s build.
      const sources = parts.map((p) => path.join(ROOT, p.replace(/^\/app\//, '')));
      const into = target.startsWith('/') ? inApp(target) : path.join(dir, target);
      for (const source of sources) {
        const dest = target.endsWith('/') || sources.length > 1 ? path.join(into, path.basename(source)) : into;
        mkdirSync(path.dirname(dest), { recursive: true });
        cpSync(source, dest, { recursive: true });
      }
      continue;
    }
    const envLine = /^ENV (.+)$/.exec(line.trim());
    if (envLine) {
      for (const m of (envLine[1] as string).matchAll(/([A-Z_]+)=(\S+)/g)) {
        const value = (m[2] as string).replace(/^\/app(?=\/|$)/, dir);
        env[m[1] as string] = m[1] === 'LD_PRELOAD' && value === IMAGE_JEMALLOC ? jemalloc : value;
      }
      continue;
    }
    if (/^RUN .*apt-get install .*libjemalloc2/.test(line.trim())) {
      // The image's jemalloc (decision 0046): the one this machine has, or installs (root, apt).
      jemalloc = (await run('bash', [path.join(ROOT, 'scripts/ensure-jemalloc.sh')])).stdout.trim();
      continue;
    }
    if (/^RUN npm ci --omit=dev/.test(line.trim())) {
      // From the npm cache this checkout's install filled: the same pinned versions, no network.
      await run('npm', ['ci', '--omit=dev', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: dir, maxBuffer: 16 * 1024 * 1024 });
    }
  }
  mkdirSync(path.join(dir, '.data'), { recursive: true });
  // The image's MCP config names /app: here that is `dir`.
  const mcp = path.join(dir, 'config/mcp.json');
  writeFileSync(mcp, readFileSync(mcp, 'utf8').replaceAll('/app', dir));
  return env;
}

beforeAll(async () => {
  app = mkdtempSync(path.join(tmpdir(), 'dmh-image-'));
  const imageEnv = await replayRuntimeStage(app);
  temporal = await startTemporal(app);
  const spawn = async (name: string, args: string[], readyLine: RegExp, env: NodeJS.ProcessEnv = {}) => {
    // Only what a container would have: the image's ENV and the compose file's variables.
    const { proc, match } = await spawnManaged(name, process.execPath, args, {
      cwd: app,
      env: { PATH: process.env.PATH, NODE_ENV: 'production', ...imageEnv, ...env },
      readyLine,
      readyTimeoutMs: 60_000,
    });
    procs.push(proc);
    return match;
  };
  const model = await spawn('demo-model', ['dist/src/cli/demo-model.js', '--rules', 'examples/demo-model/rules.json', '--port', '0'], /^DEMO_MODEL_URL=(\S+)/);
  paymentsPort = await freePort();
  await spawn(
    'payments',
    ['dist/examples/servers/school/payments-server.js', '--http', '--host', '0.0.0.0', '--port', String(paymentsPort), '--allowed-host', `payments:${paymentsPort}`, '--data', `${app}/.data/school.json`],
    /^PAYMENTS_SERVER_URL=/,
  );
  const apiPort = await freePort();
  const shared = {
    TEMPORAL_ADDRESS: temporal.address,
    TASK_QUEUE: `image-${path.basename(app)}`,
    LIVE_SECRET: randomBytes(16).toString('hex'),
    TOKEN_SEAL_KEY: randomBytes(24).toString('hex'),
    LOG_LEVEL: 'warn',
  };
  await spawn('worker', ['dist/src/worker.js'], /^WORKER_READY$/, {
    ...shared,
    LLM_BASE_URL: model?.[1] ?? '',
    LLM_MODEL: 'demo-model',
    PAYMENTS_SERVER_URL: `http://127.0.0.1:${paymentsPort}/mcp`,
    AUDIT_LOG: `${app}/.data/audit.jsonl`,
    LIVE_PUSH_URL: `http://127.0.0.1:${apiPort}/internal/live`,
    WORKER_REPORT_MS: '1000',
  });
  const jwtSecret = randomBytes(32).toString('hex');
  const api = await spawn('api', ['dist/src/api/main.js'], /^API_URL=(\S+)/, {
    ...shared,
    JWT_SECRET: jwtSecret,
    JWT_ISSUER,
    JWT_AUDIENCE,
    API_HOST: '127.0.0.1',
    API_PORT: String(apiPort),
  });
  apiUrl = api?.[1] ?? '';
  const admin = DEMO_USERS.admin;
  token = await mintDevToken({ secret: jwtSecret, sub: admin.sub, role: admin.role, tenant: admin.tenant, scopes: [...admin.scopes], ttlSec: 600, issuer: JWT_ISSUER, audience: JWT_AUDIENCE });
}, 240_000);

afterAll(async () => {
  for (const p of procs.reverse()) await p.stop();
  await temporal?.proc.stop();
  if (app) rmSync(app, { recursive: true, force: true });
});

test('a payment turn runs on the image contents alone: production dependencies, compiled code, its config', async () => {
  const headers = bearer(token);
  const post = await postMessage(apiUrl, 'image', "Process payment for student Bob's invoice", headers);
  expect(post.status).toBe(202);
  const events = await readSse(`${apiUrl}${post.body.eventsUrl as string}`, { headers, timeoutMs: 90_000 });
  expect(events.at(-1)?.event).toBe('done');
  const turn = await getJson(`${apiUrl}/v1/turns/${post.body.turnId as string}`, headers);
  expect(turn.body.status).toBe('completed');
  expect(turn.body.toolCalls.map((c: { name: string }) => c.name)).toEqual(expect.arrayContaining(['admin__find_user', 'admin__get_invoice', 'payments__process_payment']));
  expect(turn.body.text).toMatch(/^Done\. Charged 250\.00 EUR/);
  // The console and the health answer work from the image too.
  expect((await fetch(`${apiUrl}/console/`)).status).toBe(200);
  expect((await getJson(`${apiUrl}/healthz`)).body.temporal.ok).toBe(true);
}, 120_000);

test('every process of the image runs on jemalloc, preloaded by the image', () => {
  expect(jemalloc).not.toBe('');
  expect(procs.length).toBeGreaterThanOrEqual(4);
  for (const proc of procs) {
    const maps = readFileSync(`/proc/${proc.pid}/maps`, 'utf8');
    expect({ process: proc.name, jemalloc: maps.includes('libjemalloc') }).toEqual({ process: proc.name, jemalloc: true });
  }
});

test('the payments server accepts the Host name of its --allowed-host and refuses other names', async () => {
  const status = (host: string) =>
    new Promise<number>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port: paymentsPort, path: '/mcp', method: 'GET', headers: { host } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end();
    });
  // Accepted: it reaches the MCP handler, which wants a session (400), instead of 403.
  expect(await status(`payments:${paymentsPort}`)).toBe(400);
  expect(await status(`127.0.0.1:${paymentsPort}`)).toBe(400);
  expect(await status(`evil.example:${paymentsPort}`)).toBe(403);
  expect(await status(`payments:${paymentsPort + 1}`)).toBe(403);
});
