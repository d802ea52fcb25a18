/**
 * Sessions begun before the chain of turns (decision 0016), as the worker's chain and the API's view
 * read them: the closed carrier a migration left under the session workflow's id (decision 0041), or,
 * until the migration has run, the session workflow itself by its `sessionState` query.
 */
import { type Client, WorkflowNotFoundError } from '@temporalio/client';
import { llmMessagesOf } from './core/history';
import type { SessionMemory, SessionView, TurnMemory } from './shared/session';
import { SESSION_MEMORY_WORKFLOW_TYPE, sessionStateQuery } from './workflows/definitions';

/** The memory a session workflow held for its next turn: its summary and the completed exchanges of its transcript. */
export function memoryOfView(view: SessionView): TurnMemory {
  return { ...(view.summary ? { summary: view.summary } : {}), messages: llmMessagesOf(view.messages, 0) };
}

/**
 * What the session of `workflowId` held: a carrier's result (it closes at once: the read waits for a
 * worker at most), or a session workflow's answer. None when no workflow has that id.
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
  if (type === SESSION_MEMORY_WORKFLOW_TYPE) return (await handle.result()) as SessionMemory;
  const view = await handle.query(sessionStateQuery);
  return { view, memory: memoryOfView(view) };
}
