import { type ChildProcess, spawn } from 'node:child_process';
import { createServer, Socket } from 'node:net';
import { createInterface } from 'node:readline';

/**
 * Starting and stopping the system's real processes (Temporal dev server, worker, API, demo model),
 * shared by `npm start` and the test suites so both exercise the same code.
 */

export async function freePort(host = '127.0.0.1'): Promise<number> {
  return await new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, host, () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/** Whether `port` can be listened on now (false when another process holds it). */
export async function isPortFree(port: number, host = '127.0.0.1'): Promise<boolean> {
  return await new Promise((resolve) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', () => resolve(false));
    srv.listen(port, host, () => srv.close(() => resolve(true)));
  });
}

export async function waitForPort(host: string, port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = new Socket();
      socket.setTimeout(500);
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('timeout', () => {
        socket.destroy();
        resolve(false);
      });
      socket.once('error', () => resolve(false));
      socket.connect(port, host);
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`nothing listened on ${host}:${port} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export interface ManagedProcess {
  readonly name: string;
  readonly child: ChildProcess;
  readonly pid: number;
  /** Everything the process printed so far (stdout and stderr), for diagnostics. */
  output(): string;
  /** Resolves with the exit code (or null when killed by a signal). */
  readonly exited: Promise<number | null>;
  /** SIGTERM, then SIGKILL after the grace period. */
  stop(graceMs?: number): Promise<void>;
  /** SIGKILL now: what a crash looks like. */
  kill(): Promise<void>;
}

export interface SpawnOptions {
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Resolve once a line matches (stdout or stderr); reject if the process exits first. */
  readyLine?: RegExp;
  readyTimeoutMs?: number;
  /** Called for every output line (e.g. to forward logs with a prefix). */
  onLine?: (line: string) => void;
  /** Keep at most this many characters of output in memory. */
  keepOutputChars?: number;
}

export async function spawnManaged(
  name: string,
  command: string,
  args: readonly string[],
  opts: SpawnOptions = {},
): Promise<{ proc: ManagedProcess; match: RegExpMatchArray | null }> {
  const child = spawn(command, args, { env: opts.env ?? process.env, cwd: opts.cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  const keep = opts.keepOutputChars ?? 200_000;
  let out = '';
  let onReadyLine: ((line: string) => void) | undefined;
  for (const stream of [child.stdout, child.stderr]) {
    if (!stream) continue;
    const rl = createInterface({ input: stream });
    rl.on('line', (line) => {
      out += `${line}\n`;
      if (out.length > keep) out = out.slice(out.length - keep);
      opts.onLine?.(line);
      onReadyLine?.(line);
    });
  }
  const exited = new Promise<number | null>((resolve) => {
    child.once('exit', (code) => resolve(code));
    child.once('error', () => resolve(-1));
  });
  if (child.pid === undefined) {
    await exited;
    throw new Error(`${name}: could not start ${command}`);
  }
  const pid = child.pid;
  const proc: ManagedProcess = {
    name,
    child,
    pid,
    output: () => out,
    exited,
    async stop(graceMs = 5_000) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    },
    async kill() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGKILL');
      await exited;
    },
  };

  if (!opts.readyLine) return { proc, match: null };
  const readyLine = opts.readyLine;
  const timeoutMs = opts.readyTimeoutMs ?? 30_000;
  try {
    const match = await new Promise<RegExpMatchArray>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${name} was not ready within ${timeoutMs} ms`)), timeoutMs);
      onReadyLine = (line) => {
        const m = line.match(readyLine);
        if (m) {
          clearTimeout(timer);
          onReadyLine = undefined;
          resolve(m);
        }
      };
      void exited.then((code) => {
        clearTimeout(timer);
        reject(new Error(`${name} exited with code ${code} before it was ready`));
      });
    });
    return { proc, match };
  } catch (err) {
    await proc.stop(1_000);
    const tail = out.split('\n').slice(-25).join('\n');
    throw new Error(`${(err as Error).message}\n--- last output of ${name} ---\n${tail}`);
  }
}

export interface TemporalDevServer {
  address: string;
  uiUrl?: string;
  proc: ManagedProcess;
}

/**
 * Dynamic config of the embedded dev server (see docs/decisions/0006). Its task queue processors poll
 * for new work at a limited rate, which puts every hand-off (workflow task, activity task, timer) on a
 * ~50 ms grid; one process serving one machine can afford to poll as fast as work arrives.
 */
const PROCESSORS = ['transfer', 'timer', 'visibility'] as const;
/**
 * `DMH_DEV_SERVER_TUNING` picks the processors to speed up (comma-separated; default all; `off`: the dev
 * server's own defaults), for the bench to measure what each is worth.
 */
function tunedProcessors(setting = process.env.DMH_DEV_SERVER_TUNING): string[] {
  if (setting === 'off') return [];
  const picked = setting ? setting.split(',').map((s) => s.trim()) : [...PROCESSORS];
  const unknown = picked.filter((p) => !(PROCESSORS as readonly string[]).includes(p));
  if (unknown.length) throw new Error(`DMH_DEV_SERVER_TUNING: unknown ${unknown.join(', ')}; use off or any of ${PROCESSORS.join(', ')}`);
  return picked;
}
export const DEV_SERVER_DYNAMIC_CONFIG: Readonly<Record<string, number>> = Object.freeze(
  Object.fromEntries(tunedProcessors().flatMap((p) => [[`history.${p}ProcessorMaxPollRPS`, 2000], [`history.${p}ProcessorMaxPollHostRPS`, 2000]])),
);

/**
 * A port found free can be taken by another process before the dev server binds it; the dev server then
 * exits at once, and a mere connect to the port would reach that other process. Ready means the dev
 * server's own HTTP API answers for the `default` namespace and its /metrics answers, so a server that
 * exited fails the start, where a caller can retry on fresh ports.
 */
async function devServerReady(host: string, ports: { grpcPort: number; httpPort: number; metricsPort: number }, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  await waitForPort(host, ports.grpcPort, timeoutMs);
  const urls = [`http://${host}:${ports.httpPort}/api/v1/namespaces/default`, `http://${host}:${ports.metricsPort}/metrics`];
  for (const url of urls) {
    for (;;) {
      const status = await fetch(url, { signal: AbortSignal.timeout(5_000) }).then((r) => (void r.body?.cancel(), r.status), () => 0);
      if (status === 200) break;
      if (Date.now() > deadline) throw new Error(`temporal dev server not ready after ${timeoutMs} ms: ${url} answered ${status || 'nothing'}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

/** `temporal server start-dev` with its state in an SQLite file, so it survives restarts. */
export async function startTemporalDevServer(opts: {
  cli: string;
  dbFile: string;
  port: number;
  uiPort?: number;
  host?: string;
  onLine?: (line: string) => void;
  /** Defaults to DEV_SERVER_DYNAMIC_CONFIG. */
  dynamicConfig?: Readonly<Record<string, number | string | boolean>>;
  /** The server's own log: level (default warn) and format (default text). */
  logLevel?: 'debug' | 'info' | 'warn' | 'error';
  logFormat?: 'text' | 'json';
  /**
   * Register the project's search attributes (default true). A database that has them already makes
   * the server warn that they exist; the API registers any that are missing anyway.
   */
  searchAttributes?: boolean;
  /** The web UI's remote codec endpoint (the API's codec server), so it shows payloads decoded. */
  uiCodecEndpoint?: string;
  /** The HTTP API's and the server's /metrics ports; default: free ports. */
  httpPort?: number;
  metricsPort?: number;
}): Promise<TemporalDevServer> {
  const host = opts.host ?? '127.0.0.1';
  const httpPort = opts.httpPort ?? (await freePort(host));
  const metricsPort = opts.metricsPort ?? (await freePort(host));
  const args = [
    'server', 'start-dev',
    '--ip', host,
    '--port', String(opts.port),
    '--http-port', String(httpPort),
    '--metrics-port', String(metricsPort),
    '--db-filename', opts.dbFile,
    ...(opts.searchAttributes === false ? [] : ['--search-attribute', 'SessionId=Keyword', '--search-attribute', 'UserId=Keyword', '--search-attribute', 'TenantId=Keyword']),
    '--log-level', opts.logLevel ?? 'warn',
    ...(opts.logFormat ? ['--log-format', opts.logFormat] : []),
    ...Object.entries(opts.dynamicConfig ?? DEV_SERVER_DYNAMIC_CONFIG).flatMap(([key, value]) => ['--dynamic-config-value', `${key}=${JSON.stringify(value)}`]),
    ...(opts.uiPort ? ['--ui-port', String(opts.uiPort)] : ['--headless']),
    ...(opts.uiPort && opts.uiCodecEndpoint ? ['--ui-codec-endpoint', opts.uiCodecEndpoint] : []),
  ];
  const { proc } = await spawnManaged('temporal', opts.cli, args, { onLine: opts.onLine });
  try {
    await Promise.race([
      devServerReady(host, { grpcPort: opts.port, httpPort, metricsPort }, 60_000),
      proc.exited.then((code) => {
        throw new Error(`temporal dev server exited with code ${code}:\n${proc.output().slice(-2000)}`);
      }),
    ]);
  } catch (err) {
    await proc.stop(1_000);
    throw err;
  }
  return { address: `${host}:${opts.port}`, uiUrl: opts.uiPort ? `http://${host}:${opts.uiPort}` : undefined, proc };
}
