import { createHash } from 'node:crypto';
import {
  type Client,
  WithStartWorkflowOperation,
  WorkflowExecutionAlreadyStartedError,
  WorkflowFailedError,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
} from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { sealToken } from '../../security/seal';
import { policyForRole } from '../../core/policy';
import { sessionOfTurn, sessionWorkflowId, TURN_ID_PATTERN } from '../../shared/ids';
import type { Catalog } from '../../shared/tool-types';
import type { DirectToolCall, TurnInput, TurnState, ApprovalInput, ProvideInput } from '../../shared/turn';
import type { TurnSettings } from '../../config';
import { Failure, failureTypeOf } from '../../shared/failures';
import {
  approveToolCallUpdate,
  authorizationCompletedSignal,
  provideInputUpdate,
  SESSION_WORKFLOW_TYPE,
  SessionIdKey,
  sessionStateQuery,
  submitMessageUpdate,
  turnEndedSignal,
  TenantIdKey,
  TURN_WORKFLOW_TYPE,
  UserIdKey,
  turnStateQuery,
} from '../../workflows/definitions';
import type { UserContext } from '../../shared/user';
import { contextFor } from '../../core/intents';
import type { SessionInput, SessionView, SubmitMessageInput, SubmitMessageResult, TurnEnd } from '../../shared/session';
import { createCatalogReader } from './catalog';
import { createListing, type SessionCursor, type SessionPage, type TurnSummary } from './listing';

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
  | { kind: 'accepted'; created: boolean; position: number }
  /** The session's queue is full (SessionSettings.maxQueuedTurns). */
  | { kind: 'busy' };

export interface TurnGateway {
  /** Adds a message to the caller's session (started if new); its turn runs after those queued before it. */
  submitMessage(args: { turnId: string; sessionId: string; text: string; user: UserContext; token?: string; directCall?: DirectToolCall }): Promise<SubmitOutcome>;
  /** The caller's session, or null when they have none under that id. */
  /** The session of `owner` (the caller, or a turn's owner), or null. */
  getSession(owner: { id: string; tenant: string }, sessionId: string): Promise<SessionView | null>;
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
  /**
   * The sessions of `owner`, newest first: at most `limit` after `cursor`, and where the next page
   * starts (from Temporal's visibility, which lags by a moment; see listing.ts).
   */
  listSessions(owner: { id: string; tenant: string }, limit: number, cursor?: SessionCursor): Promise<SessionPage>;
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
}

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
        if (cause instanceof ApplicationFailure && cause.type === Failure.TurnFailed && cause.details?.[0]) {
          return cause.details[0] as TurnState;
        }
        return minimal(cause?.message ?? err.message);
      }
      throw err;
    }
    throw new Error(`turn ${turnId} closed as ${status} without a failure`);
  }

  return {
    reads: () => ({ ...reads }),

    async submitMessage({ turnId, sessionId, text, user, token, directCall }) {
      const owner = { id: user.id, tenant: user.tenant };
      const { policy, turnOptions, contextByRole, intents, sessionSettings } = opts.settings();
      const sessionWorkflow = sessionWorkflowId(ownerKey(owner), sessionId);
      const turnInput: TurnInput = {
        turnId,
        sessionId,
        userText: text,
        ...(directCall ? { directCall } : {}),
        user,
        // Only the caller's role rule (and the shared settings): the turn decides on nothing else.
        policy: policyForRole(policy, user.role),
        ...(token && opts.tokenSealKey ? { sealedToken: sealToken(token, opts.tokenSealKey) } : {}),
        history: [],
        sessionWorkflowId: sessionWorkflow,
        // The role's context, and what intent rules matching the message add (each piece says why).
        options: { ...turnOptions, context: contextFor({ role: user.role, text, byRole: contextByRole, base: turnOptions.context, intents: intents ?? [] }) },
      };
      const searchAttributes = [
        { key: SessionIdKey, value: sessionId },
        { key: UserIdKey, value: user.id },
        { key: TenantIdKey, value: user.tenant },
      ];
      // First the session takes the message (and answers with the memory when the turn may begin at
      // once), then the API starts the turn with it: no hop through the session's child start, and
      // nothing of the turn's input (policy, sealed token) in the session's history
      // (docs/decisions/0016-the-session-hop.md).
      const registration: SubmitMessageInput = { turnId, text, user, startedTurn: true };
      let result: SubmitMessageResult;
      try {
        // Update-with-start: the session workflow is created by its first message, atomically.
        result = await client.workflow.executeUpdateWithStart(submitMessageUpdate, {
          args: [registration],
          startWorkflowOperation: new WithStartWorkflowOperation(SESSION_WORKFLOW_TYPE, {
            workflowId: sessionWorkflow,
            taskQueue: opts.taskQueue,
            args: [{ sessionId, owner, settings: sessionSettings } satisfies SessionInput],
            workflowIdConflictPolicy: 'USE_EXISTING',
            typedSearchAttributes: searchAttributes,
            staticSummary: `Session ${sessionId}`,
          }),
        });
      } catch (err) {
        if (err instanceof WorkflowUpdateFailedError) {
          switch (failureTypeOf(err.cause)) {
            case Failure.SessionBusy:
              return { kind: 'busy' };
            case Failure.SessionForbidden:
              // Cannot happen through the API (the workflow id is derived from the caller), so it is a bug.
              throw new Error(`session ${sessionId}: owner mismatch`);
            default:
              break;
          }
        }
        throw err;
      }
      const startTurn = (input: TurnInput) =>
        client.workflow.start(TURN_WORKFLOW_TYPE, {
          workflowId: turnId,
          taskQueue: opts.taskQueue,
          args: [input],
          workflowIdReusePolicy: 'REJECT_DUPLICATE',
          typedSearchAttributes: searchAttributes,
          // Ids only: summaries stay in clear when payloads are encrypted (docs/decisions/0019).
          staticSummary: `Turn ${turnId} of session ${sessionId}`,
        });
      if (!result.created) {
        // The session knows this message already (a retried request): its turn exists, or existed. One
        // not ended yet is started again in case the first request died before it could (it joins).
        if (result.pending) {
          await startTurn({ ...turnInput, queued: true }).catch((err: unknown) => {
            if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
          });
        }
        return { kind: 'accepted', created: false, position: result.position };
      }
      try {
        // Behind another turn: it joins the session when it starts, and waits for its go.
        await startTurn(result.memory ? { ...turnInput, history: result.memory } : { ...turnInput, queued: true });
      } catch (err) {
        // The id is taken by an older turn than the session remembers: that turn stands, this message is a repeat.
        const repeat = err instanceof WorkflowExecutionAlreadyStartedError;
        // Any other error may come after the server created the turn (a lost answer): only a turn that
        // does not exist is reported to the session; otherwise the session checks on it by itself.
        const absent = repeat || (await client.workflow.getHandle(turnId).describe().then(() => false, (e: unknown) => e instanceof WorkflowNotFoundError));
        if (absent) {
          const end: TurnEnd = { turnId, status: 'failed', content: repeat ? 'This message repeats an earlier one; its turn already exists.' : 'The turn could not be started.' };
          // Should this signal be lost too, the session finds the turn missing when it checks on it.
          await client.workflow.getHandle(sessionWorkflow).signal(turnEndedSignal, end).catch(() => undefined);
        }
        if (repeat) return { kind: 'accepted', created: false, position: 0 };
        throw err;
      }
      return { kind: 'accepted', created: true, position: result.position };
    },

    async getSession(user, sessionId) {
      const handle = client.workflow.getHandle(sessionWorkflowId(ownerKey(user), sessionId));
      try {
        const view = await handle.query(sessionStateQuery);
        if (view.owner.id !== user.id || view.owner.tenant !== user.tenant) return null;
        return view;
      } catch (err) {
        if (err instanceof WorkflowNotFoundError) return null;
        throw err;
      }
    },

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
}
