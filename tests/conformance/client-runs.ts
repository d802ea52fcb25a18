/**
 * Runs the official conformance suite's client scenarios against tests/conformance/client.ts, one
 * runner process per scenario, a few at a time (decision 0027).
 *
 * The runner's own `--suite`/`--requirements` modes start every scenario at once (48 client
 * processes, each loading both SDKs); on a loaded machine that makes connect deadlines, not the
 * client, decide the result. Run on one scenario (`--scenario`), the runner judges it as strictly as
 * it judges anything: a scenario passes when the runner exits 0, i.e. no FAILURE, no WARNING, the
 * client neither timed out nor exited with an error the scenario does not expect.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DIST, ROOT } from '../helpers/system';

export const CLIENT = path.join(DIST, 'tests/conformance/client.js');

export interface Check {
  id: string;
  name: string;
  status: 'SUCCESS' | 'FAILURE' | 'WARNING' | 'INFO' | 'SKIPPED';
  description?: string;
  errorMessage?: string;
}

/** One scenario to run; `specVersion` is the wire it runs at. */
export interface ScenarioRun {
  scenario: string;
  specVersion: string;
  /** Run even where the runner thinks the scenario does not apply at `specVersion` (0.2's `--force`). */
  force?: boolean;
}

export interface ScenarioResult {
  /** The runner's verdict on the scenario alone (its exit code was 0). */
  passed: boolean;
  exitCode: number | null;
  checks: Check[];
  /** The runner's and the client's output, for a failure message. */
  output: string;
}

export const runKey = (run: ScenarioRun): string => `${run.scenario}@${run.specVersion}`;

export const node22 = (): string =>
  process.env.NODE22 ?? execFileSync('bash', [path.join(ROOT, 'scripts/ensure-node22.sh')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();

export const runnerPath = (pkg: 'conformance' | 'conformance-next'): string => path.join(ROOT, 'node_modules/@modelcontextprotocol', pkg, 'dist/index.js');

/** A scenario as `list` prints it: its name and the revisions (or `extension`) it applies to. */
export interface ListedScenario {
  scenario: string;
  tags: string[];
}

/** The client scenarios `list` prints (with `--requirements`: the required ones, then the client ones it runs without scoring). */
export function listClientScenarios(runner: string, args: string[] = []): { listed: ListedScenario[]; notScored: string[] } {
  const listing = execFileSync(node22(), [runner, 'list', ...args], { encoding: 'utf8' });
  const from = listing.indexOf('Client scenarios');
  const client = listing.slice(from, listing.indexOf('\n\n', from) === -1 ? undefined : listing.indexOf('\n\n', from));
  const listed = [...client.matchAll(/^\s+- (\S+)(?: \[([^\]]*)\])?$/gm)].map((m) => ({ scenario: m[1] as string, tags: m[2]?.split(',') ?? [] }));
  const notScored = [...listing.matchAll(/^\s+- (\S+) \[client\]$/gm)].map((m) => m[1] as string);
  return { listed, notScored };
}

/** The wire a scenario runs at when the runner picks it (`--suite`): 2026-07-28 for one introduced there, else 2025-11-25. */
export const defaultWire = (tags: string[]): string => (tags.length === 1 && tags[0] === '2026-07-28' ? '2026-07-28' : '2025-11-25');

function readChecks(dir: string): Check[] {
  // The runner writes `<dir>/<scenario>-<timestamp>/checks.json`, an `auth/` scenario one level down.
  const found: Check[] = [];
  const walk = (d: string): void => {
    for (const entry of readdirSync(d)) {
      const p = path.join(d, entry);
      if (statSync(p).isDirectory()) walk(p);
      else if (entry === 'checks.json') found.push(...(JSON.parse(readFileSync(p, 'utf8')) as Check[]));
    }
  };
  if (existsSync(dir)) walk(dir);
  return found;
}

function runOne(runner: string, run: ScenarioRun, opts: RunOptions): Promise<ScenarioResult> {
  const outDir = mkdtempSync(path.join(opts.outRoot, 'scenario-'));
  const args = [runner, 'client', '--command', `${process.execPath} ${opts.client ?? CLIENT}`, '--scenario', run.scenario, '--spec-version', run.specVersion];
  if (run.force) args.push('--force');
  args.push('--timeout', String(opts.timeoutMs), '-o', outDir);
  return new Promise((resolve, reject) => {
    let output = '';
    const child = spawn(node22(), args, { cwd: outDir, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...opts.env } });
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.on('error', reject);
    child.on('exit', (code) => {
      try {
        resolve({ passed: code === 0, exitCode: code, checks: readChecks(outDir), output });
      } catch (error) {
        reject(error instanceof Error ? error : new Error(String(error)));
      }
    });
  });
}

export interface RunOptions {
  /** Scenarios running at once. */
  concurrency: number;
  /** The runner's deadline for the client process of one scenario. */
  timeoutMs: number;
  outRoot: string;
  /** The client under test (default: ./client.ts, the worker's pool alone). */
  client?: string;
  /** Set for the runner and so for the client it starts. */
  env?: Record<string, string>;
}

export const defaultRunOptions = (): RunOptions => ({
  concurrency: Math.max(1, Number(process.env.CONFORMANCE_CONCURRENCY ?? 3) || 3),
  timeoutMs: 120_000,
  outRoot: mkdtempSync(path.join(os.tmpdir(), 'dmh-conformance-client-')),
});

/** Runs each distinct scenario and wire once, `opts.concurrency` at a time. */
export async function runScenarios(runner: string, runs: ScenarioRun[], opts: RunOptions): Promise<Map<string, ScenarioResult>> {
  const pending = [...new Map(runs.map((r) => [runKey(r), r])).values()];
  const results = new Map<string, ScenarioResult>();
  const worker = async (): Promise<void> => {
    for (let run = pending.shift(); run; run = pending.shift()) results.set(runKey(run), await runOne(runner, run, opts));
  };
  await Promise.all(Array.from({ length: Math.min(opts.concurrency, pending.length) }, worker));
  return results;
}

/** What a failed scenario's runner said, for the test's message. */
export function describeFailure(result: ScenarioResult | undefined): string {
  if (!result) return 'no result';
  const bad = result.checks.filter((c) => c.status === 'FAILURE' || c.status === 'WARNING');
  const lines = bad.map((c) => `${c.status} ${c.id}: ${c.errorMessage ?? c.description ?? ''}`);
  return [`runner exit code ${String(result.exitCode)}`, ...lines, result.output.slice(-3000)].join('\n');
}
