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

interface Lists {
  notApplicable: Record<string, string>;
  notInActiveSuite: Record<string, string>;
}

/** Each protocol revision with the runner release that judges it, and its list of scenarios that do not apply. */
const SUITES = [
  // 0.1.16's default suite of the revision.
  { spec: '2025-11-25', runner: 'conformance', select: ['--spec-version', '2025-11-25'], lists: 'server-not-applicable.json' },
  // The pre-release's frozen requirement set of 2026-07-28.
  { spec: '2026-07-28', runner: 'conformance-next', select: ['--requirements', '2026-07-28'], lists: 'server-not-applicable-2026.json' },
].map((s) => ({
  ...s,
  runner: path.join(ROOT, 'node_modules/@modelcontextprotocol', s.runner, 'dist/index.js'),
  lists: JSON.parse(readFileSync(path.join(__dirname, s.lists), 'utf8')) as Lists,
}));

interface Check {
  id: string;
  status: 'SUCCESS' | 'FAILURE' | 'WARNING' | 'INFO' | 'SKIPPED';
  errorMessage?: string;
}

const node22 = (): string =>
  process.env.NODE22 ?? execFileSync('bash', [path.join(ROOT, 'scripts/ensure-node22.sh')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();

function serverScenarios(runner: string, spec: string): string[] {
  const listing = execFileSync(node22(), [runner, 'list'], { encoding: 'utf8' });
  const server = listing.slice(listing.indexOf('Server scenarios'), listing.indexOf('Client scenarios'));
  return [...server.matchAll(/^\s+- (\S+) \[([^\]]*)\]/gm)].filter((m) => m[2]?.split(',').includes(spec)).map((m) => m[1] as string);
}

let sys: TestSystem;
let proxy: BearerProxy;
const outDirs: string[] = [];
/** Per revision: scenario → checks. */
const results = new Map<string, Map<string, Check[]>>();
const runnerOutput = new Map<string, string>();

async function runSuite(suite: (typeof SUITES)[number]): Promise<void> {
  const outDir = mkdtempSync(path.join(os.tmpdir(), 'dmh-conformance-server-'));
  outDirs.push(outDir);
  let output = '';
  const args = [suite.runner, 'server', '--url', `${proxy.url}/mcp`, ...suite.select, '-o', outDir];
  await new Promise<void>((resolve, reject) => {
    const child = spawn(node22(), args, { cwd: outDir, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.on('error', reject);
    // Scenarios that do not apply fail, so the runner exits non-zero: the checks below judge.
    child.on('exit', () => resolve());
  });
  runnerOutput.set(suite.spec, output);
  const checks = new Map<string, Check[]>();
  for (const dir of readdirSync(outDir)) {
    try {
      checks.set(dir.replace(/^server-/, '').replace(/-\d{4}-\d{2}-\d{2}T.*$/, ''), JSON.parse(readFileSync(path.join(outDir, dir, 'checks.json'), 'utf8')) as Check[]);
    } catch {
      // not a scenario's directory
    }
  }
  results.set(suite.spec, checks);
}

beforeAll(async () => {
  sys = await startSystem();
  proxy = await startBearerProxy(sys.apiUrl, await sys.token('student'));
  for (const suite of SUITES) await runSuite(suite);
}, 480_000);

afterAll(async () => {
  await proxy?.close();
  await sys?.stop();
  for (const dir of outDirs) rmSync(dir, { recursive: true, force: true });
});

describe.each(SUITES)('protocol $spec', ({ spec, runner, lists }) => {
  const scenarios = serverScenarios(runner, spec);
  const NOT_APPLICABLE = lists.notApplicable;
  const PENDING = lists.notInActiveSuite;
  const checksOf = (scenario: string) => results.get(spec)?.get(scenario);

  test('the runner lists the server scenarios of the revision, and the lists name only real ones', () => {
    expect(scenarios.length).toBeGreaterThanOrEqual(30);
    expect([...Object.keys(NOT_APPLICABLE), ...Object.keys(PENDING)].filter((s) => !scenarios.includes(s))).toEqual([]);
  });

  if (Object.keys(PENDING).length) {
    test.each(Object.keys(PENDING))("server scenario %s is not in the runner's active suite (when it is, judge it)", (scenario) => {
      expect(checksOf(scenario)).toBeUndefined();
    });
  }

  test.each(scenarios.filter((s) => !(s in NOT_APPLICABLE) && !(s in PENDING)))('server scenario %s: every check passes', (scenario) => {
    const checks = checksOf(scenario);
    if (!checks) throw new Error(`no results for ${scenario}; runner output:\n${(runnerOutput.get(spec) ?? '').slice(-4000)}`);
    // At least one check that passed: a scenario whose checks were all skipped proves nothing.
    expect(checks.map((c) => c.status)).toContain('SUCCESS');
    // As the runner counts: a FAILURE or a WARNING fails the scenario.
    expect(checks.filter((c) => c.status === 'FAILURE' || c.status === 'WARNING')).toEqual([]);
  });

  test.each(Object.keys(NOT_APPLICABLE))('server scenario %s does not apply to the host (see the reason in the list)', (scenario) => {
    // Still failing: the reason holds. Passing now: the list is stale.
    expect((checksOf(scenario) ?? []).some((c) => c.status === 'FAILURE' || c.status === 'WARNING')).toBe(true);
  });
});
