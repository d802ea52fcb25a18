/** The two ways a bench turn runs: the in-process host loop and the durable turn (started with the API's own gateway code). */
import { createTemporalGateway } from '../src/api/gateway';
import { policyForRole } from '../src/core/policy';
import { TURN_WORKFLOW_TYPE } from '../src/workflows/definitions';
import { sessionSettingsFrom, turnOptionsFrom } from '../src/config';
import type { TurnInput, TurnMemory, TurnResult, TurnState } from '../src/shared/turn';
import { defaultHostConfig, type TestSystem } from '../tests/helpers/system';
import { runInProcessTurn, type InProcessDeps, type InProcessResult } from './lib/in-process';
import { benchMessage, readOnlyMessage } from './lib/scripts';
import type { Policy } from '../src/shared/policy';
import type { UserContext } from '../src/shared/user';
import { SESSION } from './options';
import type { FloorShape } from './floor/workflows';
import type { IoTurn } from './floor/io-turn';
import { turnBreakdown } from './lib/history';
import { turnResult } from './lib/turn-result';

let turnCounter = 0;
/** Unique to this run, so turns and sessions never collide with an earlier run's on the same server. */
export const RUN_TAG = Date.now().toString(36);
/** A key unique within the run. */
export const nextTag = (): string => `${RUN_TAG}${(turnCounter++).toString(36)}`;
/** Every turn gets its own session unless told one (turns of one session run one after another, and the bench wants concurrency). */
export function nextTurn(toolSteps: number, readOnly = false, inSession?: string): { turnId: string; sessionId: string; text: string } {
  const key = nextTag();
  const sessionId = inSession ?? `${SESSION}-${key}`;
  return { turnId: `turn-${sessionId}-${key}`, sessionId, text: readOnly ? readOnlyMessage(key) : benchMessage(toolSteps, key) };
}

export interface Paths {
  inProcess(toolSteps: number): Promise<InProcessResult>;
  /** Resolves with the turn id, so its history can be read afterwards. `readOnly`: the 1-step read-only script instead. */
  durable(toolSteps: number, readOnly?: boolean, sessionId?: string): Promise<string>;
  /** The same turn started directly as a standalone turn workflow (no session): what the session costs. */
  direct(toolSteps: number): Promise<string>;
  /** Temporal's floor: a workflow of `shape` with no-op activities on the same server (bench/floor). */
  floor(shape: FloorShape): Promise<void>;
  /** Temporal's floor with a real turn's I/O (bench/floor/io-workflow.ts); resolves with its workflow id. */
  ioFloor(turn: IoTurn): Promise<string>;
  /** The I/O floor's schedule with no-op activities, for a turn of `calls` parallel tool calls. */
  ioSchedule(calls: number): Promise<void>;
  /** The shape of a durable turn, read from its history. */
  shapeOf(turnId: string): Promise<FloorShape>;
}

/** The floor worker's task queue (bench/floor/worker.ts). */
export const FLOOR_TASK_QUEUE = 'bench-floor';

export function makePaths(sys: TestSystem, deps: InProcessDeps, policy: Policy, user: UserContext): Paths {
  const turnOptions = turnOptionsFrom(defaultHostConfig());
  // Turns whose end the bench saw. The API hears a turn's end from its final event (the live hub), here
  // from its result: a message behind it reads nothing of it from Temporal in either case.
  const ended = new Map<string, TurnMemory | undefined>();
  // The API's own start code: same workflow id shape, input, search attributes, summary and reuse policy.
  const gateway = createTemporalGateway({
    client: sys.client,
    taskQueue: sys.taskQueue,
    settings: () => ({ policy, turnOptions, contextByRole: {}, sessionSettings: sessionSettingsFrom(defaultHostConfig()) }),
    catalogCacheMs: 60_000,
    endSeen: (turnId) => (ended.has(turnId) ? 'completed' : undefined),
    // The memory it handed on: the API hears it from the worker's push, the bench from the result.
    handedOn: (turnId) => ended.get(turnId),
  });

  const expectSteps = (where: string, toolSteps: number, steps: number, failed: number, text: string): void => {
    if (steps !== toolSteps + 1 || failed > 0 || !text.startsWith('Done:')) {
      throw new Error(`${where} turn went wrong: ${steps} LLM steps (expected ${toolSteps + 1}), ${failed} failed tool calls, text ${JSON.stringify(text.slice(0, 200))}`);
    }
  };

  return {
    async inProcess(toolSteps) {
      const { turnId, text } = nextTurn(toolSteps);
      const input: TurnInput = { turnId, sessionId: SESSION, userText: text, user, policy, history: [], options: turnOptions };
      const r = await runInProcessTurn(deps, input);
      expectSteps('in-process', toolSteps, r.steps, r.failedToolCalls, r.text);
      return r;
    },
    async floor(shape) {
      await sys.client.workflow.execute('floorTurn', { taskQueue: FLOOR_TASK_QUEUE, workflowId: `floor-${nextTag()}`, args: [shape] });
    },
    async ioFloor(turn) {
      const workflowId = `floor-io-${nextTag()}`;
      await sys.client.workflow.execute('floorIoTurn', { taskQueue: FLOOR_TASK_QUEUE, workflowId, args: [turn] });
      return workflowId;
    },
    async ioSchedule(calls) {
      await sys.client.workflow.execute('floorIoSchedule', { taskQueue: FLOOR_TASK_QUEUE, workflowId: `floor-ios-${nextTag()}`, args: [calls] });
    },
    async shapeOf(turnId) {
      const b = await turnBreakdown(sys.client.workflow.getHandle(turnId));
      return { local: b.localActivities, regular: b.activities };
    },
    async direct(toolSteps) {
      const { turnId, sessionId, text } = nextTurn(toolSteps);
      // What an idle new session hands its first turn: no history, the caller's policy slice.
      const input: TurnInput = { turnId, sessionId, userText: text, user, policy: policyForRole(policy, user.role), history: [], options: turnOptions };
      const state = (await sys.client.workflow.execute(TURN_WORKFLOW_TYPE, { workflowId: turnId, taskQueue: sys.taskQueue, args: [input] })) as TurnState;
      const failed = state.toolCalls.filter((c) => c.isError).length;
      expectSteps('direct', toolSteps, state.steps, failed, state.text ?? '');
      return turnId;
    },
    async durable(toolSteps, readOnly = false, inSession) {
      const { turnId, sessionId, text } = nextTurn(toolSteps, readOnly, inSession);
      const outcome = await gateway.submitMessage({ turnId, sessionId, text, user });
      if (outcome.kind !== 'accepted' || !outcome.created) throw new Error(`turn ${turnId} already existed`);
      const state = (await turnResult(sys.client, turnId)) as TurnResult;
      ended.set(turnId, state.memory);
      const failed = state.toolCalls.filter((c) => c.isError).length;
      expectSteps('durable', toolSteps, state.steps, failed, state.text ?? '');
      return turnId;
    },
  };
}

