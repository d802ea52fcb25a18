/**
 * The gateway's lists, from Temporal's visibility (which lags a moment behind): a caller's sessions
 * (paged, newest first) and turns, and a tenant's turns waiting for an approval.
 *
 * Visibility queries quote values in single quotes with no escape: ids outside a safe set are refused
 * (nothing listed) rather than quoted. SQL visibility takes no `ORDER BY`; it lists running workflows
 * first, newest start first, then closed ones, latest close first. The session cursor follows that
 * order: open sessions by start time, then closed ones by close time.
 */
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import type { TurnState } from '../../shared/turn';
import type { SessionListCursor } from '../sessions/index-store';
import {
  SESSION_ID_SEARCH_ATTRIBUTE,
  TENANT_ID_SEARCH_ATTRIBUTE,
  TURN_WORKFLOW_TYPE,
  USER_ID_SEARCH_ATTRIBUTE,
} from '../../workflows/definitions';

type Owner = { id: string; tenant: string };

export interface SessionSummary {
  sessionId: string;
  /** Its first message. */
  startedAt: string;
  /** Its latest message. */
  lastAt: string;
  /** Always true for a chain of turns (a session has no workflow that could end). */
  open: boolean;
  /** The owner's title, once set. */
  title?: string;
}

/** Where a page of sessions ends (src/api/sessions/index-store.ts). */
export type { SessionListCursor as SessionCursor } from '../sessions/index-store';

export interface SessionPage {
  sessions: SessionSummary[];
  /** Where the next page starts; absent on the last page. */
  next?: SessionListCursor;
}

export interface TurnSummary {
  turnId: string;
  startedAt: string;
  /** When the workflow closed; absent while it runs. */
  closedAt?: string;
}

const SAFE = /^[a-zA-Z0-9_.@:|+-]{1,256}$/;
const quotable = (owner: Owner) => SAFE.test(owner.id) && SAFE.test(owner.tenant);
const ownedBy = (type: string, owner: Owner) =>
  `WorkflowType = '${type}' AND ${USER_ID_SEARCH_ATTRIBUTE} = '${owner.id}' AND ${TENANT_ID_SEARCH_ATTRIBUTE} = '${owner.tenant}'`;

export function createListing(client: Client, queryTurn: (handle: ReturnType<Client['workflow']['getHandle']>) => Promise<TurnState>) {
  return {
    /** The turns of `owner`, newest first (at most `limit`). */
    async listTurns(owner: Owner, limit: number): Promise<TurnSummary[]> {
      if (!quotable(owner)) return [];
      const turns: TurnSummary[] = [];
      for await (const wf of client.workflow.list({ query: ownedBy(TURN_WORKFLOW_TYPE, owner), pageSize: Math.min(limit * 2, 1000) })) {
        turns.push({ turnId: wf.workflowId, startedAt: wf.startTime.toISOString(), ...(wf.closeTime ? { closedAt: wf.closeTime.toISOString() } : {}) });
        if (turns.length >= limit) break;
      }
      return turns;
    },

    /** The tenant's running turns that wait for an approval (at most `limit`, newest first). */
    async awaitingApproval(tenant: string, limit: number): Promise<TurnState[]> {
      // Visibility is eventually consistent: a turn that began waiting a moment ago may be missing.
      // Tenants are names (NAME_PATTERN, checked when the token is read); anything else cannot be quoted safely.
      if (!/^[a-zA-Z0-9_.-]{1,64}$/.test(tenant)) return [];
      const query = `WorkflowType = '${TURN_WORKFLOW_TYPE}' AND ExecutionStatus = 'Running' AND ${TENANT_ID_SEARCH_ATTRIBUTE} = '${tenant}'`;
      const ids: string[] = [];
      for await (const wf of client.workflow.list({ query, pageSize: Math.min(limit * 2, 1000) })) {
        ids.push(wf.workflowId);
        if (ids.length >= limit * 2) break;
      }
      const states = await Promise.all(
        ids.map(async (id) => {
          try {
            return await queryTurn(client.workflow.getHandle(id));
          } catch {
            return undefined; // finished meanwhile, or no worker to answer: not waiting for anyone now
          }
        }),
      );
      return states.filter((s): s is TurnState => s?.status === 'awaiting_approval').slice(0, limit);
    },
  };
}

/** Registers the custom search attribute turns carry. Safe to call on every start. */
export async function ensureSearchAttributes(client: Client, namespace: string): Promise<void> {
  // Only those missing: adding one that exists makes the server log a warning at every start.
  const existing = await client.connection.operatorService.listSearchAttributes({ namespace });
  const known = new Set(Object.keys(existing.customAttributes ?? {}));
  // One at a time: adding a set fails whole when any one of them already exists (another replica
  // may add it between the list and here).
  for (const name of [SESSION_ID_SEARCH_ATTRIBUTE, USER_ID_SEARCH_ATTRIBUTE, TENANT_ID_SEARCH_ATTRIBUTE]) {
    if (known.has(name)) continue;
    try {
      await client.connection.operatorService.addSearchAttributes({
        namespace,
        searchAttributes: { [name]: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD },
      });
    } catch (err) {
      // 6 = ALREADY_EXISTS; anything else is worth surfacing.
      if ((err as { code?: number }).code !== 6) throw err;
    }
  }
}
