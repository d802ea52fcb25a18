/**
 * Starting and stopping the caller's turns: admission (rate limits and token budgets), submission
 * with idempotency keys, tool calls run without the model, and cancellation.
 */
import { createHash, randomBytes } from 'node:crypto';
import { RateLimiterRes } from 'rate-limiter-flexible';
import { memoryRateLimiters } from '../rate-limits';
import type { UserContext } from '../../shared/user';
import { turnId as makeTurnId } from '../../shared/ids';
import { TERMINAL_STATUSES, type DirectToolCall } from '../../shared/turn';
import { HttpError, notFound } from '../errors';
import { SYSTEM_MESSAGES } from '../system-messages';
import { withinBudget } from './budgets';
import type { TurnServiceOptions } from './options';
import { readTurn } from './reads';
import { unavailableOnError } from './unavailable';
import { ownedBy } from './views';

export interface Submission {
  sessionId: string;
  /** Already validated by the transport (length, blank), whose refusals differ (HTTP 413 / frame errors). */
  text: string;
  idempotencyKey?: string;
  /** The caller's bearer token, sealed for servers that forward it (see gateway.ts). */
  token?: string;
  /** Run this tool call instead of asking the model (`text` describes it for the transcript). */
  directCall?: DirectToolCall;
}

export interface Accepted {
  turnId: string;
  position: number;
  /** false: a repeated idempotency key named a turn that already exists. */
  created: boolean;
}

/** How recent an end the live hub saw counts as "over" for a new message's position. */
const JUST_ENDED_MS = 5_000;

export function createSubmission(opts: TurnServiceOptions) {
  const { gateway } = opts;
  // Message submission is what costs (LLM tokens, tool side effects): limited per user and per tenant,
  // in fixed one-minute windows. A user over budget does not consume the tenant's.
  const { user: perUser, tenant: perTenant } = opts.limiters ?? memoryRateLimiters({ userPerMinute: 60, tenantPerMinute: 600 });

  /** Starts the caller's turn: 503 when Temporal is down, 409 when the session's queue is full. */
  const submit = async (user: UserContext, s: Submission): Promise<Accepted> => {
    // A client retrying with the same idempotency key gets the same turn, not a second one.
    // The key is scoped to the caller: two users sending the same key get two turns.
    const requestKey =
      s.idempotencyKey === undefined
        ? `${Date.now().toString(36)}${randomBytes(5).toString('hex')}`
        : createHash('sha256').update(`${user.tenant}\n${user.id}\n${s.idempotencyKey}`).digest('hex').slice(0, 24);
    const turnId = makeTurnId(s.sessionId, requestKey);
    const outcome = await unavailableOnError(() =>
      gateway.submitMessage({
        turnId,
        sessionId: s.sessionId,
        text: s.text,
        user,
        ...(s.token ? { token: s.token } : {}),
        ...(s.directCall ? { directCall: s.directCall } : {}),
      }),
    );
    if (outcome.kind === 'deleted') {
      throw new HttpError(409, 'session_deleted', `Session ${s.sessionId} was deleted and takes no more messages; start a new session (another id).`);
    }
    if (outcome.kind === 'busy') {
      throw new HttpError(409, 'session_busy', `Too many messages are waiting in session ${s.sessionId}; retry when its current turns finish.`);
    }
    // A turn whose end the live hub saw a moment ago is over, though Temporal may close it a moment later.
    const justEnded = opts.justEnded?.({ id: user.id, tenant: user.tenant }, s.sessionId, JUST_ENDED_MS);
    const position = outcome.waitingOn ? outcome.waitingOn.filter((id) => id !== justEnded).length : outcome.position;
    if (outcome.created) {
      opts.observer?.turnSubmitted(s.directCall ? 'tool_call' : 'message');
      opts.onSubmitted?.(turnId, { sessionId: s.sessionId, owner: { id: user.id, tenant: user.tenant } }, position);
    }
    return { turnId, position, created: outcome.created };
  };

  const withinRate = async (user: UserContext): Promise<void> => {
    for (const [scope, limiter, key] of [
      ['user', perUser, `${user.tenant}/${user.id}`],
      ['tenant', perTenant, user.tenant],
    ] as const) {
      try {
        await limiter.consume(key);
      } catch (err) {
        if (!(err instanceof RateLimiterRes)) throw err;
        const seconds = Math.max(1, Math.ceil(err.msBeforeNext / 1000));
        throw new HttpError(
          429,
          'rate_limited',
          `${SYSTEM_MESSAGES.RATE_LIMITED} (This ${scope} may send at most ${limiter.points} messages per minute; retry in ${seconds} s.)`,
          seconds,
        );
      }
    }
  };

  return {
    /**
     * Counts one submission against the caller's budgets. Separate from submit() so the HTTP route can
     * refuse before it reads the body, as it always has; 429 carries when to retry.
     */
    async admit(user: UserContext): Promise<void> {
      await withinBudget(opts, user);
      await withinRate(user);
    },

    /** Counts a request that starts work for the caller (a fresh catalog listing) against the message rate limits only. */
    withinRate,

    submit,

    /**
     * A tool call run through a turn of the session, without the model: the policy, approvals, argument
     * validation and audit of the turn apply. A tool that no configured server offers is refused here
     * (400); one the caller may not use is the turn's to deny (and audit), as for the model.
     */
    async submitToolCall(user: UserContext, s: Omit<Submission, 'text' | 'directCall'> & { directCall: DirectToolCall }): Promise<Accepted> {
      const catalog = await unavailableOnError(() => gateway.catalog());
      const { server, tool } = s.directCall;
      if (!catalog.servers.some((x) => x.server === server)) {
        throw new HttpError(400, 'unknown_tool', `No MCP server "${server}" is configured (GET /v1/tools lists the servers and tools).`);
      }
      if (!catalog.tools.some((t) => t.server === server && t.tool === tool)) {
        throw new HttpError(400, 'unknown_tool', `Server "${server}" offers no tool "${tool}" now (GET /v1/tools lists them).`);
      }
      const args = JSON.stringify(s.directCall.arguments);
      const text = `Run ${server}/${tool} ${args.length > 500 ? `${args.slice(0, 500)}…` : args}`;
      return await submit(user, { ...s, text });
    },

    /** 404 if not the caller's, 409 once finished. */
    async cancel(user: UserContext, turnId: string): Promise<void> {
      const state = await readTurn(opts, user, turnId);
      // An approver may read the turn, not steer it.
      if (!ownedBy(state, user)) throw notFound(`turn ${turnId}`);
      if (TERMINAL_STATUSES.includes(state.status)) {
        throw new HttpError(409, 'already_finished', `turn ${turnId} is already ${state.status}`);
      }
      await unavailableOnError(() => gateway.cancelTurn(turnId));
    },
  };
}
