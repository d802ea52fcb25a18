/**
 * The official MCP conformance suite 0.2 (`conformance-next`, the npm alias of
 * @modelcontextprotocol/conformance 0.2.0-alpha.12) in client mode, against the host's own client
 * path (tests/conformance/client.ts): the runner's whole client suite (`--suite all`) and the frozen
 * requirement sets of both revisions (`--requirements 2026-07-28`, `--requirements 2025-11-25`),
 * each scenario at the wire the runner would run it at.
 *
 * The runner judges each scenario on its own, a few at a time (./client-runs.ts, decision 0027); a
 * scenario and wire shared by two of the runs is run once and judged in both. Every scenario must
 * pass except those in ./client-known-failures.json, each listed with its reason (protocol
 * extensions the host does not implement): a listed one that starts passing fails the test too, so
 * the list cannot go stale. docs/CONFORMANCE.md has the counts.
 */
import { rmSync } from 'node:fs';
import path from 'node:path';
import { readFileSync } from 'node:fs';
import { requireBuild } from '../helpers/system';
import {
  defaultRunOptions,
  defaultWire,
  describeFailure,
  listClientScenarios,
  runKey,
  runnerPath,
  runScenarios,
  type ScenarioResult,
  type ScenarioRun,
} from './client-runs';

interface KnownFailures {
  /** Per wire: scenario → why the host fails it. */
  failing: Record<string, Record<string, string>>;
  /** Scenarios the runner passes with no check at all: the client never used what they test. */
  notExercised: Record<string, string>;
}

const RUNNER = runnerPath('conformance-next');
const KNOWN = JSON.parse(readFileSync(path.join(__dirname, 'client-known-failures.json'), 'utf8')) as KnownFailures;

interface Suite {
  name: string;
  runs: ScenarioRun[];
  /** The scenarios the runner scores (a requirement set's required list); the rest run for visibility. */
  scored: Set<string>;
}

function suites(): Suite[] {
  const all = listClientScenarios(RUNNER).listed.map(({ scenario, tags }) => ({ scenario, specVersion: defaultWire(tags), force: true }));
  const requirementSet = (revision: string): Suite => {
    const { listed, notScored } = listClientScenarios(RUNNER, ['--requirements', revision]);
    const names = [...listed.map((s) => s.scenario), ...notScored];
    return { name: `requirements ${revision}`, runs: names.map((scenario) => ({ scenario, specVersion: revision, force: true })), scored: new Set(listed.map((s) => s.scenario)) };
  };
  return [{ name: 'suite all', runs: all, scored: new Set(all.map((r) => r.scenario)) }, requirementSet('2026-07-28'), requirementSet('2025-11-25')];
}

const SUITES = suites();
const options = defaultRunOptions();
let results = new Map<string, ScenarioResult>();

const knownFailure = (run: ScenarioRun): string | undefined => KNOWN.failing[run.specVersion]?.[run.scenario];
const notExercised = (run: ScenarioRun): string | undefined => KNOWN.notExercised[run.scenario];
const succeeded = (result: ScenarioResult | undefined): boolean => !!result?.passed && result.checks.some((c) => c.status === 'SUCCESS');

beforeAll(async () => {
  requireBuild();
  results = await runScenarios(RUNNER, SUITES.flatMap((s) => s.runs), options);
  // The counts docs/CONFORMANCE.md reports, as the runner counts (a scenario with no check passes there).
  const lines = SUITES.map((suite) => {
    const passed = (runs: ScenarioRun[]) => runs.filter((r) => results.get(runKey(r))?.passed).length;
    const scored = suite.runs.filter((r) => suite.scored.has(r.scenario));
    const rest = suite.runs.filter((r) => !suite.scored.has(r.scenario));
    return `${suite.name}: ${passed(scored)} of ${scored.length} pass` + (rest.length ? `; not scored: ${passed(rest)} of ${rest.length}` : '');
  });
  console.log(`conformance 0.2 client scenarios (${options.concurrency} at a time):\n${lines.join('\n')}`);
}, 1_800_000);

afterAll(() => rmSync(options.outRoot, { recursive: true, force: true }));

test('the runner lists the client scenarios, and the known-failures file names only scenarios run at its wire', () => {
  expect(SUITES[0]?.runs.length).toBeGreaterThanOrEqual(48);
  expect(SUITES[1]?.scored.size).toBeGreaterThanOrEqual(32);
  expect(SUITES[2]?.scored.size).toBeGreaterThanOrEqual(18);
  const runKeys = new Set(SUITES.flatMap((s) => s.runs.map(runKey)));
  const listed = Object.entries(KNOWN.failing).flatMap(([wire, scenarios]) => Object.keys(scenarios).map((scenario) => `${scenario}@${wire}`));
  expect(listed.filter((k) => !runKeys.has(k))).toEqual([]);
  const names = new Set(SUITES[0]?.runs.map((r) => r.scenario));
  expect(Object.keys(KNOWN.notExercised).filter((s) => !names.has(s))).toEqual([]);
});

describe.each(SUITES)('$name', ({ runs }) => {
  const judged = runs.filter((r) => !knownFailure(r) && !notExercised(r));
  test.each(judged.map((r) => [runKey(r), r] as const))('%s: the runner passes it, with at least one check that succeeded', (_key, run) => {
    const result = results.get(runKey(run));
    if (!succeeded(result)) throw new Error(`${runKey(run)} failed:\n${describeFailure(result)}`);
  });

  const failing = runs.filter((r) => knownFailure(r));
  if (failing.length) {
    test.each(failing.map((r) => [runKey(r), knownFailure(r) as string, r] as const))('%s is a known failure (%s)', (_key, _reason, run) => {
      // Still failing: the reason holds. Passing now: take it off the list.
      expect(results.get(runKey(run))?.passed).toBe(false);
    });
  }

  const unexercised = runs.filter((r) => notExercised(r));
  if (unexercised.length) {
    test.each(unexercised.map((r) => [runKey(r), r] as const))('%s has no check for the host (when it has, judge it)', (_key, run) => {
      const result = results.get(runKey(run));
      expect(result?.passed).toBe(true);
      expect(result?.checks.filter((c) => c.status !== 'SKIPPED' && c.status !== 'INFO')).toEqual([]);
    });
  }
});
