/**
 * The `chat` tool of the host's MCP server: a message to one of the caller's sessions becomes a turn
 * (through the turn service, with its limits, budgets and idempotency), and the call answers with the
 * turn's outcome once it ends. While it runs, each durable event is a progress notification; cancelling
 * the request cancels the turn.
 *
 * A turn that stops to wait for the caller (an approval of one of its tool calls, or a downstream
 * server's question) asks the calling client when it can answer: the call returns `input_required` with
 * the question and a sealed `requestState`; the client's retry carries the answer, which is recorded as
 * the caller's decision (audited like one from the console), and the call follows the same turn on. On
 * 2026-07-28 the client does the round trip; in a 2025 session the SDK's shim sends the question as
 * `elicitation/create` and re-enters the handler with the answer. A client that cannot answer gets the turn as it stands, `awaiting_approval` with the
 * pending calls, and decides them with the approval tools.
 */
import { createHash, randomUUID } from 'node:crypto';
import { inputRequired, type CallToolResult, type InputRequiredResult, type ServerContext } from '@modelcontextprotocol/server';
import type { UserContext } from '../../shared/user';
import { TERMINAL_STATUSES, type TurnEvent, type TurnState } from '../../shared/turn';
import type { LiveTextHub } from '../../live/hub';
import { z } from 'zod';
import { IdempotencyKey, SessionId, type TurnView } from '../contract';
import type { TurnGateway } from '../gateway';
import { followTurn } from '../turn-follower';
import type { TurnService } from '../turns';
import { type ChatState, mintState, openState } from './request-state';
import { toolError } from './results';

export interface ChatDeps {
  service: TurnService;
  gateway: Pick<TurnGateway, 'getTurn'>;
  live?: LiveTextHub;
  pollMs: number;
  /** Seals `requestState` (the API's token seal key, or a key of this process when none is set). */
  stateKey: string;
}

/** The arguments of `chat` (its input schema, also for task-augmented calls). */
export function chatInput(maxMessageChars: number) {
  return z.object({
    message: z.string().trim().min(1).max(maxMessageChars).describe('What to ask or tell the host.'),
    sessionId: SessionId.optional().describe('Continue this conversation (yours alone); omit it to start a new one.'),
  });
}

/** `_meta` keys a client may use to make a retried `chat` land on the same turn. */
const IDEMPOTENCY_META_KEYS = ['idempotencyKey', 'io.github.durable-mcp-host/idempotency-key'];

/** The idempotency key a request's `_meta` carries: absent, valid, or a message saying what is wrong. */
export function idempotencyKeyOf(meta: Record<string, unknown> | undefined): { key?: string } | { error: string } {
  const raw = IDEMPOTENCY_META_KEYS.map((k) => meta?.[k]).find((v) => v !== undefined);
  if (raw === undefined) return {};
  const key = IdempotencyKey.safeParse(raw);
  return key.success ? { key: key.data } : { error: '_meta idempotencyKey: must be 1-200 printable ASCII characters without spaces' };
}

export interface ChatArgs {
  message: string;
  sessionId?: string | undefined;
  idempotencyKey?: string | undefined;
}

/** Where a turn stopped for the caller: a call to approve, or a server's question to answer. */
type Ask =
  | { kind: 'approval'; toolCallId: string; name: string; arguments: unknown }
  | { kind: 'question'; toolCallId: string; server: string; message: string; mode?: string; url?: string; requestedSchema?: unknown };

/**
 * Starts the turn of a `chat` call (as a plain call or as a task): the caller's admission (rate limits,
 * budgets) and the submission with its idempotency key, as POST /v1/sessions/:id/messages does.
 */
export async function startChatTurn(service: TurnService, user: UserContext, token: string, args: ChatArgs): Promise<{ turnId: string; sessionId: string }> {
  // A retried call without a session must land in the same new session as its first try.
  const sessionId =
    args.sessionId ??
    `mcp-${args.idempotencyKey === undefined ? randomUUID().slice(0, 18) : createHash('sha256').update(`${user.tenant}\n${user.id}\n${args.idempotencyKey}`).digest('hex').slice(0, 18)}`;
  await service.admit(user);
  const accepted = await service.submit(user, {
    sessionId,
    text: args.message,
    ...(args.idempotencyKey !== undefined ? { idempotencyKey: args.idempotencyKey } : {}),
    ...(token ? { token } : {}),
  });
  return { turnId: accepted.turnId, sessionId };
}

/** The key of the one embedded request an `input_required` answer carries. */
const ANSWER_KEY = 'answer';

export function createChat(deps: ChatDeps) {
  const { service } = deps;

  /** The caller's open question in `state`, if any: approvals first (they hold the whole session). */
  const openAsk = (state: TurnState): Ask | undefined => {
    const approval = state.approvals?.find((a) => a.state === 'pending');
    if (approval) return { kind: 'approval', toolCallId: approval.toolCallId, name: approval.name, arguments: approval.arguments };
    let question: Ask | undefined;
    for (const e of state.events) {
      const id = e.data['toolCallId'];
      if (typeof id !== 'string') continue;
      if (e.type === 'input_required') {
        question = {
          kind: 'question',
          toolCallId: id,
          server: String(e.data['server'] ?? ''),
          message: String(e.data['message'] ?? ''),
          ...(typeof e.data['mode'] === 'string' ? { mode: e.data['mode'] } : {}),
          ...(typeof e.data['url'] === 'string' ? { url: e.data['url'] } : {}),
          ...(e.data['requestedSchema'] !== undefined ? { requestedSchema: e.data['requestedSchema'] } : {}),
        };
      }
      if (e.type === 'input_provided' && question?.toolCallId === id) question = undefined;
    }
    return question;
  };

  /**
   * Follows the turn from event `after` on until it ends or stops for the caller. Returns the turn as it
   * stands then, with the id of the last event seen.
   */
  const follow = async (user: UserContext, turnId: string, after: number, ctx: ServerContext): Promise<{ state: TurnState; after: number }> => {
    const progressToken = ctx.mcpReq._meta?.progressToken;
    let progress = after;
    const feed = followTurn({ gateway: deps.gateway, ...(deps.live ? { live: deps.live } : {}) }, { turnId, after, pollMs: deps.pollMs, missingPolls: 20 });
    const stop = () => feed.stop();
    ctx.mcpReq.signal.addEventListener('abort', stop, { once: true });
    try {
      for await (const item of feed) {
        if (item.type === 'end') break;
        if (item.type !== 'event') continue;
        progress = item.event.id;
        if (progressToken !== undefined) {
          await ctx.mcpReq
            .notify({ method: 'notifications/progress', params: { progressToken, progress, message: describe(item.event) } })
            .catch(() => undefined);
        }
        if (item.event.type === 'approval_required' || item.event.type === 'input_required') {
          const state = await service.turn(user, turnId);
          if (openAsk(state)) return { state, after: progress };
        }
      }
    } finally {
      ctx.mcpReq.signal.removeEventListener('abort', stop);
      feed.stop();
    }
    return { state: await service.turn(user, turnId), after: progress };
  };

  /** Records the client's answer to what the state asked. A `cancel` leaves the question open. */
  const answer = async (user: UserContext, state: ChatState, response: unknown): Promise<void> => {
    const r = (response ?? {}) as { action?: unknown; content?: Record<string, unknown> };
    const action = r.action === 'accept' || r.action === 'decline' ? r.action : 'cancel';
    if (state.kind === 'approval') {
      if (action === 'cancel') return;
      await service.decideApproval(user, state.turnId, state.toolCallId, action === 'accept' && r.content?.['approve'] === true);
      return;
    }
    const content = action === 'accept' ? (r.content as Record<string, string | number | boolean | string[]> | undefined) : undefined;
    await service.provideInput(user, state.turnId, state.toolCallId, { action, ...(content ? { content } : {}) });
  };

  /** `canAsk`: the client can answer a question (./server.ts decides per revision). */
  return async function chat(user: UserContext, token: string, canAsk: boolean, args: ChatArgs, ctx: ServerContext): Promise<CallToolResult | InputRequiredResult> {
    let turnId: string;
    let after = 0;
    const raw = ctx.mcpReq.requestState();
    if (typeof raw === 'string') {
      const state = openState(deps.stateKey, user, raw);
      if (!state) return toolError('The requestState of this retry is not valid for this caller (altered, foreign or expired): send the message again.');
      await answer(user, state, ctx.mcpReq.inputResponses?.[ANSWER_KEY]);
      ({ turnId, after } = state);
    } else {
      ({ turnId } = await startChatTurn(service, user, token, args));
    }
    const cancelTurn = () => void service.cancel(user, turnId).catch(() => undefined);
    ctx.mcpReq.signal.addEventListener('abort', cancelTurn, { once: true });
    try {
      const { state, after: seen } = await follow(user, turnId, after, ctx);
      const ask = TERMINAL_STATUSES.includes(state.status) ? undefined : openAsk(state);
      if (ask && canAsk && !ctx.mcpReq.signal.aborted) {
        const requestState = mintState(deps.stateKey, user, { turnId, sessionId: state.sessionId, kind: ask.kind, toolCallId: ask.toolCallId, after: seen });
        return inputRequired({ inputRequests: { [ANSWER_KEY]: askOf(ask) }, requestState });
      }
      return chatResult(await service.view(user, turnId));
    } finally {
      ctx.mcpReq.signal.removeEventListener('abort', cancelTurn);
    }
  };
}

/** The embedded request that puts `ask` to the client. */
function askOf(ask: Ask) {
  if (ask.kind === 'approval') {
    return inputRequired.elicit({
      mode: 'form',
      message: `Approve the call ${ask.name} with ${JSON.stringify(ask.arguments).slice(0, 500)}?`,
      requestedSchema: {
        type: 'object',
        properties: { approve: { type: 'boolean', title: 'Approve', description: `Run ${ask.name} (false denies it).` } },
        required: ['approve'],
      },
    });
  }
  if (ask.mode === 'url' && ask.url) return inputRequired.elicitUrl({ message: `${ask.server} asks: ${ask.message}`, url: ask.url });
  const schema = (ask.requestedSchema ?? { type: 'object', properties: {} }) as { type: 'object'; properties: Record<string, never> };
  return inputRequired.elicit({ mode: 'form', message: `${ask.server} asks: ${ask.message}`, requestedSchema: schema });
}

/** One line per durable event, for progress notifications. */
function describe(e: TurnEvent): string {
  const d = e.data;
  switch (e.type) {
    case 'tool_call_started':
      return `calling ${String(d['name'])}`;
    case 'tool_call_finished':
      return `${String(d['name'] ?? d['toolCallId'])} ${d['isError'] ? 'failed' : 'finished'}`;
    case 'approval_required':
      return `${String(d['name'])} waits for approval`;
    case 'input_required':
      return `${String(d['server'])} asks: ${String(d['message'] ?? '')}`.slice(0, 200);
    case 'status':
      return String(d['phase'] ?? 'running');
    default:
      return e.type;
  }
}

/** The turn as a tool result: the answer as text, the whole view as structured content. */
export function chatResult(view: TurnView): CallToolResult {
  const calls = view.toolCalls.map((c) => `- ${c.name}: ${c.state}`).join('\n');
  const lines = [
    view.text ?? (view.status === 'awaiting_approval' ? 'The turn is waiting for approval of a tool call.' : `The turn is ${view.status}.`),
    ...(calls ? ['', 'Tool calls:', calls] : []),
    ...(view.pendingApprovals?.length
      ? ['', `Waiting for a decision (decide_approval with turnId ${view.turnId}): ${view.pendingApprovals.map((p) => `${p.toolCallId} (${p.name})`).join(', ')}`]
      : []),
    ...(view.error ? ['', `Error: ${view.error.message}`] : []),
  ];
  return {
    content: [{ type: 'text', text: lines.join('\n') }],
    structuredContent: view as unknown as Record<string, unknown>,
    isError: view.status === 'failed',
  };
}
