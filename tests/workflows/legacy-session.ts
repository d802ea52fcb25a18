/**
 * The API's side of decision 0016's session protocol, as the gateway did it before the chain (decision
 * 0033): the message registered with the session workflow by update-with-start, then the turn started
 * beside it. The API no longer starts session workflows; sessions begun that way still run theirs until
 * they go on as chains, so this suite keeps that workflow's behaviour under test with the client it had.
 */
import {
  type Client,
  WithStartWorkflowOperation,
  WorkflowExecutionAlreadyStartedError,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
} from '@temporalio/client';
import { ownerKey } from '../../src/api/gateway';
import { Failure, failureTypeOf } from '../../src/shared/failures';
import { sessionWorkflowId } from '../../src/shared/ids';
import type { SessionInput, SessionSettings, SessionView, SubmitMessageInput, SubmitMessageResult, TurnEnd } from '../../src/shared/session';
import type { TurnInput } from '../../src/shared/turn';
import type { UserContext } from '../../src/shared/user';
import {
  SESSION_WORKFLOW_TYPE,
  SessionIdKey,
  sessionStateQuery,
  submitMessageUpdate,
  TenantIdKey,
  TURN_WORKFLOW_TYPE,
  turnEndedSignal,
  UserIdKey,
} from '../../src/workflows/definitions';
import { policy, turnOptions } from './harness';

export type LegacyOutcome = { kind: 'accepted'; created: boolean; position: number } | { kind: 'busy' };

export function legacySessions(client: Client, taskQueue: string, settings: SessionSettings) {
  return {
    async submitMessage({ turnId, sessionId, text, user }: { turnId: string; sessionId: string; text: string; user: UserContext }): Promise<LegacyOutcome> {
      const owner = { id: user.id, tenant: user.tenant };
      const sessionWorkflow = sessionWorkflowId(ownerKey(owner), sessionId);
      const turnInput: TurnInput = { turnId, sessionId, userText: text, user, policy: policy(60_000), history: [], sessionWorkflowId: sessionWorkflow, options: turnOptions() };
      const searchAttributes = [
        { key: SessionIdKey, value: sessionId },
        { key: UserIdKey, value: user.id },
        { key: TenantIdKey, value: user.tenant },
      ];
      const registration: SubmitMessageInput = { turnId, text, user, startedTurn: true };
      let result: SubmitMessageResult;
      try {
        result = await client.workflow.executeUpdateWithStart(submitMessageUpdate, {
          args: [registration],
          startWorkflowOperation: new WithStartWorkflowOperation(SESSION_WORKFLOW_TYPE, {
            workflowId: sessionWorkflow,
            taskQueue,
            args: [{ sessionId, owner, settings } satisfies SessionInput],
            workflowIdConflictPolicy: 'USE_EXISTING',
            typedSearchAttributes: searchAttributes,
          }),
        });
      } catch (err) {
        if (err instanceof WorkflowUpdateFailedError && failureTypeOf(err.cause) === Failure.SessionBusy) return { kind: 'busy' };
        throw err;
      }
      const startTurn = (input: TurnInput) =>
        client.workflow.start(TURN_WORKFLOW_TYPE, { workflowId: turnId, taskQueue, args: [input], workflowIdReusePolicy: 'REJECT_DUPLICATE', typedSearchAttributes: searchAttributes });
      if (!result.created) {
        if (result.pending) {
          await startTurn({ ...turnInput, queued: true }).catch((err: unknown) => {
            if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
          });
        }
        return { kind: 'accepted', created: false, position: result.position };
      }
      try {
        await startTurn(result.memory ? { ...turnInput, history: result.memory } : { ...turnInput, queued: true });
      } catch (err) {
        const repeat = err instanceof WorkflowExecutionAlreadyStartedError;
        const absent = repeat || (await client.workflow.getHandle(turnId).describe().then(() => false, (e: unknown) => e instanceof WorkflowNotFoundError));
        if (absent) {
          const end: TurnEnd = { turnId, status: 'failed', content: repeat ? 'This message repeats an earlier one; its turn already exists.' : 'The turn could not be started.' };
          await client.workflow.getHandle(sessionWorkflow).signal(turnEndedSignal, end).catch(() => undefined);
        }
        if (repeat) return { kind: 'accepted', created: false, position: 0 };
        throw err;
      }
      return { kind: 'accepted', created: true, position: result.position };
    },

    async getSession(owner: { id: string; tenant: string }, sessionId: string): Promise<SessionView | null> {
      try {
        return await client.workflow.getHandle(sessionWorkflowId(ownerKey(owner), sessionId)).query(sessionStateQuery);
      } catch (err) {
        if (err instanceof WorkflowNotFoundError) return null;
        throw err;
      }
    },
  };
}
