/**
 * The official MCP conformance suite in server mode (`@modelcontextprotocol/conformance` 0.1.16,
 * protocol 2025-11-25) against the host's own /mcp on a running system (Temporal, worker, API). The
 * runner connects without credentials, so a loopback proxy adds a student's bearer token
 * (./bearer-proxy.ts) and forwards everything else untouched.
 *
 * Most server scenarios exercise fixture tools, resources and prompts a test server must define
 * (`test_simple_text`, `test://static-text`, ...): the host offers its own surface instead, so those
 * cannot apply. ./server-not-applicable.json lists each with the reason (and the scenarios the runner's
 * default suite leaves out); every other scenario must
 * pass every check, and a listed one that starts passing fails the test (take it off the list).
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT, startSystem, type TestSystem } from '../helpers/system';
import { type BearerProxy, startBearerProxy } from './bearer-proxy';

const RUNNER = path.join(ROOT, 'node_modules/@modelcontextprotocol/conformance/dist/index.js');
const SPEC_VERSION = '2025-11-25';
const LISTS = JSON.parse(readFileSync(path.join(__dirname, 'server-not-applicable.json'), 'utf8')) as {
  notApplicable: Record<string, string>;
  notInActiveSuite: Record<string, string>;
};
const NOT_APPLICABLE = LISTS.notApplicable;
const PENDING = LISTS.notInActiveSuite;

interface Check {
  id: string;
  status: 'SUCCESS' | 'FAILURE' | 'WARNING' | 'INFO' | 'SKIPPED';
  errorMessage?: string;
}

const node22 = (): string =>
  process.env.NODE22 ?? execFileSync('bash', [path.join(ROOT, 'scripts/ensure-node22.sh')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();

function serverScenarios(): string[] {
  const listing = execFileSync(node22(), [RUNNER, 'list'], { encoding: 'utf8' });
  const server = listing.slice(listing.indexOf('Server scenarios'), listing.indexOf('Client scenarios'));
  return [...server.matchAll(/^\s+- (\S+) \[([^\]]*)\]/gm)].filter((m) => m[2]?.split(',').includes(SPEC_VERSION)).map((m) => m[1] as string);
}

let sys: TestSystem;
let proxy: BearerProxy;
let outDir: string;
const results = new Map<string, Check[]>();
let runnerOutput = '';

beforeAll(async () => {
  sys = await startSystem();
  proxy = await startBearerProxy(sys.apiUrl, await sys.token('student'));
  outDir = mkdtempSync(path.join(os.tmpdir(), 'dmh-conformance-server-'));
  const args = [RUNNER, 'server', '--url', `${proxy.url}/mcp`, '--spec-version', SPEC_VERSION, '-o', outDir];
  await new Promise<void>((resolve, reject) => {
    const child = spawn(node22(), args, { cwd: outDir, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.on('data', (d: Buffer) => (runnerOutput += d.toString()));
    child.stderr.on('data', (d: Buffer) => (runnerOutput += d.toString()));
    child.on('error', reject);
    // Scenarios that do not apply fail, so the runner exits non-zero: the checks below judge.
    child.on('exit', () => resolve());
  });
  for (const dir of readdirSync(outDir)) {
    try {
      results.set(dir.replace(/^server-/, '').replace(/-\d{4}-\d{2}-\d{2}T.*$/, ''), JSON.parse(readFileSync(path.join(outDir, dir, 'checks.json'), 'utf8')) as Check[]);
    } catch {
      // not a scenario's directory
    }
  }
}, 300_000);

afterAll(async () => {
  await proxy?.close();
  await sys?.stop();
  if (outDir) rmSync(outDir, { recursive: true, force: true });
});

const scenarios = serverScenarios();

test('the runner lists the server scenarios of 2025-11-25, and the list of those that do not apply names only real ones', () => {
  expect(scenarios.length).toBeGreaterThanOrEqual(30);
  expect([...Object.keys(NOT_APPLICABLE), ...Object.keys(PENDING)].filter((s) => !scenarios.includes(s))).toEqual([]);
});

test.each(Object.keys(PENDING))('server scenario %s is not in the runner\'s active suite (when it is, judge it)', (scenario) => {
  expect(results.has(scenario)).toBe(false);
});

test.each(scenarios.filter((s) => !(s in NOT_APPLICABLE) && !(s in PENDING)))('server scenario %s: every check passes', (scenario) => {
  const checks = results.get(scenario);
  if (!checks) throw new Error(`no results for ${scenario}; runner output:\n${runnerOutput.slice(-4000)}`);
  // At least one check that passed: a scenario whose checks were all skipped proves nothing.
  expect(checks.map((c) => c.status)).toContain('SUCCESS');
  // As the runner counts: a FAILURE or a WARNING fails the scenario.
  expect(checks.filter((c) => c.status === 'FAILURE' || c.status === 'WARNING')).toEqual([]);
});

test.each(Object.keys(NOT_APPLICABLE))('server scenario %s does not apply to the host (see the reason in server-not-applicable.json)', (scenario) => {
  const checks = results.get(scenario) ?? [];
  // Still failing: the reason holds. Passing now: the list is stale.
  expect(checks.some((c) => c.status === 'FAILURE' || c.status === 'WARNING')).toBe(true);
});
