import { randomBytes } from 'node:crypto';
import { createSupervisorLog } from './supervisor-log';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ConfigError, loadEnvConfig, loadHostConfig, loadPayloadKeyring } from '../config';
import { crossCheck } from '../config/cross-check';
import { localHostConfig, localPolicy, localPolicyWarning } from '../config/local-mode';
import { loadPolicyFile, PolicyError } from '../config/policy';
import { loadMcpConfig, McpConfigError } from '../mcp/config';
import { reloadableFile } from '../config/reload';
import { isPortFree, type ManagedProcess, spawnManaged, startTemporalDevServer } from './processes';
import { waitUntilReady } from './wait-ready';

const noop = (): void => undefined;

/**
 * `npm start [-- --config my-mcp.json]`: the whole system on one machine. Temporal dev server (state
 * in .data/temporal.db), the demo model unless LLM_BASE_URL is set, the worker (which spawns the stdio
 * MCP servers) and the API. With `--config` (or MCP_CONFIG) naming the user's own servers, the example
 * servers are not started and local-mode defaults replace the school's host config and policy (see
 * src/config/local-mode.ts). Ctrl-C stops everything in reverse order.
 */
const root = path.resolve(__dirname, '..', '..', '..');
const dist = path.join(root, 'dist');
/** The one stream everything here writes to (JSON lines; pretty on a terminal): ./supervisor-log.ts. */
const log = createSupervisorLog({ ...(process.env.LOG_FORMAT ? { format: process.env.LOG_FORMAT } : {}), ...(process.env.LOG_LEVEL ? { level: process.env.LOG_LEVEL } : {}) });

function envPort(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 65535) {
    log.error(`${name} must be a port number, got "${raw}"`);
    process.exit(2);
  }
  return n;
}

/** Fails before anything starts when a port this run needs is taken, naming the variable that moves it. */
async function checkPorts(ports: ReadonlyArray<{ variable: string; port: number; what: string; host?: string }>): Promise<void> {
  const taken: string[] = [];
  for (const { variable, port, what, host } of ports) {
    if (port !== 0 && !(await isPortFree(port, host))) taken.push(`port ${port} (${what}) is in use: set ${variable} to another port`);
  }
  if (taken.length) throw new ConfigError(taken.join('\n'));
}

/** The lines a child prints for the launcher to parse (`API_URL=…`, `WORKER_READY`), not for people. */
const MARKER_LINE = /^(?:[A-Z][A-Z_]*_URL=\S+|WORKER_READY)$/;
/** Leaves out the dev server's banner lines about its HTTP API and /metrics ports (picked only to check it is ready). */
const quietPorts = (onLine: (line: string) => void) => (line: string) => void (/^Temporal (HTTP|Metrics):/.test(line.trim()) || onLine(line));

function prefixed(name: string): (line: string) => void {
  const child = log.child(name);
  return (line) => {
    if (!MARKER_LINE.test(line.trim())) child(line);
  };
}

const EXAMPLE_MCP_CONFIG = path.join(root, 'examples', 'mcp.json');
/** Where this run keeps its state (Temporal's database, the dev JWT secret, the examples' data, the audit log). */
const dataDir = process.env.DATA_DIR ? path.resolve(root, process.env.DATA_DIR) : path.join(root, '.data');

/** `--config <file>`, relative to where `npm start` was typed (npm runs scripts from the package root). */
function configArgument(): string | undefined {
  try {
    const { values } = parseArgs({ args: process.argv.slice(2), options: { config: { type: 'string' } } });
    return values.config === undefined ? undefined : path.resolve(process.env.INIT_CWD ?? process.cwd(), values.config);
  } catch (err) {
    log.error(`${err instanceof Error ? err.message : String(err)}; usage: npm start [-- --config my-mcp.json]`);
    process.exit(2);
  }
}

/** The local-mode files this run wrote for the user's own servers (rewritten when their MCP config changes). */
interface LocalFiles {
  host?: string;
  policy?: string;
}

function writeLocalFiles(files: LocalFiles, servers: readonly string[]): void {
  if (files.host) writeFileSync(files.host, `${JSON.stringify(localHostConfig(servers), null, 2)}\n`);
  if (files.policy) writeFileSync(files.policy, `${JSON.stringify(localPolicy(servers), null, 2)}\n`);
}

/**
 * The user's own servers: local-mode host config and policy unless theirs are named, and a warning
 * that says who may use what. Returns the lines to print and the files written.
 */
function prepareOwnServers(env: NodeJS.ProcessEnv, mcpConfig: string): { lines: string[]; files: LocalFiles } {
  const servers = Object.keys(loadMcpConfig(mcpConfig, env).mcpServers);
  const dir = path.join(dataDir, 'local');
  mkdirSync(dir, { recursive: true });
  const lines = [`MCP servers: ${mcpConfig} (${servers.join(', ') || 'none'}); the example servers are not started`];
  const files: LocalFiles = {};
  if (!env.HOST_CONFIG) {
    env.HOST_CONFIG = files.host = path.join(dir, 'host.json');
    lines.push(`host config: ${env.HOST_CONFIG} (no context to read; set HOST_CONFIG for your own)`);
  }
  if (!env.POLICY_FILE) {
    env.POLICY_FILE = files.policy = path.join(dir, 'policy.json');
    lines.push(localPolicyWarning(servers));
  }
  writeLocalFiles(files, servers);
  return { lines, files };
}

/**
 * Edits while the stack runs: the worker reloads the MCP config and the API the host config and policy
 * by themselves. Here, the local-mode files follow the user's MCP config, and the names are checked
 * across the three files again.
 */
function followEdits(env: NodeJS.ProcessEnv, files: LocalFiles): void {
  const cfg = loadEnvConfig(env);
  if (cfg.CONFIG_POLL_MS === 0) return;
  // The worker and the API log their own reloads; this only adds what they cannot see.
  const logger = { info: noop, warn: (o: { reason?: string }, msg: string) => log.warn(`${msg}: ${o.reason ?? ''}`) };
  const recheck = () => {
    try {
      for (const problem of crossCheckFiles(env)) log.warn(problem);
    } catch {
      // A file that does not load: the process that reads it says why.
    }
  };
  reloadableFile({
    file: cfg.MCP_CONFIG,
    what: 'MCP config',
    load: (file) => Object.keys(loadMcpConfig(file, env).mcpServers),
    apply: (servers) => {
      writeLocalFiles(files, servers);
      if (files.policy) log.info(localPolicyWarning(servers));
      recheck();
    },
    logger,
    pollMs: cfg.CONFIG_POLL_MS,
  });
  for (const [file, what] of [[cfg.HOST_CONFIG, 'host config'], [cfg.POLICY_FILE, 'policy']] as const) {
    if (file === files.host || file === files.policy) continue;
    reloadableFile({ file, what, load: (f) => readFileSync(f, 'utf8'), apply: recheck, logger, pollMs: cfg.CONFIG_POLL_MS });
  }
}

/** Names in the host config and policy that match no configured server, one warning each. */
function crossCheckFiles(env: NodeJS.ProcessEnv): string[] {
  const cfg = loadEnvConfig(env);
  return crossCheck({
    servers: Object.keys(loadMcpConfig(cfg.MCP_CONFIG, env).mcpServers),
    host: loadHostConfig(cfg.HOST_CONFIG),
    policy: loadPolicyFile(cfg.POLICY_FILE),
    hostSource: cfg.HOST_CONFIG,
    policySource: cfg.POLICY_FILE,
  });
}

async function main(): Promise<void> {
  const ownConfig = configArgument();
  const procs: ManagedProcess[] = [];
  let stopping = false;
  const stopAll = async (code: number) => {
    if (stopping) return;
    stopping = true;
    for (const p of [...procs].reverse()) await p.stop();
    process.exit(code);
  };
  // `on`, not `once`: npm and terminals may deliver a signal twice, and a second default-handled
  // SIGTERM would kill us mid-shutdown and orphan the children.
  process.on('SIGINT', () => void stopAll(0));
  process.on('SIGTERM', () => void stopAll(0));
  process.on('SIGHUP', () => void stopAll(0));
  // npm does not forward SIGTERM to its child: if whoever started us goes away, shut down too.
  const parent = process.ppid;
  setInterval(() => {
    if (process.ppid !== parent) void stopAll(0);
  }, 1_000).unref();
  // Last resort if we die anyway: no child outlives us.
  process.on('exit', () => {
    for (const p of procs) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
  });
  const watch = (p: ManagedProcess) => {
    procs.push(p);
    void p.exited.then((code) => {
      if (stopping) return;
      log.error(`${p.name} exited unexpectedly (code ${code}); stopping everything.`);
      void stopAll(1);
    });
  };

  try {
    const env: NodeJS.ProcessEnv = { ...process.env };
    if (ownConfig) env.MCP_CONFIG = ownConfig;
    env.AUDIT_LOG ??= path.join(dataDir, 'audit.jsonl');
    const own = env.MCP_CONFIG !== undefined && env.MCP_CONFIG !== '' && path.resolve(root, env.MCP_CONFIG) !== EXAMPLE_MCP_CONFIG;
    const local = own ? prepareOwnServers(env, path.resolve(root, env.MCP_CONFIG as string)) : { lines: [], files: {} };
    const apiHost = env.API_HOST || '127.0.0.1';
    await checkPorts([
      ...(!env.TEMPORAL_ADDRESS
        ? [
            { variable: 'TEMPORAL_PORT', port: envPort('TEMPORAL_PORT', 7233), what: 'Temporal dev server; or set TEMPORAL_ADDRESS to use a running Temporal' },
            { variable: 'TEMPORAL_UI_PORT', port: envPort('TEMPORAL_UI_PORT', 8233), what: 'Temporal web UI' },
          ]
        : []),
      ...(wantsDemoModel(env) ? [{ variable: 'DEMO_MODEL_PORT', port: envPort('DEMO_MODEL_PORT', 4010), what: 'demo model' }] : []),
      ...(!own && !env.PAYMENTS_SERVER_URL ? [{ variable: 'PAYMENTS_PORT', port: envPort('PAYMENTS_PORT', 4020), what: 'example payments server' }] : []),
      { variable: 'API_PORT', port: envPort('API_PORT', 3000), what: 'API', host: apiHost },
    ]);

    // Payloads are sealed when keys are configured (off by default here: a newcomer's Temporal UI would
    // show ciphertext until they sign in); the dev UI then reads them decoded through the API's codec
    // server (docs/decisions/0019-payload-encryption.md).
    const keyring = loadPayloadKeyring({ PAYLOAD_KEYS: env.PAYLOAD_KEYS || undefined, PAYLOAD_KEY_FILE: env.PAYLOAD_KEY_FILE || undefined });
    const apiPortForCodec = envPort('API_PORT', 3000);
    const loopback = apiHost === '0.0.0.0' || apiHost === '::' ? '127.0.0.1' : apiHost;
    const codecEndpoint = keyring && apiPortForCodec !== 0 ? `http://${loopback.includes(':') ? `[${loopback}]` : loopback}:${apiPortForCodec}/v1/codec` : undefined;
    const payloadNote = keyring
      ? `Payloads: sealed under key ${keyring.keys[0]?.id ?? ''}; the Temporal UI decodes them through ${codecEndpoint ?? 'the API at /v1/codec'} for an admin signed in to the console (README: Payload encryption)`
      : 'Payloads: stored in clear in Temporal (set PAYLOAD_KEYS to encrypt them; README: Payload encryption)';

    let uiUrl = 'n/a (external Temporal)';
    if (!env.TEMPORAL_ADDRESS) {
      const cli = env.TEMPORAL_CLI;
      if (!cli) throw new Error('TEMPORAL_CLI is not set; run through `npm start`, which provides it');
      mkdirSync(dataDir, { recursive: true });
      const dbFile = path.join(dataDir, 'temporal.db');
      const temporal = await startTemporalDevServer({
        cli,
        dbFile,
        // Registered with a new database only (on an existing one the server warns they exist).
        searchAttributes: !existsSync(dbFile),
        // JSON into the one stream. Errors only by default: at Ctrl-C the dev server's own internal
        // clients warn about the connections its shutdown closes (TEMPORAL_LOG_LEVEL=warn shows them).
        logFormat: 'json',
        logLevel: (['debug', 'info', 'warn', 'error'] as const).find((l) => l === env.TEMPORAL_LOG_LEVEL) ?? 'error',
        port: envPort('TEMPORAL_PORT', 7233),
        uiPort: envPort('TEMPORAL_UI_PORT', 8233),
        ...(codecEndpoint ? { uiCodecEndpoint: codecEndpoint } : {}),
        // Its own shutdown (after everything else stopped) is reported at debug level.
        onLine: quietPorts(log.child('temporal', () => stopping)),
      });
      watch(temporal.proc);
      env.TEMPORAL_ADDRESS = temporal.address;
      uiUrl = temporal.uiUrl ?? uiUrl;
      if (temporal.uiUrl) env.TEMPORAL_UI_URL ??= temporal.uiUrl;
    }

    // Local use signs tokens with a dev secret kept (owner-readable only) in the data directory; the
    // console then offers one-click sign-in as the demo users (never with a secret or JWKS of yours).
    if (!env.JWT_SECRET && !env.JWT_JWKS_URL) {
      env.CONSOLE_DEMO_USERS ??= 'on';
      const file = path.join(dataDir, 'dev-jwt-secret');
      mkdirSync(path.dirname(file), { recursive: true });
      if (!existsSync(file)) writeFileSync(file, randomBytes(32).toString('hex'), { mode: 0o600 });
      env.JWT_SECRET = readFileSync(file, 'utf8').trim();
    }

    // OAuth tokens of MCP servers (and forwarded user tokens) are sealed with a key only this machine
    // holds: a dev key kept beside the JWT secret unless one is configured.
    if (!env.TOKEN_SEAL_KEY) {
      const file = path.join(dataDir, 'dev-seal-key');
      mkdirSync(path.dirname(file), { recursive: true });
      if (!existsSync(file)) writeFileSync(file, randomBytes(32).toString('hex'), { mode: 0o600 });
      env.TOKEN_SEAL_KEY = readFileSync(file, 'utf8').trim();
    }
    env.OAUTH_STORE_DIR ??= path.join(dataDir, 'oauth');
    // Payloads above CLAIM_CHECK_THRESHOLD_BYTES, stored by reference; the worker and the API share it.
    env.CLAIM_CHECK_DIR ??= path.join(dataDir, 'claim-check');
    // Where the worker records its running tool calls, so a successor sees them if it dies.
    env.WORKER_LIVENESS_DIR ??= path.join(dataDir, 'workers');

    let modelNote = `LLM: ${env.LLM_PROVIDER ?? 'openai'} ${env.LLM_BASE_URL ?? "(the provider's endpoint)"} (model ${env.LLM_MODEL ?? 'unset: LLM_MODEL is required'})`;
    // A model endpoint of the user's own is checked at start (URL, key, model name), so a mistake
    // stops here with a clear line instead of in the first turn; LLM_PROBE=off skips it.
    if (env.LLM_BASE_URL) env.LLM_PROBE ??= 'on';
    if (wantsDemoModel(env)) {
      const rules = env.DEMO_MODEL_RULES ?? path.join(root, 'examples/demo-model/rules.json');
      const { proc, match } = await spawnManaged(
        'demo-model',
        process.execPath,
        [
          path.join(dist, 'src/cli/demo-model.js'),
          '--rules', rules,
          '--port', String(envPort('DEMO_MODEL_PORT', 4010)),
        ],
        { env, readyLine: /^DEMO_MODEL_URL=(\S+)/, onLine: prefixed('demo-model') },
      );
      watch(proc);
      env.LLM_BASE_URL = match?.[1];
      env.LLM_MODEL = 'demo-model';
      // The console offers what the demo model answers (GET /v1/suggestions).
      env.SUGGESTIONS_RULES = rules;
      modelNote = `LLM: the scripted DEMO model at ${env.LLM_BASE_URL} (not a real LLM; set LLM_BASE_URL to use one)`;
    }

    // The example payments server speaks Streamable HTTP, so it runs beside the worker, not under it.
    if (!own && !env.PAYMENTS_SERVER_URL) {
      const { proc, match } = await spawnManaged(
        'payments',
        process.execPath,
        [
          path.join(dist, 'examples/servers/school/payments-server.js'),
          '--http', '--port', String(envPort('PAYMENTS_PORT', 4020)),
          '--data', path.join(dataDir, 'school.json'),
        ],
        { env, cwd: root, readyLine: /^PAYMENTS_SERVER_URL=(\S+)/, onLine: prefixed('payments') },
      );
      watch(proc);
      env.PAYMENTS_SERVER_URL = match?.[1];
    }

    for (const line of local.lines) log.info(line);
    for (const problem of crossCheckFiles(env)) log.warn(problem);

    // Live text goes from the worker's LLM calls straight to the API (not through history); the
    // secret is per run unless one is configured.
    const apiPort = envPort('API_PORT', 3000);
    env.LIVE_SECRET ??= randomBytes(24).toString('hex');
    if (!env.LIVE_PUSH_URL) {
      const host = !env.API_HOST || env.API_HOST === '0.0.0.0' || env.API_HOST === '::' ? '127.0.0.1' : env.API_HOST;
      env.LIVE_PUSH_URL = `http://${host.includes(':') ? `[${host}]` : host}:${apiPort}/internal/live`;
    }

    // The API first: the worker pushes live text and its reports to it from its first moment (and Ctrl-C
    // then stops the worker before the API, which still receives the worker's last pushes).
    const api = await spawnManaged('api', process.execPath, [path.join(dist, 'src/api/main.js')], {
      env: { ...env, API_PORT: String(apiPort) },
      cwd: root,
      readyLine: /^API_URL=(\S+)/,
      onLine: prefixed('api'),
    });
    watch(api.proc);
    const apiUrl = api.match?.[1] ?? '';

    const worker = await spawnManaged('worker', process.execPath, [path.join(dist, 'src/worker.js')], {
      env,
      cwd: root,
      readyLine: /^WORKER_READY$/,
      readyTimeoutMs: 60_000,
      onLine: prefixed('worker'),
    });
    watch(worker.proc);
    // "Up" means a turn can run: the worker has connected its servers (src/cli/wait-ready.ts).
    const readiness = await waitUntilReady(apiUrl, { timeoutMs: 120_000, onPending: (pending) => log.info(`waiting until ready: ${pending.join('; ')}`) });
    if (!readiness.ready) log.warn(`not ready after 120 s; still pending: ${readiness.pending.join('; ')} (GET ${apiUrl}/healthz/ready tells when)`);

    const tryText = JSON.stringify({ text: own ? 'What can you do?' : "Process payment for student Bob's invoice" }).replace(/'/g, '\\u0027');
    const tryCommand = `curl -s -X POST ${apiUrl}/v1/sessions/demo/messages -H "authorization: Bearer $TOKEN" -H 'content-type: application/json' -d '${tryText}'`;
    if (log.pretty) {
      process.stdout.write(
        [
          '',
          'Durable MCP host is up.',
          `  API:          ${apiUrl}`,
          `  Console:      ${apiUrl}/console/   (API docs: ${apiUrl}/docs)`,
          `  Temporal UI:  ${uiUrl}`,
          `  ${modelNote}`,
          `  ${payloadNote}`,
          '',
          'Every /v1 call needs a token. Mint one for a demo role (admin, teacher, student):',
          '  TOKEN=$(npm run -s token -- --role admin)',
          '',
          'Try:',
          `  ${tryCommand}`,
          `  curl -N -H "authorization: Bearer $TOKEN" ${apiUrl}/v1/turns/<turnId>/events`,
          '',
          `The host is also an MCP server: ${apiUrl}/mcp (Streamable HTTP, Authorization: Bearer $TOKEN).`,
          `  VS Code (.vscode/mcp.json): ${JSON.stringify({ servers: { 'durable-host': { type: 'http', url: `${apiUrl}/mcp`, headers: { Authorization: 'Bearer <token>' } } } })}`,
          `  Clients that spawn a process: DMH_TOKEN=<token> node ${path.join(dist, 'src/cli/mcp-bridge.js')} --url ${apiUrl}/mcp`,
          '',
          'Press Ctrl-C to stop.',
          '',
        ].join('\n'),
      );
    } else {
      log.info('Durable MCP host is up', {
        api: apiUrl,
        console: `${apiUrl}/console/`,
        docs: `${apiUrl}/docs`,
        temporalUi: uiUrl,
        llm: modelNote,
        payloads: payloadNote.replace(/^Payloads:\s+/, ''),
        token: 'TOKEN=$(npm run -s token -- --role admin)',
        try: tryCommand,
        mcp: `${apiUrl}/mcp`,
      });
    }
    followEdits(env, local.files);
  } catch (err) {
    log.error(err instanceof Error ? err.message : String(err));
    const badConfig = err instanceof ConfigError || err instanceof McpConfigError || err instanceof PolicyError;
    await stopAll(badConfig ? 2 : 1);
  }
}

void main();

/** No model configured (no endpoint, no provider, no model name): the scripted demo model stands in. */
function wantsDemoModel(env: NodeJS.ProcessEnv): boolean {
  return !env.LLM_BASE_URL && !env.LLM_PROVIDER && !env.LLM_MODEL;
}
