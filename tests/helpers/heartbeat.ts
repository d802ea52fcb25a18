/**
 * What a turn's running tool call told Temporal in its heartbeat details, read the way an operator
 * would (a describe of the turn): for tests that must act once the worker has recorded something.
 */
import type { Client } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import type { ToolTaskRef } from '../../src/mcp/types';
import { waitFor } from './http';

/** The MCP task id in the turn's pending `callTool` activity's heartbeat details, once Temporal has it. */
export async function heartbeatTask(client: Client, turnId: string, timeoutMs = 30_000): Promise<string> {
  return await waitFor(async () => {
    const described = await client.workflow.getHandle(turnId).describe();
    const payload = described.raw.pendingActivities?.find((a) => a.activityType?.name === 'callTool')?.heartbeatDetails?.payloads?.[0];
    const details = payload ? (defaultPayloadConverter.fromPayload(payload) as { task?: ToolTaskRef }) : undefined;
    return details?.task?.taskId;
  }, timeoutMs);
}
