/**
 * Session protocols at Temporal's floor (issue 23): the same no-op turn shape as `floorTurn`, wrapped in
 * each way a conversation could order its turns and hand each its memory, with no project code. What a
 * protocol costs here it costs any implementation of it; bench/sections/protocols.ts measures them side
 * by side and docs/decisions/0033-session-protocol-floor.md reads the figures.
 *
 * - `today`: the protocol the host ran until 2026-11-26 (decision 0016). The client registers the message with the
 *   session by an update (update-with-start for a new session), which answers with the memory; then it
 *   starts the turn; the turn's end reaches the session as a signal sent from the worker (a sink); the
 *   session waits for it behind a check timer started and cancelled per turn.
 * - `chain`: the protocol the host runs since (decision 0033): no session workflow. The client starts the turn with its predecessor's id (the session's
 *   head, which the client keeps); the turn reads the predecessor's result in its first workflow task (a
 *   local activity beside its first one), which is the memory.
 * - `ledger`: `chain`, plus a session workflow that only records each turn's end (signal-with-start
 *   from the worker, off the turn's path, no timer): what a transcript kept by a workflow would add.
 */
import {
  allHandlersFinished,
  CancellationScope,
  condition,
  defineSignal,
  defineUpdate,
  proxyActivities,
  proxyLocalActivities,
  proxySinks,
  setHandler,
  sleep,
  workflowInfo,
  type Sinks,
} from '@temporalio/workflow';
import type { FloorShape } from './workflows';

export interface ProtocolActivities {
  noop(): Promise<void>;
  /** The memory a closed turn handed on: its result (one history read, no workflow task). */
  predecessorMemory(turnId: string): Promise<string[]>;
}

export interface ProtocolSinks extends Sinks {
  /** Signals `floorSession` (today) or signals-with-start `floorLedger` (ledger) from the worker. */
  turnEnd: {
    toSession(sessionWorkflowId: string, turnId: string): void;
    toLedger(ledgerWorkflowId: string, turnId: string): void;
  };
}

/** The registration: answers with the memory the turn starts with. */
export const registerUpdate = defineUpdate<string[], [string]>('register');
export const turnEndedSignal = defineSignal<[string]>('turnEnded');

/** The memory handed on: the newest turn ids, bounded like a pruned history. */
const MEMORY = 10;

const local = proxyLocalActivities<ProtocolActivities>({ startToCloseTimeout: '10 seconds' });
const regular = proxyActivities<ProtocolActivities>({ startToCloseTimeout: '10 seconds' });

async function shapeRest(shape: FloorShape, localsDone: number): Promise<void> {
  for (let i = localsDone; i < shape.local; i++) await local.noop();
  for (let i = 0; i < shape.regular; i++) await regular.noop();
}

/** today: one conversation, its turns in order, each waited for behind a per-turn check timer. */
export async function floorSession(): Promise<void> {
  const queue: string[] = [];
  const ended = new Set<string>();
  const memory: string[] = [];
  setHandler(registerUpdate, (turnId) => {
    queue.push(turnId);
    return memory.slice(-MEMORY);
  });
  setHandler(turnEndedSignal, (turnId) => void ended.add(turnId));
  for (;;) {
    await condition(() => queue.length > 0);
    const turnId = queue.shift() as string;
    await condition(allHandlersFinished);
    let fired = false;
    const timer = new CancellationScope();
    void timer.run(() => sleep(60_000)).then(
      () => void (fired = true),
      () => undefined,
    );
    await condition(() => fired || ended.has(turnId));
    await condition(allHandlersFinished);
    if (!fired) timer.cancel();
    ended.delete(turnId);
    memory.push(turnId);
  }
}

/** today's turn: started with its memory, announces its end to its session from the worker. */
export async function floorSessionTurn(input: { shape: FloorShape; session: string; memory: string[] }): Promise<string[]> {
  await shapeRest(input.shape, 0);
  proxySinks<ProtocolSinks>().turnEnd.toSession(input.session, workflowInfo().workflowId);
  return [...input.memory, workflowInfo().workflowId].slice(-MEMORY);
}

/** chain and ledger: the turn takes its memory from its predecessor's result, beside its first local activity. */
export async function floorChainTurn(input: { shape: FloorShape; predecessor?: string; ledger?: string }): Promise<string[]> {
  const [memory] = await Promise.all([
    input.predecessor ? local.predecessorMemory(input.predecessor) : Promise.resolve([]),
    input.shape.local > 0 ? local.noop() : Promise.resolve(),
  ]);
  await shapeRest(input.shape, Math.min(1, input.shape.local));
  if (input.ledger) proxySinks<ProtocolSinks>().turnEnd.toLedger(input.ledger, workflowInfo().workflowId);
  return [...memory, workflowInfo().workflowId].slice(-MEMORY);
}

/** ledger: records each turn's end as it is announced; no timer, nothing on a turn's path. */
export async function floorLedger(): Promise<void> {
  const transcript: string[] = [];
  setHandler(turnEndedSignal, (turnId) => void transcript.push(turnId));
  await condition(() => false);
}
