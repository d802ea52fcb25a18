/**
 * A turn's side of its session (docs/decisions/0016-the-session-hop.md): waiting for its go when the
 * API started it behind another turn, and telling the session how it ended.
 */
import { ApplicationFailure, CancelledFailure, condition, type LocalActivityInterfaceFor, proxySinks, setHandler } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { TurnRecord } from '../core/turn-record';
import { Failure } from '../shared/failures';
import type { TurnEnd } from '../shared/session';
import type { CatalogRefs } from '../shared/tool-types';
import type { ChatMessage, TurnError, TurnInput, TurnState } from '../shared/turn';
import { beginTurnSignal, type SessionSinks } from './definitions';

/** How long a turn queued in its session waits for its go before it asks the session again. */
const QUEUED_RECHECK = '10 minutes';

/** The conversation so far, and the catalog when it was listed while the turn asked for its go. */
export interface TurnGo {
  history: ChatMessage[];
  catalog?: Promise<CatalogRefs>;
}

export interface SessionGateDeps {
  /** The session-link local activities. */
  sessionLink: LocalActivityInterfaceFor<Activities>;
  listToolRefs(): Promise<CatalogRefs>;
  emit: TurnRecord['emit'];
  fail(error: TurnError): never;
}

/**
 * Registers what a queued turn listens for (call it before the workflow's first await) and returns
 * the wait for the turn's go: at once for a turn that was not queued.
 */
export function sessionGate(input: TurnInput, deps: SessionGateDeps): () => Promise<TurnGo> {
  // A turn queued in its session waits for its session's go (the previous turn finished) and gets the
  // conversation so far with it; any other turn carries its history in the input.
  let begin: { history: ChatMessage[] } | undefined;
  if (input.queued) setHandler(beginTurnSignal, (b) => void (begin ??= b));

  /**
   * Its session's answer for a turn the API started behind another one, asked while the catalog is
   * listed (both local activities of the first workflow task): go now with this memory (its turn came
   * meanwhile), or wait for `beginTurn`, and then list the catalog again.
   */
  async function join(id: string): Promise<TurnGo> {
    const ask = () => deps.sessionLink.joinSession.executeWithOptions({ summary: 'join the session' }, [{ sessionWorkflowId: id, turnId: input.turnId }]);
    const admission = ask();
    const listed = deps.listToolRefs();
    listed.catch(() => undefined);
    let joined = await admission;
    if (joined.state === 'begin') return { history: joined.history, catalog: listed };
    if (joined.state === 'queued') deps.emit('status', { status: 'running', phase: 'queued' });
    // Waiting for the go, the session is asked again now and then: a session that closed or forgot
    // this turn must not leave it waiting for ever.
    while (joined.state === 'queued') {
      if (await condition(() => begin !== undefined, QUEUED_RECHECK)) return { history: begin?.history ?? [] };
      joined = await ask();
      if (joined.state === 'begin') return { history: joined.history };
    }
    await listed.catch(() => undefined);
    return deps.fail({
      code: 'not_in_session',
      message: joined.state === 'ended' ? 'This message repeats an earlier one of the session.' : 'The session does not know this message.',
    });
  }

  return async () => (input.queued && input.sessionWorkflowId ? await join(input.sessionWorkflowId) : { history: input.history });
}

/**
 * Runs the turn; one the API started for a session then tells it how it ended, however it did, from
 * the worker as the turn's last workflow task completes (a sink: no command, no history event,
 * nothing on the turn's path). Should that signal be lost, the session asks Temporal (decision 0016).
 */
export async function announcingEnd(input: TurnInput, state: TurnState, run: () => Promise<TurnState>): Promise<TurnState> {
  const sessionWorkflowId = input.sessionWorkflowId;
  if (!sessionWorkflowId) return await run();
  const { session } = proxySinks<SessionSinks>();
  const announce = (status: TurnEnd['status'], content: string) => session.turnEnded(sessionWorkflowId, { turnId: input.turnId, status, content });
  try {
    const done = await run();
    announce('completed', done.text ?? '');
    return done;
  } catch (err) {
    if (err instanceof CancelledFailure) announce('cancelled', 'The turn was cancelled.');
    else if (err instanceof ApplicationFailure && err.type === Failure.TurnFailed) announce('failed', state.error?.message ?? err.message);
    throw err;
  }
}
