/**
 * Sessions as chains of turns (docs/decisions/0033-session-protocol-floor.md), the API's side of the
 * handshake in one place: a message is appended to its session's chain in the index and its turn is
 * started with the turns before it; the session's view and the caller's list are read from the index
 * and the turn workflows. No workflow runs per session.
 */
import { type Client, WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError } from '@temporalio/client';
import { policyForRole } from '../../core/policy';
import { contextFor } from '../../core/intents';
import { modelForRole } from '../../config/models';
import type { TurnSettings } from '../../config';
import { readLegacySession } from '../../legacy-sessions';
import { sealToken } from '../../security/seal';
import { sessionWorkflowId } from '../../shared/ids';
import { CHAIN_DEPTH, type SessionView, type TranscriptMessage, type TurnMemory } from '../../shared/session';
import type { DirectToolCall, TurnInput, TurnState } from '../../shared/turn';
import type { UserContext } from '../../shared/user';
import { SessionIdKey, TenantIdKey, TURN_WORKFLOW_TYPE, UserIdKey } from '../../workflows/definitions';
import { type ChainLink, type LinkEnd, type Owner, SessionDeleted, type SessionIndex } from '../sessions/index-store';
import { END_OF } from './session-index';

export interface ChainOptions {
  client: Client;
  taskQueue: string;
  index: SessionIndex;
  settings: () => TurnSettings;
  tokenSealKey?: string;
  /** The turn's state as the gateway reads it (null: no such workflow). */
  getTurn(turnId: string, afterEventId?: number, opts?: { likelyRunning?: boolean }): Promise<TurnState | null>;
  /** The id of a session's workflow of the protocol before (decision 0016). */
  legacyWorkflowId(owner: Owner, sessionId: string): string;
  /** Whether that id holds a session begun before the chain (src/legacy-sessions.ts: `legacySessionIds`). */
  isLegacySession(workflowId: string): Promise<boolean>;
  /** How a turn ended, when the API already heard it (the final event the live hub holds): no describe then. */
  endSeen?(turnId: string): LinkEnd | undefined;
  /** The memory a turn handed on as it ended, when the API heard it (the live hub): the next turn starts with it, reading nothing. */
  handedOn?(turnId: string): TurnMemory | undefined;
}

export type ChainSubmitOutcome = { kind: 'accepted'; created: boolean; position: number; waitingOn: string[] } | { kind: 'busy' } | { kind: 'deleted' };

/** Most ended turns whose transcript lines are kept in memory (a closed turn never changes). */
const ENDED_CACHE = 5_000;

/** What a session's transcript shows of one turn. */
interface TurnLine {
  userText?: string;
  status: TranscriptMessage['status'];
  answer?: string;
  endedAt?: string;
  summary?: string;
}


export function createChain(opts: ChainOptions) {
  const { client, index } = opts;
  const ended = new Map<string, TurnLine>();

  /** The links of `links` whose turns have not ended, in order; ends found on the way are recorded. */
  async function unended(owner: Owner, sessionId: string, links: ChainLink[]): Promise<string[]> {
    const open = await Promise.all(
      links.map(async (l) => {
        if (l.ended) return false;
        const seen = opts.endSeen?.(l.turnId);
        if (seen) {
          await index.ended(owner, sessionId, l.turnId, seen);
          return false;
        }
        let status: string;
        try {
          status = (await client.workflow.getHandle(l.turnId).describe()).status.name;
        } catch (err) {
          // Not started yet (another request of the session is a moment behind): it waits its turn.
          if (err instanceof WorkflowNotFoundError) return true;
          throw err;
        }
        const end = END_OF[status];
        if (!end) return true;
        await index.ended(owner, sessionId, l.turnId, end);
        return false;
      }),
    );
    return links.filter((_, i) => open[i]).map((l) => l.turnId);
  }

  async function submitMessage(args: { turnId: string; sessionId: string; text: string; user: UserContext; token?: string; directCall?: DirectToolCall }): Promise<ChainSubmitOutcome> {
    const { turnId, sessionId, text, user, token, directCall } = args;
    const owner = { id: user.id, tenant: user.tenant };
    const { policy, turnOptions, contextByRole, intents, modelByRole, sessionSettings } = opts.settings();
    // The running turn and those queued behind it: a full queue refuses the message before it is appended.
    const recent = await index.links(owner, sessionId, sessionSettings.maxQueuedTurns + 1);
    const repeat = recent.some((l) => l.turnId === turnId);
    const waiting = repeat ? [] : await unended(owner, sessionId, recent);
    if (waiting.length > sessionSettings.maxQueuedTurns) return { kind: 'busy' };
    let appended;
    try {
      appended = await index.append(owner, sessionId, turnId, new Date().toISOString(), CHAIN_DEPTH);
    } catch (err) {
      // Its owner deleted it: the id takes no more messages (decision 0037), nothing is started.
      if (err instanceof SessionDeleted) return { kind: 'deleted' };
      throw err;
    }
    const { link, created, before } = appended;
    const waitingOn = repeat ? await unended(owner, sessionId, before.slice(0, sessionSettings.maxQueuedTurns + 1)) : waiting.filter((id) => before.some((l) => l.turnId === id));
    const nearest = before[0]?.turnId;
    const handed = nearest === undefined ? undefined : opts.handedOn?.(nearest);
    // Reaching back from the session's first link, when the session began in a session workflow.
    const legacyId = before.length === link.seq ? opts.legacyWorkflowId(owner, sessionId) : undefined;
    const legacy = legacyId !== undefined && (await opts.isLegacySession(legacyId)) ? { legacySession: legacyId } : undefined;
    const input: TurnInput = {
      turnId,
      sessionId,
      userText: text,
      ...(directCall ? { directCall } : {}),
      user,
      // Only the caller's role rule (and the shared settings): the turn decides on nothing else.
      policy: policyForRole(policy, user.role),
      ...(token && opts.tokenSealKey ? { sealedToken: sealToken(token, opts.tokenSealKey) } : {}),
      history: [],
      chain: {
        after: before.map((l) => l.turnId),
        history: sessionSettings.history,
        ...(nearest !== undefined && handed ? { handedOn: { turnId: nearest, memory: handed } } : {}),
        // The session's first turn reads nothing (a session begun in a session workflow reads its carrier).
        ...(legacy ?? (link.seq === 0 ? { first: true as const } : {})),
      },
      // The role's context, and what intent rules matching the message add (each piece says why); the role's model.
      options: {
        ...turnOptions,
        context: contextFor({ role: user.role, text, byRole: contextByRole, base: turnOptions.context, intents: intents ?? [] }),
        ...modelForRole(user.role, modelByRole),
      },
    };
    try {
      await client.workflow.start(TURN_WORKFLOW_TYPE, {
        workflowId: turnId,
        taskQueue: opts.taskQueue,
        args: [input],
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
        typedSearchAttributes: [
          { key: SessionIdKey, value: sessionId },
          { key: UserIdKey, value: user.id },
          { key: TenantIdKey, value: user.tenant },
        ],
        // Ids only: summaries stay in clear when payloads are encrypted (docs/decisions/0019).
        staticSummary: `Turn ${turnId} of session ${sessionId}`,
      });
    } catch (err) {
      // A retried request whose first attempt started the turn: the same turn, not a second one.
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
      return { kind: 'accepted', created: false, position: waitingOn.length, waitingOn };
    }
    return { kind: 'accepted', created, position: waitingOn.length, waitingOn };
  }

  /** One turn's lines, from Temporal (an ended turn's are kept: they never change). */
  async function lineOf(link: ChainLink): Promise<TurnLine> {
    const known = ended.get(link.turnId);
    if (known) return known;
    const state = await opts.getTurn(link.turnId, undefined, { likelyRunning: !link.ended });
    if (!state) return { status: 'queued' };
    const terminal = state.status === 'completed' || state.status === 'failed' || state.status === 'cancelled';
    const line: TurnLine = {
      ...(state.userText !== undefined ? { userText: state.userText } : {}),
      status: state.status === 'running' && state.events.at(-1)?.data['phase'] === 'queued' ? 'queued' : state.status,
      ...(terminal ? { answer: state.text ?? state.error?.message ?? 'The turn was cancelled.', endedAt: state.events.at(-1)?.at ?? link.at } : {}),
      ...((state as TurnState & { memory?: { summary?: string } }).memory?.summary ? { summary: (state as TurnState & { memory?: { summary?: string } }).memory?.summary } : {}),
    };
    if (terminal) {
      if (ended.size >= ENDED_CACHE) ended.delete(ended.keys().next().value as string);
      ended.set(link.turnId, line);
    }
    return line;
  }

  /**
   * The lines of `links`, in order. Only the first turn not ended is read whole (it runs, or waits for
   * an approval); the ones behind it wait for it, so a describe says whether they still do (one
   * cancelled meanwhile is read whole, once): a view of a busy session costs one turn read, not one each.
   */
  async function linesOf(links: ChainLink[]): Promise<TurnLine[]> {
    const lines: TurnLine[] = [];
    let running = false;
    for (const link of links) {
      const known = ended.get(link.turnId);
      if (known || !running) {
        const line = known ?? (await lineOf(link));
        if (!line.endedAt && line.status !== 'queued') running = true;
        lines.push(line);
        continue;
      }
      const behind = links.slice(links.indexOf(link));
      const closed = await Promise.all(behind.map(async (l) => ended.has(l.turnId) || (await closedTurn(l.turnId))));
      for (const [i, l] of behind.entries()) lines.push(closed[i] ? (ended.get(l.turnId) ?? (await lineOf(l))) : { status: 'queued' });
      break;
    }
    return lines;
  }

  /** Whether the workflow of `turnId` has closed (a describe: no worker replays anything). */
  async function closedTurn(turnId: string): Promise<boolean> {
    try {
      return END_OF[(await client.workflow.getHandle(turnId).describe()).status.name] !== undefined;
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return false;
      throw err;
    }
  }

  /** A session begun in a session workflow (decision 0016): its view as that workflow, or its carrier once migrated (decision 0041), holds it. */
  async function legacyView(owner: Owner, sessionId: string): Promise<SessionView | null> {
    const view = (await readLegacySession(client, opts.legacyWorkflowId(owner, sessionId)))?.view;
    return view && view.owner.id === owner.id && view.owner.tenant === owner.tenant ? view : null;
  }

  /** The session's newest `turns` turns as its transcript (with a session workflow's, for one begun there). */
  async function getSession(owner: Owner, sessionId: string, turns?: number): Promise<SessionView | null> {
    const limit = turns ?? Math.max(1, Math.ceil(opts.settings().sessionSettings.transcriptLimit / 2));
    const links = await index.links(owner, sessionId, limit);
    // None: a session begun in a session workflow (unless its owner deleted it), or none at all.
    if (links.length === 0) return (await index.session(owner, sessionId))?.deleted ? null : await legacyView(owner, sessionId);
    const lines = await linesOf(links);
    // Turns that ran in a session workflow carry no user text of their own: that workflow has it.
    const legacy = lines.some((l) => l.userText === undefined) ? await legacyView(owner, sessionId).catch(() => null) : null;
    const legacyText = (turnId: string) => legacy?.messages.find((m) => m.role === 'user' && m.turnId === turnId)?.content ?? '';
    const open = links.filter((_, i) => !(lines[i] as TurnLine).endedAt).map((l) => l.turnId);
    const messages: Array<Omit<TranscriptMessage, 'index'>> = [];
    links.forEach((link, i) => {
      const line = lines[i] as TurnLine;
      const status = !line.endedAt && open[0] !== link.turnId ? 'queued' : line.status === 'queued' && open[0] === link.turnId ? 'running' : line.status;
      messages.push({ role: 'user', content: line.userText ?? legacyText(link.turnId), turnId: link.turnId, at: link.at, status });
      if (line.answer !== undefined) messages.push({ role: 'assistant', content: line.answer, turnId: link.turnId, at: line.endedAt ?? link.at, status });
    });
    // In the order things happened: a message sent while a turn ran comes before that turn's answer.
    const order = messages.map((m, i) => ({ m, i })).sort((a, b) => (a.m.at === b.m.at ? a.i - b.i : a.m.at < b.m.at ? -1 : 1));
    const first = (links[0] as ChainLink).seq * 2;
    const summary = [...lines].reverse().find((l) => l.status === 'completed')?.summary;
    return {
      sessionId,
      owner,
      ...(summary ? { summary } : {}),
      messages: order.map(({ m }, i) => ({ ...m, index: first + i })),
      totalMessages: first + messages.length,
      turnsCompleted: lines.filter((l) => l.status === 'completed').length,
      ...(open[0] ? { activeTurnId: open[0] } : {}),
      queuedTurnIds: open.slice(1),
      run: 1,
    };
  }

  return { submitMessage, getSession, unended };
}

/** The workflow id of a session of decision 0016's protocol, for `ChainOptions.legacyWorkflowId`. */
export const legacySessionWorkflowId = (ownerKey: (o: Owner) => string) => (owner: Owner, sessionId: string) => sessionWorkflowId(ownerKey(owner), sessionId);
