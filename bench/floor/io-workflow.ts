/**
 * Temporal's floor with the turn's I/O (issue 23): `floorTurn`'s idea, but the activities do what a real
 * 1-tool-step direct turn does on the wire, with no host code in between (io-activities.ts): the model's
 * streamed answers and the MCP calls, on the same demo model and the same MCP servers.
 *
 * The order is the one a direct turn of the bench records (read from its history on 2026-11-26):
 *   WFT 1: the catalog as a local activity (marker), then `callLlm` scheduled (step 1);
 *   WFT 2: both tool calls scheduled together as REGULAR activities, `notes__add_note` and
 *          `everything__echo`: the read-only echo beside a regular call is not local
 *          (decision 0021), so they overlap;
 *   WFT 3: `callLlm` scheduled (step 2, the text answer); WFT 4 completes the turn.
 * Until the 'read-only-beside-regular' patch was folded (decision 0017, 2026-11-26) the real turn also
 * wrote its marker and a search attribute upsert in WFT 2; now neither has one.
 * `floorIoSchedule` runs the same schedule with no-op activities: the difference is the I/O's own cost.
 */
import { ApplicationFailure, proxyActivities, proxyLocalActivities, workflowInfo } from '@temporalio/workflow';
import type { IoActivities, IoTurn } from './io-turn';

const local = proxyLocalActivities<IoActivities>({ startToCloseTimeout: '10 seconds' });
const regular = proxyActivities<IoActivities>({ startToCloseTimeout: '60 seconds', retry: { maximumAttempts: 1 } });

export async function floorIoTurn(turn: IoTurn): Promise<string> {
  const [first, ...rest] = turn.requests;
  if (!first || rest.length !== 1) throw ApplicationFailure.nonRetryable(`floorIoTurn: expected 2 model requests, got ${turn.requests.length}`);
  await local.noop();
  const step1 = await regular.model({ body: first, toolsFile: turn.toolsFile });
  if (step1.toolCalls.length !== turn.calls.length) {
    throw ApplicationFailure.nonRetryable(`floorIoTurn: the model asked for ${step1.toolCalls.length} tool calls, the captured turn made ${turn.calls.length}`);
  }
  const { workflowId } = workflowInfo();
  const outcomes = await Promise.all(turn.calls.map((call, i) => regular.tool({ ...call, key: `${workflowId}-${i}` })));
  const failed = outcomes.filter((o) => o.isError);
  if (failed.length > 0) throw ApplicationFailure.nonRetryable(`floorIoTurn: ${failed.length} tool calls failed: ${failed.map((o) => o.text.slice(0, 200)).join('; ')}`);
  const step2 = await regular.model({ body: rest[0] as IoTurn['requests'][number], toolsFile: turn.toolsFile });
  return step2.content ?? '';
}

/** `floorIoTurn`'s schedule with no-op activities: a local, a regular, `calls` regulars in parallel, a regular. */
export async function floorIoSchedule(calls: number): Promise<void> {
  await local.noop();
  await regular.noop();
  await Promise.all(Array.from({ length: calls }, () => regular.noop()));
  await regular.noop();
}
