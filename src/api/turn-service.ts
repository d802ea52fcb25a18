/**
 * What a caller may do with turns, whatever the transport: submit (with limits and idempotency),
 * cancel, read, decide approvals, read the catalog and health. Shared by the HTTP routes and the
 * WebSocket; it answers with data and refuses with HttpError, and never sees a reply.
 */
import { createHash, randomBytes } from 'node:crypto';
import { RateLimiterRes } from 'rate-limiter-flexible';
import { memoryRateLimiters, type RateLimiters } from './rate-limits';
import type { ApiObserver } from '../metrics';
import type { z } from 'zod';
import { canApprove, filterCatalog } from '../core/policy';
import type { Policy } from '../shared/policy';
import type { UserContext } from '../shared/user';
import { turnId as makeTurnId } from '../shared/ids';
import { TERMINAL_STATUSES, type DirectToolCall, type PushedTurn, type TurnState } from '../shared/turn';
import type { ApprovalsInbox, DecidableApproval, Health, InputBody, PendingApprovalView, SessionMessages, TurnView, WaitingView } from './contract';
import { createArgumentValidator } from '../validation/json-schema';
import { HttpError, notFound } from './errors';
import type { TurnGateway } from './gateway';
import { SYSTEM_MESSAGES } from './system-messages';
import { summarize, type WorkerReports } from '../health/reports';
import { totalTokens, type UsageGroup, type UsageLedger, type UsageRow } from '../usage/ledger';
import type { HostConfig } from '../config';
import type { UsageQuery, UsageReport } from './contract';

/** How long a session view may lag behind a turn that has ended before it is answered as it is. */
const SESSION_CATCH_UP_MS = 2_000;

/**
 * Reads until `caughtUp` holds, or SESSION_CATCH_UP_MS has passed (then the last read stands): a
 * session records a turn's end a moment after the turn's stream said `done`.
 */
async function untilCaughtUp<T>(read: () => Promise<T>, caughtUp: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + SESSION_CATCH_UP_MS;
  for (;;) {
    const value = await read();
    if (caughtUp(value) || Date.now() > deadline) return value;
    await new Promise((r) => setTimeout(r, 15));
  }
}

export interface TurnServiceOptions {
  gateway: TurnGateway;
  /** The tool policy in force (read per request, so a reload applies): the catalog shows each caller what their model would see. */
  policy: () => Policy;
  /** Redacts tool arguments shown to anyone but the turn's owner (an approver): the audit log's rules. */
  redactArguments: (args: unknown) => unknown;
  /** Per-user and per-tenant limits on message submission (default: in memory, 60 and 600 per minute). */
  limiters?: RateLimiters;
  /** Metrics (absent: nothing counted). */
  observer?: ApiObserver;
  /**
   * A new turn was started for its owner, `position` turns behind in its session (the live hub expects
   * its pushed events, and its streams open with that: see src/live/turn-events.ts).
   */
  onSubmitted?: (turnId: string, turn: PushedTurn, position: number) => void;
  /**
   * The owner's latest turn in the session, when the live hub saw it end a moment ago (its session may
   * not have recorded that yet). Absent: no hub, nothing to wait for.
   */
  justEnded?: (owner: { id: string; tenant: string }, sessionId: string, withinMs: number) => string | undefined;
  /** What the workers last reported of their MCP servers: the health answer (no workflow per probe). */
  workerReports: WorkerReports;
  /** Token usage per turn (src/usage): daily budgets and the usage report. Absent: neither. */
  usage?: { ledger: UsageLedger; config: () => Pick<HostConfig, 'budgets' | 'prices'> };
}

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

export type TurnService = ReturnType<typeof createTurnService>;

/** Owner and tenant both match: anyone else gets the same 404 as for a missing turn. */
export const ownedBy = (state: TurnState, user: UserContext): boolean =>
  Boolean(state.owner && state.owner.id === user.id && state.owner.tenant === user.tenant);

/** Owners read their turns; an approver role of the same tenant reads the turns that asked for a decision. */
export const readableBy = (state: TurnState, user: UserContext, policy: Policy): boolean =>
  ownedBy(state, user) ||
  Boolean(state.owner && state.owner.tenant === user.tenant && state.approvals?.length && canApprove(policy, user, state.owner.id));

type PendingView = z.output<typeof PendingApprovalView>;

/** The calls of `state` waiting for a decision, with when they were asked and until when they wait. */
export function pendingApprovals(state: TurnState, timeoutMs: number, redactArguments: (args: unknown) => unknown): PendingView[] {
  return (state.approvals ?? [])
    .filter((a) => a.state === 'pending')
    .map((a) => {
      const asked = state.events.find((e) => e.type === 'approval_required' && e.data['toolCallId'] === a.toolCallId)?.at;
      const requestedAt = asked ?? new Date().toISOString();
      return {
        toolCallId: a.toolCallId,
        name: a.name,
        server: a.server,
        tool: a.tool,
        arguments: redactArguments(a.arguments),
        requestedAt,
        deadline: new Date(Date.parse(requestedAt) + timeoutMs).toISOString(),
      };
    });
}

/** The owner's pending calls of `state` with the route that decides each. */
function decidable(state: TurnState, timeoutMs: number): Array<z.output<typeof DecidableApproval>> {
  return pendingApprovals(state, timeoutMs, (args) => args).map((p) => ({ ...p, decideUrl: `/v1/turns/${state.turnId}/approvals/${p.toolCallId}` }));
}

/**
 * The public view of a turn (ARCHITECTURE.md §9); events are served by the /events stream. A reader
 * other than the owner (an approver) sees arguments redacted as in the audit log.
 */
export function turnView(state: TurnState, opts: { approvalTimeoutMs?: number; redactArguments?: (args: unknown) => unknown } = {}): TurnView {
  const redactArgs = opts.redactArguments ?? ((args: unknown) => args);
  const pending = pendingApprovals(state, opts.approvalTimeoutMs ?? 0, redactArgs);
  const waiting = new Set(pending.map((p) => p.toolCallId));
  return {
    turnId: state.turnId,
    sessionId: state.sessionId,
    status: state.status,
    ...(state.text !== undefined ? { text: state.text } : {}),
    toolCalls: state.toolCalls.map((c) => ({
      ...c,
      arguments: redactArgs(c.arguments),
      ...(waiting.has(c.id) && c.state === 'running' ? { state: 'awaiting_approval' as const } : {}),
    })),
    ...(state.error ? { error: state.error } : {}),
    steps: state.steps,
    lastEventId: state.events.at(-1)?.id ?? 0,
    ...(state.usage ? { usage: state.usage } : {}),
    ...(pending.length ? { pendingApprovals: pending } : {}),
  };
}

/** The policy's approval timeout; the workflow uses the same default. */
const approvalTimeoutMs = (policy: Policy): number => policy.approval?.timeoutMs ?? 300_000;
const INBOX_LIMIT = 100;

export function createTurnService(opts: TurnServiceOptions) {
  const { gateway } = opts;
  const answerValidator = createArgumentValidator();
  // Message submission is what costs (LLM tokens, tool side effects): limited per user and per tenant,
  // in fixed one-minute windows. A user over budget does not consume the tenant's.
  const { user: perUser, tenant: perTenant } = opts.limiters ?? memoryRateLimiters({ userPerMinute: 60, tenantPerMinute: 600 });

  const turn = async (user: UserContext, turnId: string, read: { after?: number; likelyRunning?: boolean } = {}): Promise<TurnState> => {
    const state = await unavailableOnError(() =>
      gateway.getTurn(turnId, read.after, read.likelyRunning ? { likelyRunning: true } : undefined),
    );
    if (!state || !readableBy(state, user, opts.policy())) throw notFound(`turn ${turnId}`);
    return state;
  };

  /**
   * A client that sends its next message as soon as the last turn's `done` arrives should find its
   * session idle, not queue behind a turn that has ended: the session records the end a moment after
   * the stream said so. When the hub saw the session's latest turn end just now, wait (bounded) until
   * the session no longer shows it as active. One query per round, only in that window.
   */
  const sessionCaughtUp = async (user: UserContext, sessionId: string): Promise<void> => {
    const ended = opts.justEnded?.({ id: user.id, tenant: user.tenant }, sessionId, SESSION_CATCH_UP_MS);
    if (!ended) return;
    await untilCaughtUp(
      () => gateway.getSession(user, sessionId).catch(() => null),
      (view) => !view || view.activeTurnId !== ended,
    );
  };

  /** Starts the caller's turn: 503 when Temporal is down, 409 when the session's queue is full. */
  const submit = async (user: UserContext, s: Submission): Promise<Accepted> => {
    // A client retrying with the same idempotency key gets the same turn, not a second one.
    // The key is scoped to the caller: two users sending the same key get two turns.
    const requestKey =
      s.idempotencyKey === undefined
        ? `${Date.now().toString(36)}${randomBytes(5).toString('hex')}`
        : createHash('sha256').update(`${user.tenant}\n${user.id}\n${s.idempotencyKey}`).digest('hex').slice(0, 24);
    const turnId = makeTurnId(s.sessionId, requestKey);
    await sessionCaughtUp(user, s.sessionId);
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
    if (outcome.kind === 'busy') {
      throw new HttpError(409, 'session_busy', `Too many messages are waiting in session ${s.sessionId}; retry when its current turns finish.`);
    }
    if (outcome.created) {
      opts.observer?.turnSubmitted(s.directCall ? 'tool_call' : 'message');
      opts.onSubmitted?.(turnId, { sessionId: s.sessionId, owner: { id: user.id, tenant: user.tenant } }, outcome.position);
    }
    return { turnId, position: outcome.position, created: outcome.created };
  };

  /** Refuses a new turn (429 until 00:00 UTC) once the caller or their tenant used the day's tokens. */
  const withinBudget = async (user: UserContext): Promise<void> => {
    if (!opts.usage) return;
    const { budgets } = opts.usage.config();
    const from = startOfUtcDay(new Date());
    const to = new Date(from.getTime() + DAY_MS);
    const checks = [
      ['user', budgets.tokensPerUserPerDay, user.id],
      ['tenant', budgets.tokensPerTenantPerDay, undefined],
    ] as const;
    for (const [scope, budget, userId] of checks) {
      if (budget === undefined) continue;
      const rows = await unavailableOnError(() =>
        (opts.usage as NonNullable<typeof opts.usage>).ledger.sum({ tenant: user.tenant, ...(userId ? { userId } : {}), from, to, groupBy: 'tenant' }),
      );
      const used = rows.reduce((n, r) => n + totalTokens(r), 0);
      if (used < budget) continue;
      const seconds = Math.max(1, Math.ceil((to.getTime() - Date.now()) / 1000));
      throw new HttpError(
        429,
        'token_budget_exhausted',
        `This ${scope} has used ${used} of its ${budget} tokens for today (UTC); new messages are accepted again after 00:00 UTC, in ${Math.ceil(seconds / 60)} min.`,
        seconds,
      );
    }
  };

  return {
    /**
     * Counts one submission against the caller's budgets. Separate from submit() so the HTTP route can
     * refuse before it reads the body, as it always has; 429 carries when to retry.
     */
    async admit(user: UserContext): Promise<void> {
      await withinBudget(user);
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
    },

    submit,

    /**
     * Token usage of the caller's tenant over a period, by user, session or for the tenant, with cost where the
     * host config prices the model. Callers with the `usage.read` scope (or the policy's super scope)
     * see the whole tenant; others only themselves.
     */
    async usage(user: UserContext, q: z.output<typeof UsageQuery>): Promise<z.output<typeof UsageReport>> {
      if (!opts.usage) throw new HttpError(404, 'not_found', 'Usage is not recorded by this deployment.');
      const policy = opts.policy();
      const tenantWide = user.scopes.includes(USAGE_SCOPE) || (policy.superScope !== undefined && user.scopes.includes(policy.superScope));
      if (q.userId !== undefined && q.userId !== user.id && !tenantWide) {
        throw new HttpError(403, 'forbidden', `Reading another user's usage needs the ${USAGE_SCOPE} scope.`);
      }
      const from = q.from ? new Date(q.from) : startOfUtcDay(new Date());
      const to = q.to ? new Date(q.to) : new Date();
      if (!(from < to)) throw new HttpError(400, 'invalid_request', 'query: from must be before to');
      if (to.getTime() - from.getTime() > 366 * DAY_MS) throw new HttpError(400, 'invalid_request', 'query: the period may span at most 366 days');
      const userId = q.userId ?? (tenantWide ? undefined : user.id);
      const rows = await unavailableOnError(() =>
        (opts.usage as NonNullable<typeof opts.usage>).ledger.sum({ tenant: user.tenant, ...(userId ? { userId } : {}), from, to, groupBy: q.groupBy }),
      );
      return usageReport(user.tenant, from, to, q.groupBy, rows, opts.usage.config().prices);
    },

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
      const state = await turn(user, turnId);
      // An approver may read the turn, not steer it.
      if (!ownedBy(state, user)) throw notFound(`turn ${turnId}`);
      if (TERMINAL_STATUSES.includes(state.status)) {
        throw new HttpError(409, 'already_finished', `turn ${turnId} is already ${state.status}`);
      }
      await unavailableOnError(() => gateway.cancelTurn(turnId));
    },

    /** The caller's turn with its events after `after`. */
    turn,

    async view(user: UserContext, turnId: string): Promise<TurnView> {
      const state = await turn(user, turnId);
      return turnView(state, {
        approvalTimeoutMs: approvalTimeoutMs(opts.policy()),
        ...(ownedBy(state, user) ? {} : { redactArguments: opts.redactArguments }),
      });
    },

    /** Pending decisions the caller may take: their own turns', and, for approver roles, the tenant's. */
    async approvals(user: UserContext): Promise<z.output<typeof ApprovalsInbox>> {
      const states = await unavailableOnError(() => gateway.awaitingApproval(user.tenant, INBOX_LIMIT));
      const approvals = states
        .filter((s) => s.owner && s.owner.tenant === user.tenant && canApprove(opts.policy(), user, s.owner.id))
        .flatMap((s) => {
          const redactArgs = ownedBy(s, user) ? (args: unknown) => args : opts.redactArguments;
          return pendingApprovals(s, approvalTimeoutMs(opts.policy()), redactArgs).map((p) => ({
            ...p,
            turnId: s.turnId,
            sessionId: s.sessionId,
            owner: s.owner?.id ?? '',
            decideUrl: `/v1/turns/${s.turnId}/approvals/${p.toolCallId}`,
          }));
        })
        .sort((a, b) => a.deadline.localeCompare(b.deadline));
      return { approvals };
    },

    async hasSession(user: UserContext, sessionId: string): Promise<boolean> {
      return (await unavailableOnError(() => gateway.getSession(user, sessionId))) !== null;
    },

    /**
     * What the queued turn `state` waits for: the session's turn ahead of it, and that turn's pending
     * approvals (a decision nobody takes holds the whole session up to the policy's timeout). Undefined
     * once it runs (or ended). Only the owner follows a queued turn, so arguments are not redacted.
     */
    async waitingOn(state: TurnState): Promise<WaitingView | undefined> {
      if (!state.owner || TERMINAL_STATUSES.includes(state.status)) return undefined;
      const session = await gateway.getSession(state.owner, state.sessionId);
      const behind = session?.activeTurnId;
      if (!behind || behind === state.turnId || !session?.queuedTurnIds.includes(state.turnId)) return undefined;
      const ahead = await gateway.getTurn(behind);
      if (!ahead || TERMINAL_STATUSES.includes(ahead.status)) return undefined;
      return {
        turnId: state.turnId,
        behind,
        status: ahead.status === 'awaiting_approval' ? 'awaiting_approval' : 'running',
        pendingApprovals: decidable(ahead, approvalTimeoutMs(opts.policy())),
        cancelUrl: `/v1/turns/${behind}/cancel`,
      };
    },

    async session(user: UserContext, sessionId: string): Promise<z.output<typeof SessionMessages>> {
      // A stream says `done` as the turn's last workflow task runs; its session records the answer a
      // moment later. A view that still shows an ended turn as active is read again (bounded), so a
      // client that asks right after `done` finds the answer in the transcript.
      const { view, activeTurn } = await untilCaughtUp(
        async () => {
          const v = await unavailableOnError(() => gateway.getSession(user, sessionId));
          if (!v) throw notFound(`session ${sessionId}`);
          const activeId = v.activeTurnId;
          const turn = activeId ? await unavailableOnError(() => gateway.getTurn(activeId, undefined, { likelyRunning: true })) : null;
          return { view: v, activeTurn: turn };
        },
        (r) => !r.activeTurn || !TERMINAL_STATUSES.includes(r.activeTurn.status),
      );
      const pending = activeTurn?.status === 'awaiting_approval' ? decidable(activeTurn, approvalTimeoutMs(opts.policy())) : [];
      return {
        sessionId,
        messages: view.messages,
        totalMessages: view.totalMessages,
        firstRetainedIndex: view.messages[0]?.index ?? view.totalMessages,
        ...(view.summary ? { summary: view.summary } : {}),
        ...(view.activeTurnId ? { activeTurnId: view.activeTurnId } : {}),
        queuedTurnIds: view.queuedTurnIds,
        ...(pending.length ? { pendingApprovals: pending } : {}),
      };
    },

    async decideApproval(user: UserContext, turnId: string, toolCallId: string, approve: boolean) {
      const state = await unavailableOnError(() => gateway.getTurn(turnId));
      // Same tenant only; whether this caller may decide (owner, or an approver role) is the workflow's call.
      if (!state || !state.owner || state.owner.tenant !== user.tenant) throw notFound(`turn ${turnId}`);
      const result = await unavailableOnError(() => gateway.decideApproval(turnId, { toolCallId, approve, approver: user }));
      if (result.kind === 'already_decided') throw new HttpError(409, 'already_decided', `tool call ${toolCallId} was already decided`);
      // Not pending, or not this caller's to decide: indistinguishable from outside, by design.
      if (result.kind !== 'decided') throw notFound(`pending approval ${toolCallId} of turn ${turnId}`);
      return { turnId, toolCallId, decision: result.decision };
    },

    /**
     * The owner's answer to a server's question (the turn's latest `input_required` for that call, not
     * yet answered). An accepted answer must satisfy the question's schema: the server gets nothing the
     * user did not mean to send.
     */
    async provideInput(user: UserContext, turnId: string, toolCallId: string, body: z.output<typeof InputBody>) {
      const state = await unavailableOnError(() => gateway.getTurn(turnId));
      if (!state || !state.owner || state.owner.tenant !== user.tenant || state.owner.id !== user.id) throw notFound(`turn ${turnId}`);
      const asked = openQuestion(state, toolCallId);
      if (!asked || !gateway.provideInput) throw notFound(`question on tool call ${toolCallId} of turn ${turnId}`);
      if (body.action === 'accept') {
        const check = answerValidator.validate(asked.requestedSchema, body.content ?? {}, 'answer');
        if (!check.ok) throw new HttpError(400, 'invalid_input', check.message);
      }
      const input = { toolCallId, action: body.action, ...(body.action === 'accept' ? { content: body.content ?? {} } : {}), by: { id: user.id, tenant: user.tenant } };
      const result = await unavailableOnError(() => gateway.provideInput?.(turnId, input) ?? Promise.resolve({ kind: 'not_pending' as const }));
      if (result.kind !== 'provided') throw notFound(`question on tool call ${toolCallId} of turn ${turnId}`);
      return { turnId, toolCallId, action: body.action };
    },

    /** The tools `user`'s model would be offered (the same filter the turn applies), and every server's state. */
    async catalog(user: UserContext) {
      const catalog = await unavailableOnError(() => gateway.catalog());
      return {
        tools: filterCatalog(opts.policy(), user, catalog.tools).map((t) => ({
          name: t.name,
          server: t.server,
          tool: t.tool,
          description: t.description,
          inputSchema: t.inputSchema,
          annotations: t.annotations,
        })),
        servers: catalog.servers,
      };
    },

    async servers() {
      const catalog = await unavailableOnError(() => gateway.catalog());
      return { servers: catalog.servers };
    },

    /**
     * Never throws: a Temporal outage is the answer (`down`), not an error. Starts no workflow (anyone
     * may call it): the MCP part comes from the workers' own reports, the same on every replica.
     */
    async health(): Promise<z.output<typeof Health>> {
      const [temporal, reports] = await Promise.all([
        gateway.temporalHealth(),
        opts.workerReports.current().catch((err: unknown) => err as Error),
      ]);
      const mcp: z.output<typeof Health>['mcp'] =
        reports instanceof Error ? { ok: false, servers: [], error: `worker reports unreadable: ${reports.message}` } : summarize(reports);
      const workers = reports instanceof Error ? [] : reports.map((r) => ({ worker: r.worker, reportedAt: r.reportedAt, servers: r.servers }));
      return { status: !temporal.ok ? 'down' : mcp.ok ? 'ok' : 'degraded', temporal, mcp, workers };
    },
  };
}

const DAY_MS = 24 * 60 * 60 * 1000;
/** Lets a caller read the usage of their whole tenant. */
export const USAGE_SCOPE = 'usage.read';

function startOfUtcDay(d: Date): Date {
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()));
}

function usageReport(tenant: string, from: Date, to: Date, groupBy: UsageGroup, rows: UsageRow[], prices: HostConfig['prices']): z.output<typeof UsageReport> {
  const costs = new Map<string, number>();
  const out = rows.map((r) => {
    const price = prices[r.model];
    const cost = price
      ? { amount: round6((r.promptTokens * price.promptPerMillion + (r.completionTokens + r.samplingTokens) * price.completionPerMillion) / 1_000_000), currency: price.currency }
      : undefined;
    if (cost) costs.set(cost.currency, (costs.get(cost.currency) ?? 0) + cost.amount);
    const owner = { ...(r.userId !== undefined ? { userId: r.userId } : {}), ...(r.sessionId !== undefined ? { sessionId: r.sessionId } : {}) };
    const figures = { turns: r.turns, summaries: r.summaries, promptTokens: r.promptTokens, completionTokens: r.completionTokens, samplingTokens: r.samplingTokens };
    return { ...owner, model: r.model, ...figures, totalTokens: totalTokens(r), ...(cost ? { cost } : {}) };
  });
  const sum = (k: 'turns' | 'summaries' | 'promptTokens' | 'completionTokens' | 'samplingTokens' | 'totalTokens') => out.reduce((n, r) => n + r[k], 0);
  return {
    tenant,
    from: from.toISOString(),
    to: to.toISOString(),
    groupBy,
    rows: out,
    totals: {
      turns: sum('turns'),
      summaries: sum('summaries'),
      promptTokens: sum('promptTokens'),
      completionTokens: sum('completionTokens'),
      samplingTokens: sum('samplingTokens'),
      totalTokens: sum('totalTokens'),
      cost: [...costs].map(([currency, amount]) => ({ amount: round6(amount), currency })),
    },
  };
}

const round6 = (n: number): number => Math.round(n * 1e6) / 1e6;

/** Temporal being unreachable is the service's problem, not the caller's: answer 503, not 500. */
async function unavailableOnError<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof HttpError) throw err;
    const e = new HttpError(503, 'unavailable', `${SYSTEM_MESSAGES.MAINTENANCE} (The workflow service is unreachable; try again shortly.)`);
    (e as { cause?: unknown }).cause = err;
    throw e;
  }
}

/** The question (`input_required`) on `toolCallId` that no `input_provided` has answered yet. */
function openQuestion(state: TurnState, toolCallId: string): { requestedSchema: unknown } | undefined {
  let open: { requestedSchema: unknown } | undefined;
  for (const e of state.events) {
    if (e.data['toolCallId'] !== toolCallId) continue;
    if (e.type === 'input_required') open = { requestedSchema: e.data['requestedSchema'] };
    if (e.type === 'input_provided') open = undefined;
  }
  return open;
}
