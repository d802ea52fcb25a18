/**
 * Moves sessions of decision 0016's protocol off their session workflows (decision 0041): each idle
 * one's state goes into a closed carrier (`sessionMemoryWorkflow`) under the same workflow id, where the
 * chain's first turn and the API's view read it (src/legacy-sessions.ts). Busy sessions are left to a
 * later run; a run after a complete one finds nothing to do.
 */
import { type Client, WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import type { SessionMemory, SessionView } from './shared/session';
import { memoryOfView } from './legacy-sessions';
import { SESSION_MEMORY_WORKFLOW_TYPE, SESSION_WORKFLOW_TYPE, sessionStateQuery } from './workflows/definitions';

export const MIGRATION_REASON = 'migrated to a session memory carrier (decision 0041)';

export interface MigrationReport {
  /** Session workflow ids now held by a carrier. */
  migrated: string[];
  /** Running sessions with an active or queued turn: run the migration again once they are idle. */
  busy: string[];
  /** Sessions whose state could not be read or moved, and why. */
  failed: Array<{ workflowId: string; error: string }>;
}

/**
 * Every session workflow Temporal's visibility lists whose id does not hold a carrier yet: a running
 * one, idle, is read, terminated and replaced; a closed one (a run before stopped between its
 * termination and its carrier's start, or it ended otherwise) is read by a query on its history.
 * Workers that still register the session workflow must run on `taskQueue`: they answer the queries
 * and run the carriers.
 */
export async function migrateSessions(client: Pick<Client, 'workflow'>, taskQueue: string, onEach?: (line: string) => void): Promise<MigrationReport> {
  const report: MigrationReport = { migrated: [], busy: [], failed: [] };
  const ids = new Set<string>();
  for await (const run of client.workflow.list({ query: `WorkflowType = '${SESSION_WORKFLOW_TYPE}'` })) ids.add(run.workflowId);
  for (const workflowId of [...ids].sort()) {
    try {
      const outcome = await migrateOne(client, taskQueue, workflowId);
      if (outcome === 'migrated') report.migrated.push(workflowId);
      else if (outcome === 'busy') report.busy.push(workflowId);
      if (outcome !== 'done') onEach?.(`${workflowId}: ${outcome}`);
    } catch (err) {
      const error = err instanceof Error ? err.message : String(err);
      report.failed.push({ workflowId, error });
      onEach?.(`${workflowId}: failed: ${error}`);
    }
  }
  return report;
}

async function migrateOne(client: Pick<Client, 'workflow'>, taskQueue: string, workflowId: string): Promise<'migrated' | 'busy' | 'done'> {
  const latest = await client.workflow.getHandle(workflowId).describe();
  // A carrier (an earlier run migrated it) or anything else under this id now: nothing to move.
  if (latest.type !== SESSION_WORKFLOW_TYPE) return 'done';
  const run = client.workflow.getHandle(workflowId, latest.runId);
  const view: SessionView = await run.query(sessionStateQuery);
  if (latest.status.name === 'RUNNING') {
    if (view.activeTurnId !== undefined || view.queuedTurnIds.length > 0) return 'busy';
    // This run only: one that continued as new meanwhile is read again on the next pass.
    await run.terminate(MIGRATION_REASON);
  }
  const carried: SessionMemory = { view, memory: memoryOfView(view) };
  try {
    await client.workflow.start(SESSION_MEMORY_WORKFLOW_TYPE, {
      workflowId,
      taskQueue,
      args: [carried],
      // The session workflow under this id has closed: the carrier takes the id over.
      workflowIdReusePolicy: 'ALLOW_DUPLICATE',
      staticSummary: `Memory of session ${view.sessionId}, migrated from its session workflow (decision 0041)`,
    });
  } catch (err) {
    // Another migration started it a moment before.
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
  }
  return 'migrated';
}
