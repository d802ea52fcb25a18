import { ApplicationFailure, condition, setHandler } from '@temporalio/workflow';
import { innermostCause } from './activity-failures';
import type { PlannedCall } from '../core/host-loop';
import type { TurnRecord } from '../core/turn-record';
import type { AuditRequest } from '../shared/audit';
import { Failure } from '../shared/failures';
import type { Policy } from '../shared/policy';
import { INPUT_WAIT_MS, type ElicitationAnswer, type InputAsked, type InputMode } from '../shared/turn';
import type { UserContext } from '../shared/user';
import { provideInputUpdate } from './definitions';

type AuditInput = (entry: Omit<AuditRequest, 'actor' | 'workflowId' | 'runId'>) => Promise<void>;

/**
 * Elicitation as durable human input: a server that asks the user something during a tool call makes
 * the call fail with `McpInputRequired`; the turn shows the question (`input_required`), waits for the
 * owner's answer through an update (or a timeout, or the turn's cancellation), and the call is issued
 * again with the answers so far (src/mcp/elicitation.ts hands them back to the server). The wait is a
 * durable timer and an update, so it survives worker restarts. Policy decides which servers may ask;
 * every question and answer is audited.
 */
export function handleInputs(record: TurnRecord, owner: UserContext | undefined, policy: Policy | undefined, audit: AuditInput) {
  /** Questions waiting for the owner, by tool call id; the answer once given. */
  const waiting = new Map<string, { answer?: ElicitationAnswer } & Pick<ElicitationAnswer, 'message' | 'mode' | 'url'>>();
  setHandler(
    provideInputUpdate,
    (input) => {
      const entry = waiting.get(input.toolCallId);
      if (entry) {
        const { answer: _none, ...question } = entry;
        entry.answer = { ...question, action: input.action, ...(input.content ? { content: input.content } : {}) };
      }
      return { toolCallId: input.toolCallId, action: input.action };
    },
    {
      validator: (input) => {
        const entry = waiting.get(input.toolCallId);
        if (!entry || entry.answer) throw ApplicationFailure.create({ type: Failure.InputNotPending, message: 'no question waits for an answer on that tool call', nonRetryable: true });
        if (!owner || input.by.id !== owner.id || input.by.tenant !== owner.tenant) {
          throw ApplicationFailure.create({ type: Failure.InputForbidden, message: 'only the user who started the turn answers its questions', nonRetryable: true });
        }
      },
    },
  );

  return {
    /** The owner's answer to what the server asked (`cancel` when nobody answered in time). */
    async ask(p: Extract<PlannedCall, { kind: 'call' }>, step: number, asked: InputAsked): Promise<ElicitationAnswer> {
      const server = p.tool.server;
      // The sampling policy already chose who may ask for the model; the question is only the user's leave.
      const allowed = asked.mode === 'sampling' || mayElicit(policy, server, owner);
      const mode = asked.mode ? { mode: asked.mode } : {};
      const url = asked.url !== undefined ? { url: asked.url } : {};
      await audit({ kind: 'elicitation_requested', server, tool: p.tool.tool, toolCallId: p.call.id, detail: `${asked.mode && asked.mode !== 'form' ? `${asked.mode}: ` : ''}${asked.message}`.slice(0, 200), ...(allowed ? {} : { outcome: 'denied' }) });
      if (!allowed) return { message: asked.message, ...mode, ...url, action: 'decline' };
      waiting.set(p.call.id, { message: asked.message, ...mode, ...url });
      record.emit('input_required', { toolCallId: p.call.id, name: p.tool.name, server, ...mode, message: asked.message, ...url, requestedSchema: asked.requestedSchema, step, expiresInMs: INPUT_WAIT_MS });
      const inTime = await condition(() => waiting.get(p.call.id)?.answer !== undefined, INPUT_WAIT_MS);
      const answer = waiting.get(p.call.id)?.answer ?? { message: asked.message, ...mode, ...url, action: 'cancel' as const };
      waiting.delete(p.call.id);
      record.emit('input_provided', { toolCallId: p.call.id, server, action: answer.action, ...(inTime ? {} : { timedOut: true }) });
      await audit({
        kind: 'elicitation_answered',
        server,
        tool: p.tool.tool,
        toolCallId: p.call.id,
        outcome: answer.action === 'accept' ? 'ok' : answer.action === 'decline' ? 'declined' : 'cancelled',
        ...(answer.content ? { args: answer.content } : {}),
        ...(inTime ? {} : { detail: 'timed out' }),
      });
      return answer;
    },
  };
}

/** May `server` ask this turn's user questions? Policy `elicitation` names servers, and optionally roles. */
function mayElicit(policy: Policy | undefined, server: string, owner: UserContext | undefined): boolean {
  const rule = policy?.elicitation;
  if (!rule) return true;
  if (!rule.servers.includes('*') && !rule.servers.includes(server)) return false;
  return !rule.roles || (owner !== undefined && rule.roles.includes(owner.role));
}

const MODES: readonly string[] = ['form', 'url', 'sampling'] satisfies InputMode[];

/** What the server asked, from an `McpInputRequired` activity failure (its first detail). */
export function inputAsked(err: unknown): InputAsked | undefined {
  const current = innermostCause(err);
  if (!(current instanceof ApplicationFailure)) return undefined;
  const detail = current.details?.[0] as Partial<InputAsked> | undefined;
  if (typeof detail?.message !== 'string' || typeof detail.requestedSchema !== 'object' || detail.requestedSchema === null) return undefined;
  if (detail.mode !== undefined && !MODES.includes(detail.mode)) return undefined;
  if (detail.mode === 'url' && typeof detail.url !== 'string') return undefined;
  return {
    ...(detail.mode ? { mode: detail.mode } : {}),
    message: detail.message,
    requestedSchema: detail.requestedSchema,
    ...(detail.mode === 'url' ? { url: detail.url } : {}),
  };
}
