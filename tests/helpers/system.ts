import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { ProviderName } from '../../src/llm/client';
import { providerCase, workerEnvFor } from './providers';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import { OpenTelemetryWorkflowClientInterceptor } from '@temporalio/interceptors-opentelemetry';
import type { FastifyInstance } from 'fastify';
import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { memoryRateLimiters } from '../../src/api/rate-limits';
import { buildApp } from '../../src/api/app';
import { createAuthenticator, mintDevToken } from '../../src/api/auth';
import { setDefaultToken } from './http';
import { createTemporalGateway, ensureSearchAttributes, type TurnReads } from '../../src/api/gateway';
import { connectTemporal } from '../../src/api/gateway/connection';
import { type ManagedProcess, freePort, spawnManaged, startTemporalDevServer, type TemporalDevServer } from '../../src/cli/processes';
import { turnSettingsFrom } from '../../src/config';
import { HostConfigSchema } from '../../src/config/host-schema';
import { DEMO_USERS } from '../../src/config/local-mode';
import { type DemoRules, parseDemoRules } from '../../src/demo-model/rules';
import { demoSuggestions } from '../../src/demo-model/rules-file';
import { type DemoModelHandle, startDemoModel } from '../../src/demo-model/server';
import { createLiveTextHub, type LiveTextHub } from '../../src/live/hub';
import type { Policy } from '../../src/shared/policy';
import { SealedFileOAuthStore } from '../../src/security/oauth-store';
import { loadPolicyFile } from '../../src/config/policy';
import { parsePayloadKeys } from '../../src/config/payload-keys';
import { dataConverterFor } from '../../src/security/data-converter';
import { directoryBlobStore } from '../../src/security/blob-store';
import { DEFAULT_CLAIM_CHECK_THRESHOLD } from '../../src/security/claim-check';
import { fileUsageLedger } from '../../src/usage/ledger';

/** The repository root, whether this file runs from tests/ (jest) or dist/tests/ (compiled tools). */
export const ROOT = findRoot(__dirname);
function findRoot(from: string): string {
  let dir = from;
  while (!existsSync(path.join(dir, 'package.json'))) {
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`no package.json above ${from}`);
    dir = parent;
  }
  return dir;
}
export const DIST = path.join(ROOT, 'dist');
export const EVERYTHING_SERVER = path.join(ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');
export const NOTES_SERVER = path.join(DIST, 'examples/servers/notes-server.js');
export const EXAMPLE_RULES = path.join(ROOT, 'examples/demo-model/rules.json');

/** The demo model's example rules, with `scripts` tried before theirs. */
export function exampleRulesWith(...scripts: NonNullable<DemoRules['scripts']>): DemoRules {
  const base = JSON.parse(readFileSync(EXAMPLE_RULES, 'utf8')) as DemoRules;
  return { ...base, scripts: [...scripts, ...(base.scripts ?? [])] };
}

export function requireBuild(): void {
  if (!existsSync(path.join(DIST, 'src/worker.js')) || !existsSync(NOTES_SERVER)) {
    throw new Error('dist/ is missing: run `npm test` (it builds first) or `bash scripts/setup.sh`');
  }
}

export function temporalCli(): string {
  const cli = process.env.TEMPORAL_CLI;
  if (!cli) throw new Error('TEMPORAL_CLI is not set: run the suite with `npm test`, which provides the Temporal CLI');
  return cli;
}

/**
 * Starts a dev server with `start(attempt)` (which picks its ports), again on fresh ports when it exits
 * at start, a few times: a port picked free can be taken by another process before the server binds it
 * (its HTTP API port, the gRPC port + 1000, is not even the one picked).
 */
export async function startOnFreshPorts(start: (attempt: number) => Promise<TemporalDevServer>): Promise<TemporalDevServer> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start(attempt);
    } catch (err) {
      if (attempt >= 3 || !/exited with code/.test(String(err))) throw err;
    }
  }
}

/** Starts a Temporal dev server on free ports with its SQLite file in `dir`. */
export async function startTemporal(dir: string): Promise<TemporalDevServer> {
  return await startOnFreshPorts(async (attempt) => {
    // The same file name every time (tests read and restart it by name): what a failed start left goes first.
    if (attempt > 1) for (const f of readdirSync(dir).filter((name) => name.startsWith('temporal.db'))) rmSync(path.join(dir, f), { force: true });
    return await startTemporalDevServer({ cli: temporalCli(), dbFile: path.join(dir, 'temporal.db'), port: await freePort() });
  });
}

/**
 * The bytes of the dev server's SQLite files in `dir` (the database, its write-ahead log, and a journal
 * if one exists at that moment). SQLite creates and deletes its journal while it writes, so a file listed
 * and gone before it is read is skipped rather than failing the read.
 */
export function temporalDatabaseBytes(dir: string): Buffer {
  const parts: Buffer[] = [];
  for (const f of readdirSync(dir).filter((name) => name.startsWith('temporal.db'))) {
    try {
      parts.push(readFileSync(path.join(dir, f)));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
  return Buffer.concat(parts);
}

/** A client as the API connects it (src/api/main.ts), and the close that is safe at any moment. */
export async function connectClient(address: string, dataConverter: DataConverter = {}): Promise<{ client: Client; close(): Promise<void> }> {
  // The port opens a moment before the frontend serves; retry briefly.
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      const temporal = await connectTemporal({ address });
      // Starts, updates and signals carry the trace context, as the API's do.
      const client = new Client({ connection: temporal.connection, dataConverter, interceptors: { workflow: [new OpenTelemetryWorkflowClientInterceptor()] } });
      try {
        await client.workflowService.getSystemInfo({});
        await ensureSearchAttributes(client, 'default');
      } catch (err) {
        await temporal.close();
        throw err;
      }
      return { client, close: () => temporal.close() };
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

export interface SystemOptions {
  rules?: DemoRules;
  /** Extra mcpServers entries (merged over the default notes + everything). */
  extraServers?: Record<string, unknown>;
  /** Replaces the default servers entirely; gets the system's temp dir for data files. */
  servers?: (
    dir: string,
    onStop: (fn: () => Promise<void>) => void,
  ) => Promise<Record<string, unknown>> | Record<string, unknown>;
  host?: Record<string, unknown>;
  /** More host config that needs the demo model's address (e.g. `models` pointing at it), merged over `host`. */
  hostFor?: (model: DemoModelHandle) => Record<string, unknown>;
  workerEnv?: NodeJS.ProcessEnv;
  /** The model provider the worker speaks to the demo model's stand-in for it (tests/helpers/providers.ts); default openai. */
  provider?: ProviderName;
  /** Defaults to examples/policy.json. */
  policy?: Policy;
  rateLimits?: { userPerMinute: number; tenantPerMinute: number };
  /** Payload keys (PAYLOAD_KEYS) of the worker and the API's client: histories are sealed. */
  payloadKeys?: string;
  /** Seal key shared by the API and the worker (TOKEN_SEAL_KEY): user tokens travel sealed. */
  tokenSealKey?: string;
  /** Log the API at debug level into memory (`sys.apiLog()`), e.g. to scan it for secrets. */
  captureApiLog?: boolean;
  /** Browser origins the API allows (CORS). */
  corsOrigins?: string[];
  /** Serves the API's GET /metrics to this bearer token. */
  metricsToken?: string;
  /** The SSE follower's safety-net reads (AppDeps.sseSafetyNet): a test counting Temporal reads widens them. */
  sseSafetyNet?: { quietPollMs?: number; expectedPushGraceMs?: number };
  /** Another Temporal than the dev server (e.g. tests/helpers/temporal-cluster.ts), given the system's temp dir. */
  temporal?: (dir: string) => Promise<TemporalDevServer>;
}

export const JWT_ISSUER = 'durable-mcp-host';
/** The authorization server /mcp's protected resource metadata names in tests. */
export const MCP_TEST_ISSUER = 'https://auth.example.test';
export const JWT_AUDIENCE = 'durable-mcp-host-api';
export { DEMO_USERS };

export interface TestSystem {
  dir: string;
  apiUrl: string;
  app: FastifyInstance;
  client: Client;
  temporal: TemporalDevServer;
  model: DemoModelHandle;
  worker: ManagedProcess;
  taskQueue: string;
  notesFile: string;
  mcpConfigPath: string;
  auditFile: string;
  jwtSecret: string;
  /** A signed token; the admin token is also the HTTP helpers' default. */
  token(user: keyof typeof DEMO_USERS | { sub: string; role: string; tenant: string; scopes?: string[] }, ttlSec?: number): Promise<string>;
  workerEnv: NodeJS.ProcessEnv;
  /** The API's live text hub (what workers pushed). */
  liveHub: LiveTextHub;
  /** The API's Temporal reads of turns so far (queries, describes, results). */
  turnReads(): TurnReads;
  startWorker(env?: NodeJS.ProcessEnv): Promise<ManagedProcess>;
  /** The policy for the requests and turns that follow (a turn keeps the one it started with), as an edit of POLICY_FILE in production. */
  setPolicy(policy: Policy): void;
  /** What the API logged (only with `captureApiLog`). */
  apiLog(): string;
  /** Registers cleanup for something the test started (runs before the system stops). */
  onStop(fn: () => Promise<void>): void;
  stop(): Promise<void>;
}

export function defaultHostConfig(overrides: Record<string, unknown> = {}) {
  return HostConfigSchema.parse({
    systemPrompt: 'You are a test assistant.',
    maxSteps: 6,
    llmRetry: { maximumAttempts: 3, initialIntervalMs: 100, maximumIntervalMs: 500 },
    mcpRetry: { maximumAttempts: 3, initialIntervalMs: 100, maximumIntervalMs: 500 },
    ...overrides,
  });
}

/** The whole system on real parts: Temporal dev server, worker process, demo model, API over HTTP. */
export async function startSystem(opts: SystemOptions = {}): Promise<TestSystem> {
  requireBuild();
  const dir = mkdtempSync(path.join(tmpdir(), 'dmh-e2e-'));
  const cleanups: Array<() => Promise<void>> = [];
  try {
    const temporal = await (opts.temporal ?? startTemporal)(dir);
    cleanups.push(() => temporal.proc.stop());
    // The API's client converts as the worker does: sealed with keys, large payloads by reference in
    // the system's own claim-check directory (the worker's CLAIM_CHECK_DIR below).
    const claimCheckDir = path.join(dir, 'claim-check');
    const keyring = opts.payloadKeys ? { keys: parsePayloadKeys(opts.payloadKeys, 'payloadKeys') } : undefined;
    const claimCheck = { store: directoryBlobStore(claimCheckDir), thresholdBytes: Number(opts.workerEnv?.['CLAIM_CHECK_THRESHOLD_BYTES'] ?? DEFAULT_CLAIM_CHECK_THRESHOLD) };
    const { client, close: closeClient } = await connectClient(temporal.address, dataConverterFor(keyring, claimCheck));
    cleanups.push(closeClient);

    const rules = opts.rules ?? (JSON.parse((await import('node:fs')).readFileSync(EXAMPLE_RULES, 'utf8')) as DemoRules);
    const model = await startDemoModel({ rules });
    cleanups.push(() => model.close());

    const notesFile = path.join(dir, 'notes.json');
    const mcpConfigPath = path.join(dir, 'mcp.json');
    writeFileSync(
      mcpConfigPath,
      JSON.stringify(
        {
          mcpServers: opts.servers
            ? await opts.servers(dir, (fn) => cleanups.push(fn))
            : {
                // As in examples/mcp.json: notes dedupes on the idempotency key; everything's sampling
                // trigger only asks the model, so a lost answer may be asked for again.
                notes: { command: process.execPath, args: [NOTES_SERVER, '--stdio', '--data', notesFile], honoursIdempotencyKey: true },
                everything: { command: process.execPath, args: [EVERYTHING_SERVER, 'stdio'], readOnlyTools: ['trigger-sampling-request'] },
                ...opts.extraServers,
              },
        },
        null,
        2,
      ),
    );

    const taskQueue = `e2e-${path.basename(dir)}`;
    // The API's port is chosen up front so the worker knows where to push live text.
    const apiPort = await freePort();
    const liveSecret = randomBytes(16).toString('hex');
    const liveHub = createLiveTextHub();
    cleanups.push(async () => liveHub.close());
    const auditFile = path.join(dir, 'audit.jsonl');
    // The API's host config, in a file the worker reads too (maxToolResultChars), as both read HOST_CONFIG.
    const hostConfig = defaultHostConfig({ ...opts.host, ...opts.hostFor?.(model) });
    const hostConfigPath = path.join(dir, 'system-host.json');
    writeFileSync(hostConfigPath, JSON.stringify(hostConfig, null, 2));
    const usageFile = path.join(dir, 'usage.jsonl');
    const workerEnv: NodeJS.ProcessEnv = {
      ...process.env,
      TEMPORAL_ADDRESS: temporal.address,
      TASK_QUEUE: taskQueue,
      MCP_CONFIG: mcpConfigPath,
      HOST_CONFIG: hostConfigPath,
      ...workerEnvFor(providerCase(opts.provider ?? 'openai'), model),
      LOG_LEVEL: 'warn',
      AUDIT_LOG: auditFile,
      USAGE_LOG: usageFile,
      LIVE_SECRET: liveSecret,
      LIVE_PUSH_URL: `http://127.0.0.1:${apiPort}/internal/live`,
      // /healthz follows the workers' reports: often enough that a test sees a server go down at once.
      WORKER_REPORT_MS: '1000',
      ...(opts.tokenSealKey ? { TOKEN_SEAL_KEY: opts.tokenSealKey } : {}),
      ...(opts.payloadKeys ? { PAYLOAD_KEYS: opts.payloadKeys } : {}),
      CLAIM_CHECK_DIR: claimCheckDir,
      // The workers of this system see each other die here (src/liveness).
      WORKER_LIVENESS_DIR: path.join(dir, 'workers'),
      // OAuth-protected servers: the token store the API's callback route shares, and that route.
      OAUTH_STORE_DIR: path.join(dir, 'oauth'),
      OAUTH_REDIRECT_URL: `http://127.0.0.1:${apiPort}/v1/oauth/callback`,
      ...opts.workerEnv,
    };
    const workers: ManagedProcess[] = [];
    const startWorker = async (env: NodeJS.ProcessEnv = {}) => {
      const { proc } = await spawnManaged('worker', process.execPath, [path.join(DIST, 'src/worker.js')], {
        env: { ...workerEnv, ...env },
        cwd: ROOT,
        readyLine: /^WORKER_READY$/,
        readyTimeoutMs: 60_000,
      });
      workers.push(proc);
      return proc;
    };
    cleanups.push(async () => {
      for (const w of workers) await w.stop();
    });
    const worker = await startWorker();

    const jwtSecret = randomBytes(32).toString('hex');
    const token: TestSystem['token'] = async (who, ttlSec = 3_600) => {
      const u = typeof who === 'string' ? DEMO_USERS[who] : who;
      return await mintDevToken({
        secret: jwtSecret, sub: u.sub, role: u.role, tenant: u.tenant, scopes: [...(u.scopes ?? [])], ttlSec, issuer: JWT_ISSUER, audience: JWT_AUDIENCE,
      });
    };
    setDefaultToken(await token('admin'));
    let apiLogText = '';
    const apiLogger = opts.captureApiLog
      ? pino({ level: 'debug' }, { write: (line: string) => void (apiLogText += line) })
      : undefined;
    let policy = opts.policy ?? loadPolicyFile(path.join(ROOT, 'examples/policy.json'));
    let settings = turnSettingsFrom(hostConfig, policy);
    const gateway = createTemporalGateway({
      client,
      taskQueue,
      ...(opts.tokenSealKey ? { tokenSealKey: opts.tokenSealKey } : {}),
      settings: () => settings,
      catalogCacheMs: 0,
      catalogTimeoutMs: 10_000,
      // As main.ts: a turn whose end (and memory) the workers pushed here is not read from Temporal again.
      endSeen: (turnId) => liveHub.events.endOf(turnId),
      handedOn: (turnId) => liveHub.events.memoryOf(turnId),
    });
    const app = await buildApp({
      policy: () => policy,
      usage: { ledger: fileUsageLedger(usageFile), config: () => hostConfig },
      ...(apiLogger ? { logger: apiLogger } : {}),
      auth: createAuthenticator({ hs256Secret: jwtSecret, issuer: JWT_ISSUER, audience: JWT_AUDIENCE }),
      limiters: memoryRateLimiters(opts.rateLimits ?? { userPerMinute: 10_000, tenantPerMinute: 10_000 }),
      gateway,
      maxMessageChars: 4_000,
      ssePollMs: 25,
      ...(opts.sseSafetyNet ? { sseSafetyNet: opts.sseSafetyNet } : {}),
      live: { hub: liveHub, secret: liveSecret },
      // The host as an MCP server at /mcp, as main.ts serves it.
      mcp: { stateKey: randomBytes(32).toString('hex'), authorizationServers: [MCP_TEST_ISSUER] },
      console: { namespace: 'default', temporalUiUrl: 'http://127.0.0.1:8233' },
      // What the demo model answers, offered in an empty chat, as main.ts does with SUGGESTIONS_RULES.
      suggestions: demoSuggestions(parseDemoRules(rules)),
      ...(opts.corsOrigins ? { corsOrigins: opts.corsOrigins } : {}),
      ...(opts.metricsToken ? { metricsToken: opts.metricsToken } : {}),
      ...(opts.tokenSealKey ? { oauthStore: new SealedFileOAuthStore(path.join(dir, 'oauth'), opts.tokenSealKey) } : {}),
    });
    const apiUrl = await app.listen({ host: '127.0.0.1', port: apiPort });
    cleanups.push(() => app.close());

    const system: TestSystem = {
      dir, apiUrl, app, client, temporal, model, worker, taskQueue, notesFile, mcpConfigPath, workerEnv, startWorker, liveHub,
      auditFile, jwtSecret, token,
      turnReads: () => gateway.reads(),
      setPolicy(next) {
        policy = next;
        settings = turnSettingsFrom(hostConfig, next);
      },
      apiLog: () => apiLogText,
      onStop(fn) {
        cleanups.push(fn);
      },
      async stop() {
        for (const c of cleanups.reverse()) await c().catch(() => undefined);
        rmSync(dir, { recursive: true, force: true });
      },
    };
    return system;
  } catch (err) {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}
