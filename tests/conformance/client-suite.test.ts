/**
 * The official MCP conformance suite 0.1.16 (`@modelcontextprotocol/conformance`, client mode, the
 * core scenarios of protocol 2025-11-25) against the host's own client path: tests/conformance/client.ts
 * drives the worker's pool with its OAuth and elicitation support. The runner judges each scenario on
 * its own, a few at a time (./client-runs.ts, decision 0027), and every one must pass as it counts:
 * no FAILURE and no WARNING. The runner needs Node 22, which scripts/ensure-node22.sh provides.
 * Conformance 0.2 runs in ./client-suite-next.test.ts.
 */
import { rmSync } from 'node:fs';
import { requireBuild } from '../helpers/system';
import { defaultRunOptions, describeFailure, listClientScenarios, runKey, runnerPath, runScenarios, type ScenarioResult } from './client-runs';

const RUNNER = runnerPath('conformance');
const SPEC_VERSION = '2025-11-25';
/** The core suite of the revision: 0.1.16 tags each client scenario with the revisions it belongs to. */
const expected = listClientScenarios(RUNNER)
  .listed.filter((s) => s.tags.includes(SPEC_VERSION))
  .map((s) => s.scenario);
const runs = expected.map((scenario) => ({ scenario, specVersion: SPEC_VERSION }));
const options = defaultRunOptions();
let results = new Map<string, ScenarioResult>();

beforeAll(async () => {
  requireBuild();
  results = await runScenarios(RUNNER, runs, options);
  console.log(`conformance 0.1.16 core (${options.concurrency} at a time): ${runs.filter((r) => results.get(runKey(r))?.passed).length} of ${runs.length} pass`);
}, 900_000);

afterAll(() => rmSync(options.outRoot, { recursive: true, force: true }));

test('the core client suite covers the scenarios of the spec revision (18 in conformance 0.1.16)', () => {
  expect(expected.length).toBeGreaterThanOrEqual(18);
  expect(expected).toEqual(expect.arrayContaining(['initialize', 'tools_call', 'elicitation-sep1034-client-defaults', 'sse-retry', 'auth/scope-step-up', 'auth/pre-registration']));
});

test.each(runs.map((r) => [r.scenario, r] as const))('conformance scenario %s: the runner passes it (no FAILURE, no WARNING)', (_scenario, run) => {
  const result = results.get(runKey(run));
  // As the runner counts: a FAILURE or a WARNING fails the scenario (and so does a client that timed out).
  if (!result?.passed || !result.checks.some((c) => c.status === 'SUCCESS')) throw new Error(`${run.scenario} failed:\n${describeFailure(result)}`);
});
