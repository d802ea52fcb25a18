/**
 * The machinery of tests/tools/capture-histories.ts: where histories go, how one is written, and the
 * run shapes several groups share (one message's turn, a turn and a direct call, an answered question).
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import type { WorkflowHandle } from '@temporalio/client';
import { postJson, postMessage, readSse } from '../helpers/http';
import { ROOT, startSystem, type TestSystem } from '../helpers/system';
import type { Policy } from '../../src/shared/policy';

export const OUT = path.join(ROOT, 'tests', 'histories');

type History = Awaited<ReturnType<WorkflowHandle['fetchHistory']>>;

/** Writes `history` of `workflowId` to `file` in the replay suite's format and says so. */
export function writeHistory(file: string, workflowId: string, history: History): void {
  writeFileSync(file, `${JSON.stringify({ workflowId, history: JSON.parse(historyToJSON(history)) }, null, 1)}\n`);
  process.stdout.write(`wrote ${path.relative(ROOT, file)} (${history.events?.length ?? 0} events)\n`);
}

export async function save(sys: TestSystem, name: string, workflowId: string, dir = OUT): Promise<void> {
  const handle = sys.client.workflow.getHandle(workflowId);
  // A stream's `done` is pushed while the turn's last workflow task still runs: wait for its close.
  if (workflowId.startsWith('turn-')) await handle.result().catch(() => undefined);
  writeHistory(path.join(dir, `${name}.json`), workflowId, await handle.fetchHistory());
}

/** One message's turn on a system of its own, saved under `name`. */
export async function captureOneTurn(name: string, options: Parameters<typeof startSystem>[0], text: string): Promise<void> {
  const sys = await startSystem(options);
  try {
    const { body } = await postMessage(sys.apiUrl, 'replay', text);
    await readSse(`${sys.apiUrl}${body.eventsUrl as string}`, { timeoutMs: 60_000 });
    await save(sys, name, body.turnId);
  } finally {
    await sys.stop();
  }
}

/** A "remember that" turn (a notes write and everything's echo) and a direct call of the echo, saved under `names`. */
export async function captureTurnAndDirectEcho(names: { turn: string; direct: string }, text: string, message: string): Promise<void> {
  const sys = await startSystem();
  try {
    const { body } = await postMessage(sys.apiUrl, 'replay', text);
    await readSse(`${sys.apiUrl}${body.eventsUrl as string}`, { timeoutMs: 60_000 });
    await save(sys, names.turn, body.turnId);
    const direct = await postJson(`${sys.apiUrl}/v1/sessions/replay/tool-calls`, { server: 'everything', tool: 'echo', arguments: { message } });
    await readSse(`${sys.apiUrl}${direct.body.eventsUrl as string}`, { timeoutMs: 60_000 });
    await save(sys, names.direct, direct.body.turnId);
  } finally {
    await sys.stop();
  }
}

/**
 * A turn whose tool call asked its user something, answered through the API with `answer`: the
 * question comes from `text`'s script, on a system with `policy` (default: the example policy).
 */
export async function captureAnswered(name: string, text: string, answer: Record<string, unknown>, policy?: Policy): Promise<void> {
  const sys = await startSystem(policy ? { policy } : {});
  try {
    const { body } = await postMessage(sys.apiUrl, 'replay', text);
    const seen = await readSse(`${sys.apiUrl}${body.eventsUrl as string}`, { stopAfter: (e) => e.event === 'input_required', timeoutMs: 60_000 });
    const id = String(seen.find((e) => e.event === 'input_required')?.data.toolCallId);
    await postJson(`${sys.apiUrl}/v1/turns/${body.turnId}/inputs/${id}`, answer);
    await readSse(`${sys.apiUrl}${body.eventsUrl as string}`, { timeoutMs: 60_000 });
    await save(sys, name, body.turnId);
  } finally {
    await sys.stop();
  }
}
