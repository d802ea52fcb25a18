import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { bundleWorkflowCode, Worker } from '@temporalio/worker';
import { NOOP_METRICS_SINKS, tracingWorkerOptions, workflowBundleOptions } from '../../src/cli/workflow-bundle';
import { parsePayloadKeys } from '../../src/config/payload-keys';
import { dataConverterFor } from '../../src/security/data-converter';
import type { PayloadKey } from '../../src/security/payload-codec';
import { quietLogger } from '../helpers/quiet-logger';

/**
 * Histories whose payloads were sealed (tests/histories/sealed, captured with the test key beside
 * them) replay on today's workflow code after a key rotation: a new key encrypts, the old one is
 * still listed for decryption. Without the old key they cannot replay, which is why a retired key
 * stays listed while histories sealed with it may still be replayed. Clear histories (recorded
 * before keys were configured) replay with the codec on too.
 */
const HISTORIES = path.resolve(__dirname, '..', 'histories');
const SEALED = path.join(HISTORIES, 'sealed');
const sealedFiles = readdirSync(SEALED).filter((f) => f.endsWith('.json')).sort();
const clearFiles = ['turn-traced-two-servers.json', 'session-memory.json', 'turn-pattern3-worker-crash.json'];

const oldKeys = parsePayloadKeys(readFileSync(path.join(SEALED, 'payload-keys.txt'), 'utf8'), 'tests/histories/sealed/payload-keys.txt');
const newKey: PayloadKey = { id: '2026-07', key: randomBytes(32) };
const REPLAY_SINKS = { ...tracingWorkerOptions().sinks, ...NOOP_METRICS_SINKS };

function load(file: string) {
  const json = JSON.parse(readFileSync(file, 'utf8')) as { workflowId: string; history: unknown };
  return { workflowId: json.workflowId, history: historyFromJSON(json.history) };
}

let bundle: { code: string };
beforeAll(async () => {
  bundle = await bundleWorkflowCode({ ...workflowBundleOptions(), logger: quietLogger });
}, 120_000);

async function replay(file: string, keys: PayloadKey[]): Promise<void> {
  const { history, workflowId } = load(file);
  await Worker.runReplayHistory(
    { workflowBundle: bundle, replayName: path.basename(file), sinks: REPLAY_SINKS, dataConverter: dataConverterFor({ keys }) },
    history,
    workflowId,
  );
}

test('there are sealed histories of a turn', () => {
  // The sealed session workflow's (session-sealed.json) is retired with that workflow (decision 0041).
  expect(sealedFiles).toEqual(expect.arrayContaining(['turn-sealed-two-servers.json']));
  // Sealed for real: the user's text is nowhere in them.
  for (const f of sealedFiles) expect(readFileSync(path.join(SEALED, f), 'utf8')).toContain('YmluYXJ5L2VuY3J5cHRlZA=='); // "binary/encrypted"
});

test.each(sealedFiles)('%s replays after rotation (new key first, old key still listed)', async (file) => {
  await replay(path.join(SEALED, file), [newKey, ...oldKeys]);
});

test.each(sealedFiles)('%s does not replay once the old key is dropped', async (file) => {
  await expect(replay(path.join(SEALED, file), [newKey])).rejects.toThrow(/not among the configured payload keys/);
});

test.each(clearFiles)('clear history %s replays with the codec configured', async (file) => {
  await replay(path.join(HISTORIES, file), [newKey, ...oldKeys]);
});

