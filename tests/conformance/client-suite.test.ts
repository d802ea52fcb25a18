/**
 * The official MCP conformance suite (`@modelcontextprotocol/conformance`, client mode, the core
 * scenarios of protocol 2025-11-25) against the host's own client path: tests/conformance/client.ts
 * drives the worker's pool with its OAuth and elicitation support. Every check of every scenario
 * must pass; the runner needs Node 22, which scripts/ensure-node22.sh provides.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DIST, ROOT, requireBuild } from '../helpers/system';

const RUNNER = path.join(ROOT, 'node_modules/@modelcontextprotocol/conformance/dist/index.js');
const CLIENT = path.join(DIST, 'tests/conformance/client.js');
const SPEC_VERSION = '2025-11-25';

interface Check {
  id: string;
  name: string;
  status: 'SUCCESS' | 'FAILURE' | 'WARNING' | 'INFO' | 'SKIPPED';
  description?: string;
  errorMessage?: string;
}

let outDir: string;
let results: Map<string, Check[]>;
let runnerOutput = '';

function node22(): string {
  return execFileSync('bash', [path.join(ROOT, 'scripts/ensure-node22.sh')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
}

/** The scenarios of a suite, as the runner lists them. */
function scenarioNames(node: string): string[] {
  const listing = execFileSync(node, [RUNNER, 'list'], { encoding: 'utf8' });
  const client = listing.slice(listing.indexOf('Client scenarios'));
  return [...client.matchAll(/^\s+- (\S+) \[([^\]]*)\]/gm)].filter((m) => m[2]?.split(',').includes(SPEC_VERSION)).map((m) => m[1] as string);
}

beforeAll(async () => {
  requireBuild();
  const node = node22();
  outDir = mkdtempSync(path.join(os.tmpdir(), 'dmh-conformance-'));
  const args = [RUNNER, 'client', '--command', `${process.execPath} ${CLIENT}`, '--suite', 'core', '--spec-version', SPEC_VERSION, '-o', outDir];
  await new Promise<void>((resolve, reject) => {
    const child = spawn(node, args, { cwd: outDir, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.on('data', (d: Buffer) => (runnerOutput += d.toString()));
    child.stderr.on('data', (d: Buffer) => (runnerOutput += d.toString()));
    child.on('error', reject);
    // A failing scenario makes the runner exit non-zero: the checks below say which and why.
    child.on('exit', () => resolve());
  });
  results = new Map();
  for (const dir of readdirSync(outDir)) {
    let checks: Check[];
    try {
      checks = JSON.parse(readFileSync(path.join(outDir, dir, 'checks.json'), 'utf8')) as Check[];
    } catch {
      continue;
    }
    // Result directories are `<scenario>-<timestamp>`, with `/` in auth scenario names kept as a subdirectory.
    results.set(dir.replace(/-\d{4}-\d{2}-\d{2}T.*$/, ''), checks);
  }
  for (const sub of readdirSync(outDir).filter((d) => d === 'auth')) {
    for (const dir of readdirSync(path.join(outDir, sub))) {
      const checks = JSON.parse(readFileSync(path.join(outDir, sub, dir, 'checks.json'), 'utf8')) as Check[];
      results.set(`${sub}/${dir.replace(/-\d{4}-\d{2}-\d{2}T.*$/, '')}`, checks);
    }
  }
}, 240_000);

afterAll(() => {
  if (outDir) rmSync(outDir, { recursive: true, force: true });
});

const expected = scenarioNames(process.env.NODE22 ?? (() => {
  try {
    return node22();
  } catch {
    return process.execPath;
  }
})());

test('the core client suite covers the scenarios of the spec revision (18 in conformance 0.1.16)', () => {
  expect(expected.length).toBeGreaterThanOrEqual(18);
  expect(expected).toEqual(expect.arrayContaining(['initialize', 'tools_call', 'elicitation-sep1034-client-defaults', 'sse-retry', 'auth/scope-step-up', 'auth/pre-registration']));
});

test.each(expected)('conformance scenario %s: every check passes', (scenario) => {
  const checks = results.get(scenario);
  if (!checks) throw new Error(`no results for ${scenario}; runner output:\n${runnerOutput.slice(-4000)}`);
  expect(checks.length).toBeGreaterThan(0);
  // As the runner counts: a FAILURE fails the scenario; a WARNING (e.g. a reconnect a little later than
  // the server's `retry` on a loaded machine) is reported, not failed.
  const failures = checks.filter((c) => c.status === 'FAILURE');
  expect(failures).toEqual([]);
});
