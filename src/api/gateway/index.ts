import { createHash } from 'node:crypto';
import { type Client, WorkflowFailedError, WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { sessionOfTurn, TURN_ID_PATTERN } from '../../shared/ids';
import type { Catalog } from '../../shared/tool-types';
import type { DirectToolCall, TurnState, ApprovalInput } from '../../shared/turn';
import type { ProvideInput } from '../../shared/user-input';
import type { TurnSettings } from '../../config';
import { Failure, failedTurnRecord, failureTypeOf } from '../../shared/failures';
import { approveToolCallUpdate, authorizationCompletedSignal, provideInputUpdate, SessionIdKey, TenantIdKey, UserIdKey, turnStateQuery } from '../../workflows/definitions';
import type { UserContext } from '../../shared/user';
import type { SessionView, TurnMemory } from '../../shared/session';
import type { LinkEnd, SessionEntry, SessionIndex } from '../sessions/index-store';
import { rebuiltSessionIndex } from './session-index';
import { legacySessionIds } from '../../legacy-sessions';
import { createCatalogReader } from './catalog';
import { createChain, legacySessionWorkflowId } from './chain';
import { createListing, type SessionCursor, type SessionPage, type SessionSummary, type TurnSummary } from './listing';

export type { SessionCursor, SessionPage, SessionSummary, TurnSummary } from './listing';
export { ensureSearchAttributes } from './listing';

export { SessionIdKey, TenantIdKey, UserIdKey };

/**
 * Sessions are per owner: two users who both name a session "demo" have two conversations. The
 * workflow id carries a hash of tenant and user (not the ids themselves, which stay out of ids).
 */
export function ownerKey(user: { id: string; tenant: string }): string {
  return createHash('sha256').update(`${user.tenant}\n${user.id}`).digest('hex').slice(0, 16);
}

/** Everything the API needs from Temporal, behind one seam (tests of validation can fake it). */
export type ApprovalOutcome =
  | { kind: 'decided'; decision: 'approved' | 'rejected' }
  | { kind: 'not_pending' | 'already_decided' | 'forbidden' };

export type InputOutcome = { kind: 'provided' } | { kind: 'not_pending' | 'forbidden' };

export type SubmitOutcome =
  /** `waitingOn`: the turns of the session ahead of this one, not known to have ended. */
  | { kind: 'accepted'; created: boolean; position: number; waitingOn?: string[] }
  /** The session's queue is full (SessionSettings.maxQueuedTurns). */
  | { kind: 'busy' }
  /** Its owner deleted the session (decision 0037): nothing was started. */
  | { kind: 'deleted' };

export interface TurnGateway {
  /** Appends a message to the caller's session (begun by it if new); its turn runs after those before it. */
  submitMessage(args: { turnId: string; sessionId: string; text: string; user: UserContext; token?: string; directCall?: DirectToolCall }): Promise<SubmitOutcome>;
  /** The session of `owner` (the caller, or a turn's owner) with its newest `turns` turns (default: the transcript limit), or null. */
  getSession(owner: { id: string; tenant: string }, sessionId: string, turns?: number): Promise<SessionView | null>;
  decideApproval(turnId: string, input: ApprovalInput): Promise<ApprovalOutcome>;
  /** Requests cancellation; the workflow stops at its next step and reports `cancelled`. */
  cancelTurn(turnId: string): Promise<void>;
  /** Tells a turn waiting for the user's OAuth consent with `server` that it was given (the callback route). */
  authorizationCompleted?(turnId: string, server: string): Promise<void>;
  /** Hands the owner's answer to a server's question to the waiting turn. */
  provideInput?(turnId: string, input: ProvideInput): Promise<InputOutcome>;
  /**
   * null when no such turn exists. With `likelyRunning` (stream polling), the running turn's query
   * is tried first, saving the describe round trip; closed or unknown turns take the full path.
   */
  getTurn(turnId: string, afterEventId?: number, opts?: { likelyRunning?: boolean }): Promise<TurnState | null>;
  /**
   * The tools and servers as a worker lists them, reused for `catalogCacheMs`. `fresh`: listed again
   * now, whatever the cache (a worker connects a server that is down as it lists it).
   */
  catalog(opts?: { fresh?: boolean }): Promise<Catalog>;
  temporalHealth(): Promise<{ ok: boolean; error?: string }>;
  /** The tenant's running turns that wait for an approval (at most `limit`, newest first). */
  awaitingApproval(tenant: string, limit: number): Promise<TurnState[]>;
  /** The sessions of `owner` by their latest message, newest first: at most `limit` after `cursor`, and where the next page starts (the session index). */
  listSessions(owner: { id: string; tenant: string }, limit: number, cursor?: SessionCursor): Promise<SessionPage>;
  /** The session of `owner` as the list shows it, or null (none, or deleted). */
  sessionSummary(owner: { id: string; tenant: string }, sessionId: string): Promise<SessionSummary | null>;
  /** Titles the session of `owner` (a checked title); null when there is none (or it was deleted). */
  renameSession(owner: { id: string; tenant: string }, sessionId: string, title: string): Promise<SessionSummary | null>;
  /** Deletes the session of `owner` from the index (its turns stay in Temporal); false when there is none (or it was deleted). */
  deleteSession(owner: { id: string; tenant: string }, sessionId: string): Promise<boolean>;
  /** The turns of `owner`, newest first (at most `limit`; from visibility, like listSessions). */
  listTurns(owner: { id: string; tenant: string }, limit: number): Promise<TurnSummary[]>;
}

/** Temporal reads of turns the gateway made (the bench reports them per turn; a stream should need none). */
export interface TurnReads {
  /** turnState queries: on a closed turn each one makes a worker replay the whole history. */
  queries: number;
  describes: number;
  /** Result or failure reads of closed turns (a history read, no replay). */
  results: number;
}

export interface GatewayOptions {
  client: Client;
  taskQueue: string;
  /**
   * Read at every submission, so a reloaded host config or policy applies to the next turn: the tool
   * policy handed to every turn (the workflow enforces it), the turn options and the session settings.
   */
  settings: () => TurnSettings;
  /** When set, the caller's token travels sealed with it (for servers with `forwardUserToken`). */
  tokenSealKey?: string;
  /** How long a catalog answer is reused: /v1/tools and /v1/servers must not start a workflow per call. */
  catalogCacheMs: number;
  /** How long to wait for a worker to answer a catalog request. */
  catalogTimeoutMs?: number;
  /** The session index (decision 0033); default: in memory, rebuilt from Temporal's visibility (one replica). */
  sessions?: SessionIndex;
  /** Whether a workflow id holds a session begun before the chain; default: `legacySessionIds` over `client`. */
  isLegacySession?(workflowId: string): Promise<boolean>;
  /** How a turn ended, when this API heard its final event (the live hub): a submission behind it then reads nothing of it from Temporal. */
  endSeen?(turnId: string): LinkEnd | undefined;
  /** The memory a turn handed on as it ended, when this API heard it: the next turn of its session starts with it. */
  handedOn?(turnId: string): TurnMemory | undefined;
}

const summaryOf = (s: SessionEntry): SessionSummary => ({
  sessionId: s.sessionId,
  startedAt: s.startedAt,
  lastAt: s.lastAt,
  open: true,
  ...(s.title === undefined ? {} : { title: s.title }),
});

export function createTemporalGateway(opts: GatewayOptions): TurnGateway & { reads(): TurnReads } {
  const { client } = opts;
  const reads: TurnReads = { queries: 0, describes: 0, results: 0 };
  const queryTurn = (handle: ReturnType<Client['workflow']['getHandle']>, afterEventId?: number): Promise<TurnState> => {
    reads.queries++;
    return handle.query(turnStateQuery, afterEventId);
  };
  const listing = createListing(client, (handle) => queryTurn(handle));
  const catalog = createCatalogReader(opts);

  async function finalState(turnId: string, status: string, owner?: { id: string; tenant: string }): Promise<TurnState> {
    const handle = client.workflow.getHandle(turnId);
    reads.results++;
    if (status === 'COMPLETED') return (await handle.result()) as TurnState;
    if ((status === 'CANCELLED' || status === 'CANCELED')) {
      // Temporal keeps no details on a cancelled run; the closed workflow still answers its query.
      try {
        return await queryTurn(handle);
      } catch {
        // No worker to answer: fall through to the minimal record below.
      }
    }
    const minimal = (message: string): TurnState => {
      const cancelled = (status === 'CANCELLED' || status === 'CANCELED');
      return {
        turnId,
        sessionId: sessionOfTurn(turnId) ?? '',
        ...(owner ? { owner } : {}),
        status: cancelled ? 'cancelled' : 'failed',
        toolCalls: [],
        events: [],
        steps: 0,
        error: { code: cancelled ? 'cancelled' : status.toLowerCase(), message },
      };
    };
    try {
      await handle.result();
    } catch (err) {
      if (err instanceof WorkflowFailedError) {
        const cause = err.cause;
        return (cause instanceof ApplicationFailure ? failedTurnRecord(cause) : undefined) ?? minimal(cause?.message ?? err.message);
      }
      throw err;
    }
    throw new Error(`turn ${turnId} closed as ${status} without a failure`);
  }

  const index = opts.sessions ?? rebuiltSessionIndex(client);
  const chain = createChain({
    client,
    taskQueue: opts.taskQueue,
    index,
    settings: opts.settings,
    ...(opts.tokenSealKey ? { tokenSealKey: opts.tokenSealKey } : {}),
    getTurn: (...args) => gateway.getTurn(...args),
    legacyWorkflowId: legacySessionWorkflowId(ownerKey),
    isLegacySession: opts.isLegacySession ?? legacySessionIds(client),
    ...(opts.endSeen ? { endSeen: opts.endSeen } : {}),
    ...(opts.handedOn ? { handedOn: opts.handedOn } : {}),
  });

  const gateway: TurnGateway & { reads(): TurnReads } = {
    reads: () => ({ ...reads }),

    submitMessage: (args) => chain.submitMessage(args),

    getSession: (owner, sessionId, turns) => chain.getSession(owner, sessionId, turns),

    async listSessions(owner, limit, cursor) {
      const page = await index.sessions(owner, limit, cursor);
      return { sessions: page.sessions.map(summaryOf), ...(page.next ? { next: page.next } : {}) };
    },

    async sessionSummary(owner, sessionId) {
      const entry = await index.session(owner, sessionId);
      return entry && !entry.deleted ? summaryOf(entry) : null;
    },

    async renameSession(owner, sessionId, title) {
      const entry = await index.rename(owner, sessionId, title);
      return entry ? summaryOf(entry) : null;
    },

    deleteSession: (owner, sessionId) => index.remove(owner, sessionId),

    async cancelTurn(turnId) {
      await client.workflow.getHandle(turnId).cancel();
    },

    async authorizationCompleted(turnId, server) {
      await client.workflow.getHandle(turnId).signal(authorizationCompletedSignal, { server });
    },

    async provideInput(turnId, input) {
      try {
        await client.workflow.getHandle(turnId).executeUpdate(provideInputUpdate, { args: [input] });
        return { kind: 'provided' };
      } catch (err) {
        if (err instanceof WorkflowUpdateFailedError && failureTypeOf(err.cause) === Failure.InputForbidden) return { kind: 'forbidden' };
        if (err instanceof WorkflowUpdateFailedError && failureTypeOf(err.cause) === Failure.InputNotPending) return { kind: 'not_pending' };
        if (err instanceof WorkflowNotFoundError) return { kind: 'not_pending' };
        throw err;
      }
    },

    async decideApproval(turnId, input) {
      try {
        const result = await client.workflow.getHandle(turnId).executeUpdate(approveToolCallUpdate, { args: [input] });
        return { kind: 'decided', decision: result.decision };
      } catch (err) {
        if (err instanceof WorkflowUpdateFailedError) {
          switch (failureTypeOf(err.cause)) {
            case Failure.ApprovalAlreadyDecided:
              return { kind: 'already_decided' };
            case Failure.ApprovalForbidden:
              return { kind: 'forbidden' };
            case Failure.ApprovalNotPending:
              return { kind: 'not_pending' };
            default:
              break;
          }
        }
        if (err instanceof WorkflowNotFoundError) return { kind: 'not_pending' };
        throw err;
      }
    },

    async getTurn(turnId, afterEventId, getOpts) {
      if (!TURN_ID_PATTERN.test(turnId)) return null;
      const handle = client.workflow.getHandle(turnId);
      if (getOpts?.likelyRunning) {
        try {
          const state = await queryTurn(handle, afterEventId);
          if (state.status !== 'completed' && state.status !== 'failed' && state.status !== 'cancelled') return state;
        } catch {
          // Not found, not started yet, or no worker: the full path below tells which.
        }
      }
      let status: string;
      let owner: { id: string; tenant: string } | undefined;
      try {
        reads.describes++;
        const desc = await handle.describe();
        status = desc.status.name;
        const id = desc.typedSearchAttributes.get(UserIdKey);
        const tenant = desc.typedSearchAttributes.get(TenantIdKey);
        if (id && tenant) owner = { id, tenant };
      } catch (err) {
        if (err instanceof WorkflowNotFoundError) return null;
        throw err;
      }
      const state =
        status === 'RUNNING' ? await queryTurn(handle, afterEventId) : await finalState(turnId, status, owner);
      return afterEventId ? { ...state, events: state.events.filter((e) => e.id > afterEventId) } : state;
    },

    ...listing,

    ...catalog,

    async temporalHealth() {
      try {
        await client.connection.withDeadline(Date.now() + 2_000, () => client.workflowService.getSystemInfo({}));
        return { ok: true };
      } catch (err) {
        return { ok: false, error: err instanceof Error ? err.message : String(err) };
      }
    },
  };
  return gateway;
}
