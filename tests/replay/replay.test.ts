import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { bundleWorkflowCode, Worker } from '@temporalio/worker';
import { DeterminismViolationError } from '@temporalio/workflow';
import { NOOP_METRICS_SINKS, tracingWorkerOptions, workflowBundleOptions } from '../../src/cli/workflow-bundle';
import { quietLogger } from '../helpers/quiet-logger';

/**
 * Every committed history must replay against today's workflow code: a failure here means a
 * workflow change would break turns that are running in production. Capture new histories with
 * `node dist/tests/tools/capture-histories.js` after a deliberate workflow change.
 */
const HISTORIES = path.resolve(__dirname, '..', 'histories');
const files = readdirSync(HISTORIES).filter((f) => f.endsWith('.json')).sort();

function load(file: string) {
  const json = JSON.parse(readFileSync(path.join(HISTORIES, file), 'utf8')) as { workflowId: string; history: unknown };
  return { workflowId: json.workflowId, history: historyFromJSON(json.history) };
}

test('there are committed histories to replay', () => {
  expect(files.length).toBeGreaterThanOrEqual(12);
  // The five seed patterns and a turn that lived through a worker crash are among them.
  for (const name of ['turn-chain-queued', 'pattern1', 'pattern2', 'pattern3', 'pattern4', 'pattern5', 'worker-crash', 'approval', 'policy-denial', 'cancelled', 'direct-tool-call', 'turn-refs-', 'authorization-wait', 'turn-elicitation-held', 'turn-elicitation-asked-twice', 'turn-sampling', 'turn-url-elicitation', 'turn-sampling-approved', 'turn-read-only-local', 'turn-read-only-direct', 'turn-traced-two-servers', 'turn-read-only-beside-regular', 'turn-tool-search', 'turn-context-intent', 'session-memory', 'turn-chain-legacy-memory', 'turn-model-by-role', 'turn-chain-handed-on', 'turn-chain-first']) {
    expect(files.some((f) => f.includes(name))).toBe(true);
  }
});

/** The worker's sinks, as no-ops: replayed workflows reference them (nothing is called while replaying). */
const REPLAY_SINKS = { ...tracingWorkerOptions().sinks, ...NOOP_METRICS_SINKS };

// As workers run them: the default bundle, and the one a worker with tracing on loads (its
// interceptors add headers to commands; histories must replay on both, whichever recorded them).
describe.each([
  ['the default bundle', false],
  ['the traced bundle', true],
])('replay against the current workflow code: %s', (_name, traced) => {
  let bundle: { code: string };
  beforeAll(async () => {
    bundle = await bundleWorkflowCode({ ...workflowBundleOptions(traced), logger: quietLogger });
  }, 120_000);

  test.each(files)('%s replays deterministically', async (file) => {
    await Worker.runReplayHistory({ workflowBundle: bundle, replayName: file, sinks: REPLAY_SINKS }, load(file).history, load(file).workflowId);
  });
});

describe('negative control: an altered workflow must fail to replay', () => {
  let bundle: { code: string };
  beforeAll(async () => {
    bundle = await bundleWorkflowCode({ ...workflowBundleOptions(), workflowsPath: require.resolve('./altered'), logger: quietLogger });
  }, 120_000);

  // A history that ends before the workflow issued any command (a turn cancelled while it waited for
  // the turn before it) cannot tell the altered code apart.
  const decisive = files.filter((f) => (f.includes('turn-') || f === 'session-memory.json') && !f.includes('cancelled-while-queued'));
  test.each(decisive)('%s is rejected by the altered code', async (file) => {
    const { history, workflowId } = load(file);
    await expect(Worker.runReplayHistory({ workflowBundle: bundle, replayName: file, sinks: REPLAY_SINKS }, history, workflowId)).rejects.toBeInstanceOf(
      DeterminismViolationError,
    );
  });
});

