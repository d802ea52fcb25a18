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

/** The workflow type of decision 0016's session workflow (its code is gone; the migration's misses may still run). */
const SESSION_WORKFLOW_TYPE = 'sessionWorkflow';

/**
 * Whether a session id names a session begun before the chain: a carrier, or a session workflow the
 * migration missed (which the reader then refuses, naming the migration). Listed once per process by
 * visibility, at first use: carriers came from the migration of the release before (decision 0041)
 * and nothing makes new ones, so a new session's first turn is started without reaching back, rather
 * than every one of them describing an id that does not exist (a round trip on its first workflow
 * task). A failed listing is tried again at the next use.
 */
export function legacySessionIds(client: Pick<Client, 'workflow'>): (workflowId: string) => Promise<boolean> {
  let listed: Promise<Set<string>> | undefined;
  const list = async (): Promise<Set<string>> => {
    const ids = new Set<string>();
    const query = `WorkflowType = '${SESSION_MEMORY_WORKFLOW_TYPE}' OR WorkflowType = '${SESSION_WORKFLOW_TYPE}'`;
    for await (const wf of client.workflow.list({ query, pageSize: 1000 })) ids.add(wf.workflowId);
    return ids;
  };
  return async (workflowId) => {
    listed ??= list().catch((err: unknown) => {
      listed = undefined;
      throw err;
    });
    return (await listed).has(workflowId);
  };
}
