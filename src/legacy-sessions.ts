/**
 * Sessions begun before the chain of turns (decision 0016), as the worker's chain and the API's view
 * read them: the closed carrier their migration left under the session workflow's id (decision 0041).
 */
import { type Client, WorkflowNotFoundError } from '@temporalio/client';
import type { SessionMemory } from './shared/session';
import { SESSION_MEMORY_WORKFLOW_TYPE } from './workflows/definitions';

/**
 * What the session of `workflowId` held: its carrier's result (a carrier closes at once: the read
 * waits for a worker at most). None when no workflow has that id. Anything else under it is a session
 * workflow the migration of the release before missed (decision 0041): an error that says so.
 */
export async function readLegacySession(client: Pick<Client, 'workflow'>, workflowId: string): Promise<SessionMemory | undefined> {
  const handle = client.workflow.getHandle(workflowId);
  let type: string;
  try {
    type = (await handle.describe()).type;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return undefined;
    throw err;
  }
  if (type !== SESSION_MEMORY_WORKFLOW_TYPE) {
    throw new Error(`${workflowId} is a ${type}, not a migrated session: run the session migration of decision 0041 (the release before) first`);
  }
  return (await handle.result()) as SessionMemory;
}
