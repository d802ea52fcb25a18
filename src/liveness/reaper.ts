/**
 * The two halves of worker liveness inside a worker (docs/decisions/0028-worker-liveness.md): an
 * activity interceptor that records each running tool call in the registry for as long as it runs,
 * and a reaper that fails the recorded calls of dead workers through Temporal's async completion.
 *
 * Failing by task token reaches exactly the attempt that was recorded: if that attempt already ended
 * (it finished just before its worker died, or another reaper got there first), Temporal answers
 * NotFound and nothing else happens; a later attempt has another token. The failure is retryable, so
 * the call's next attempt runs at once on a live worker under the usual rules of what may be sent
 * again (decision 0014): it reads the dead attempt's last heartbeat details, which a failure by
 * token leaves in place.
 */
import type { Info } from '@temporalio/activity';
import { ActivityNotFoundError, type Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { ActivityExecuteInput, ActivityInboundCallsInterceptor, ActivityInterceptorsFactory, Next } from '@temporalio/worker';
import type { Logger } from '../logger';
import { Failure } from '../shared/failures';
import type { LivenessRegistry, Membership, Orphan } from './registry';

/** The activities recorded: tool calls (an LLM call holds no side effect; its 30 s profile is unchanged). */
export const LIVENESS_ACTIVITY_TYPES: ReadonlySet<string> = new Set(['callTool']);

/** What the reaper asks of Temporal: fail an attempt by its token; send a workflow's next task to the shared queue. */
export interface ReaperTemporal {
  fail(taskToken: Uint8Array, failure: ApplicationFailure): Promise<void>;
  resetSticky(workflowId: string): Promise<void>;
}
type Log = Pick<Logger, 'warn' | 'info'>;

/** What the next attempt's failure says (the workflow's history keeps it). */
export function workerDiedFailure(o: Pick<Orphan, 'worker' | 'attempt'>): ApplicationFailure {
  return ApplicationFailure.retryable(`the worker running attempt ${o.attempt} died (${o.worker}); the call is retried on a live worker`, Failure.WorkerLost);
}

/**
 * One round: fails every orphan (NotFound: that attempt had already ended), then drops those done.
 * The workflow's next task would first wait for the dead worker on its sticky queue (3 s, see
 * src/worker.ts) if that worker ran the workflow too: it goes to the shared queue instead.
 */
export async function reapOnce(registry: LivenessRegistry, temporal: ReaperTemporal, logger: Log): Promise<number> {
  const orphans = await registry.orphans();
  if (!orphans.length) return 0;
  const done: Orphan[] = [];
  for (const o of orphans) {
    try {
      await temporal.fail(o.taskToken, workerDiedFailure(o));
      // Best effort: without it, the sticky queue's timeout still moves the task.
      await temporal.resetSticky(o.workflowId).catch((err: unknown) => logger.warn({ workflowId: o.workflowId, err: err instanceof Error ? err.message : String(err) }, 'worker liveness: resetting the sticky queue failed'));
      logger.warn({ worker: o.worker, workflowId: o.workflowId, activityId: o.activityId, attempt: o.attempt }, 'worker liveness: a worker died during a tool call; its attempt failed for a retry on a live worker');
      done.push(o);
    } catch (err) {
      if (err instanceof ActivityNotFoundError) done.push(o);
      // Temporal unreachable: the entry stays for the next round (and the heartbeat timeout still holds).
      else logger.warn({ worker: o.worker, workflowId: o.workflowId, err: err instanceof Error ? err.message : String(err) }, 'worker liveness: failing a dead worker\'s attempt failed; trying again');
    }
  }
  await registry.forget(done);
  return done.length;
}

class RecordingInbound implements ActivityInboundCallsInterceptor {
  constructor(
    private readonly info: () => Info,
    private readonly membership: Membership,
    private readonly logger: Log,
  ) {}

  async execute(input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>): Promise<unknown> {
    const info = this.info();
    if (info.isLocal || !LIVENESS_ACTIVITY_TYPES.has(info.activityType)) return await next(input);
    let key: string | undefined;
    try {
      key = await this.membership.add({ taskToken: info.taskToken, workflowId: info.workflowExecution?.workflowId ?? '', activityId: info.activityId, attempt: info.attempt });
    } catch (err) {
      // Unrecorded, the call runs as before: a crash is then noticed by its heartbeat timeout.
      this.logger.warn({ activityId: info.activityId, err: err instanceof Error ? err.message : String(err) }, 'worker liveness: recording a running call failed');
    }
    try {
      return await next(input);
    } finally {
      if (key !== undefined) await this.membership.remove(key).catch(() => undefined);
    }
  }
}

export interface WorkerLiveness {
  /** For Worker.create's activity interceptors. */
  interceptor: ActivityInterceptorsFactory;
  /**
   * Starts reaping, once this worker can run what it fails: a worker still connecting its MCP servers
   * would take the retried call itself and spend attempts waiting for them (the heartbeat timeout runs
   * meanwhile). Its own calls are recorded from the start.
   */
  startReaping(): void;
  /** Stops reaping and ends this worker's proof of life; call after the worker has stopped. */
  stop(): Promise<void>;
}

/**
 * Joins the registry as a worker, to reap every `everyMs` from startReaping() on. A registry that cannot be joined (a
 * read-only data directory, the database down at start) leaves the worker running without it: its
 * calls then fall back to the heartbeat timeout, as the log says.
 */
export async function startWorkerLiveness(opts: { registry: LivenessRegistry; client: Pick<Client, 'activity' | 'workflowService' | 'options'>; everyMs: number; logger: Log }): Promise<WorkerLiveness | undefined> {
  const { registry, logger } = opts;
  let membership: Membership;
  try {
    membership = await registry.join();
  } catch (err) {
    logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'worker liveness: could not join the registry; a crash is noticed by the heartbeat timeout only');
    return undefined;
  }
  const { client } = opts;
  const temporal: ReaperTemporal = {
    fail: (token, failure) => client.activity.fail(token, failure),
    resetSticky: async (workflowId) => void (await client.workflowService.resetStickyTaskQueue({ namespace: client.options.namespace, execution: { workflowId } })),
  };
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let round: Promise<unknown> = Promise.resolve();
  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      round = reapOnce(registry, temporal, logger)
        .catch((err: unknown) => logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'worker liveness: reading the registry failed'))
        .finally(schedule);
    }, opts.everyMs);
  };
  let reaping = false;
  return {
    interceptor: (ctx) => ({ inbound: new RecordingInbound(() => ctx.info, membership, logger) }),
    startReaping() {
      if (reaping) return;
      reaping = true;
      schedule();
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await round;
      await membership.close();
      await registry.close();
    },
  };
}
