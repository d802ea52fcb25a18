/**
 * The conformance suite's elicitation scenarios through the whole host, the path users get (issue 22
 * §2): the runner's server is a server of a running system (its worker reloads the MCP config), each
 * tool runs as a turn through the public API, the server's question goes through the worker's own
 * handler to the turn, and ./host-client.ts answers it as the user, through the API, while the call
 * still holds the question. The form-defaults scenario, the one elicitation scenario either runner
 * has for a client (a 2025-11-25 server: it sends its question on the standalone GET stream), must
 * pass in both runners as the runner counts: no FAILURE, no WARNING.
 * (./client-suite.test.ts and ./client-suite-next.test.ts run every scenario against the pool alone.)
 */
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { DIST, requireBuild, startSystem, type TestSystem } from '../helpers/system';
import { defaultRunOptions, describeFailure, runKey, runnerPath, runScenarios, type ScenarioResult, type ScenarioRun } from './client-runs';

jest.setTimeout(600_000);

const RUNS: Array<{ runner: 'conformance' | 'conformance-next'; run: ScenarioRun }> = [
  { runner: 'conformance', run: { scenario: 'elicitation-sep1034-client-defaults', specVersion: '2025-11-25' } },
  { runner: 'conformance-next', run: { scenario: 'elicitation-sep1034-client-defaults', specVersion: '2025-11-25' } },
];

let sys: TestSystem;
let options: ReturnType<typeof defaultRunOptions> & { client: string; env: Record<string, string> };
const results = new Map<string, ScenarioResult>();

beforeAll(async () => {
  requireBuild();
  sys = await startSystem();
  options = {
    ...defaultRunOptions(),
    concurrency: 1,
    client: path.join(DIST, 'tests/conformance/host-client.js'),
    env: { DMH_CONFORMANCE_API: sys.apiUrl, DMH_CONFORMANCE_TOKEN: await sys.token('admin'), DMH_CONFORMANCE_MCP_CONFIG: sys.mcpConfigPath },
  };
  // One at a time: each scenario's server replaces the one before it in the system's MCP config.
  for (const { runner, run } of RUNS) {
    const result = (await runScenarios(runnerPath(runner), [run], options)).get(runKey(run));
    if (result) results.set(`${runner} ${runKey(run)}`, result);
  }
}, 600_000);

afterAll(async () => {
  await sys?.stop();
  if (options) rmSync(options.outRoot, { recursive: true, force: true });
});

test.each(RUNS.map((r) => [`${r.runner} ${r.run.scenario}@${r.run.specVersion}`, r] as const))('%s through the host: the runner passes it (no FAILURE, no WARNING)', (key) => {
  const result = results.get(key);
  if (!result?.passed || !result.checks.some((c) => c.status === 'SUCCESS')) throw new Error(`${key} failed:\n${describeFailure(result)}`);
});

test("every question went through the worker's own handler and the turn: asked and answered in the audit, for each scenario's server", () => {
  const audit = readFileSync(sys.auditFile, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { kind: string; server?: string; outcome?: string });
  const asked = audit.filter((a) => a.kind === 'elicitation_requested' && a.server?.startsWith('conformance'));
  const answered = audit.filter((a) => a.kind === 'elicitation_answered' && a.server?.startsWith('conformance'));
  expect(asked.length).toBeGreaterThanOrEqual(RUNS.length);
  expect(answered.map((a) => a.outcome)).toEqual(asked.map(() => 'ok'));
});
