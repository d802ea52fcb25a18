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

  return {
    async append(...args) {
      await ready();
      return await memory.append(...args);
    },
    async links(...args) {
      await ready();
      return await memory.links(...args);
    },
    async ended(...args) {
      await ready();
      await memory.ended(...args);
    },
    async sessions(...args) {
      await ready();
      return await memory.sessions(...args);
    },
    // Titles and deletions live in this process only: the rebuild reads turns, which carry neither.
    async session(...args) {
      await ready();
      return await memory.session(...args);
    },
    async rename(...args) {
      await ready();
      return await memory.rename(...args);
    },
    async remove(...args) {
      await ready();
      return await memory.remove(...args);
    },
  };
}
