/**
 * The in-memory session index of a single API replica, rebuilt from Temporal's visibility when the
 * process starts (once, before its first use): every turn workflow carries its session and owner as
 * search attributes, so the chains are the turns of each session in the order they started.
 * Session titles and deletions are not in Temporal: here they last as long as the process.
 */
import type { Client } from '@temporalio/client';
import { SessionIdKey, TenantIdKey, TURN_WORKFLOW_TYPE, UserIdKey } from '../../workflows/definitions';
import { type ChainLink, type LinkEnd, memorySessionIndex, type Owner, type SessionIndex } from '../sessions/index-store';

/** Most turns read back at start; older conversations start a new chain (their memory is lost). */
const MOST_TURNS = 50_000;

/** How a closed turn workflow ended, by its Temporal status name; undefined while it runs. */
export const END_OF: Readonly<Record<string, LinkEnd>> = { COMPLETED: 'completed', FAILED: 'failed', CANCELLED: 'cancelled', CANCELED: 'cancelled', TERMINATED: 'failed', TIMED_OUT: 'failed' };

export function rebuiltSessionIndex(client: Pick<Client, 'workflow'>, log?: { warn(obj: object, msg: string): void }): SessionIndex {
  const memory = memorySessionIndex();
  let rebuilt: Promise<void> | undefined;

  async function rebuild(): Promise<void> {
    const sessions = new Map<string, { owner: Owner; sessionId: string; links: Array<ChainLink & { started: number }> }>();
    let count = 0;
    for await (const wf of client.workflow.list({ query: `WorkflowType = '${TURN_WORKFLOW_TYPE}'`, pageSize: 1000 })) {
      const sessionId = wf.typedSearchAttributes.get(SessionIdKey);
      const id = wf.typedSearchAttributes.get(UserIdKey);
      const tenant = wf.typedSearchAttributes.get(TenantIdKey);
      if (!sessionId || !id || !tenant) continue;
      const key = `${tenant}\n${id}\n${sessionId}`;
      const s = sessions.get(key) ?? { owner: { id, tenant }, sessionId, links: [] };
      sessions.set(key, s);
      const end = END_OF[wf.status.name];
      s.links.push({ turnId: wf.workflowId, seq: 0, at: wf.startTime.toISOString(), started: wf.startTime.getTime(), ...(end ? { ended: end } : {}) });
      if (++count >= MOST_TURNS) break;
    }
    for (const s of sessions.values()) {
      s.links.sort((a, b) => a.started - b.started);
      memory.restore(s.owner, s.sessionId, s.links.map(({ started: _started, ...l }) => l));
    }
  }

  /** Rebuilt once; a failed rebuild (Temporal unreachable) is tried again by the next request. */
  const ready = async (): Promise<void> => {
    rebuilt ??= rebuild().catch((err: unknown) => {
      rebuilt = undefined;
      log?.warn({ err: err instanceof Error ? err.message : String(err) }, 'rebuilding the session index from Temporal failed; trying again at the next request');
      throw err;
    });
    await rebuilt;
  };

  /** `name` of the memory index, once it is rebuilt. */
  const afterRebuild = <K extends keyof SessionIndex>(name: K): SessionIndex[K] =>
    (async (...args: Parameters<SessionIndex[K]>) => {
      await ready();
      return await (memory[name] as (...a: Parameters<SessionIndex[K]>) => ReturnType<SessionIndex[K]>)(...args);
    }) as SessionIndex[K];

  return {
    append: afterRebuild('append'),
    links: afterRebuild('links'),
    ended: afterRebuild('ended'),
    sessions: afterRebuild('sessions'),
    // Titles and deletions live in this process only: the rebuild reads turns, which carry neither.
    session: afterRebuild('session'),
    rename: afterRebuild('rename'),
    remove: afterRebuild('remove'),
  };
}
