/**
 * A turn's result with the Temporal client, right after the API (or the gateway) accepted it. The
 * session answers a submission in the workflow task that starts the turn, so the turn workflow exists
 * a few milliseconds after the answer: a read in between finds no workflow, and is tried again.
 */
import { WorkflowNotFoundError, type Client } from '@temporalio/client';

export async function turnResult(client: Client, turnId: string, withinMs = 5_000): Promise<unknown> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    try {
      return await client.workflow.getHandle(turnId).result();
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError) || Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 5));
    }
  }
}
