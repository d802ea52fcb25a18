/**
 * The workflow test tier: the real workflow code (src/workflows, bundled once per file) on a real
 * Temporal dev server, with typed fake activities instead of MCP servers and the LLM. Each test scripts
 * the activities of the workflows it starts (by workflow id) and reads back what they were called with.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { bundleWorkflowCode, DefaultLogger, NativeConnection, Runtime, Worker, type WorkerOptions, type WorkflowBundle } from '@temporalio/worker';
import type { Activities } from '../../src/activities';
import { createSessionLinkActivities, type SessionLink } from '../../src/activities/session-link';
import type { TemporalDevServer } from '../../src/cli/processes';
import type { Policy } from '../../src/shared/policy';
import type { Catalog, CatalogTool } from '../../src/shared/tool-types';
import type { LlmResponse, TurnEvent, TurnInput, TurnMemory, TurnOptions, TurnState } from '../../src/shared/turn';
import type { UserContext } from '../../src/shared/user';
import { connectClient, startTemporal } from '../helpers/system';
import { quietLogger } from '../helpers/quiet-logger';
import { NOOP_METRICS_SINKS, tracingWorkerOptions, workflowBundleOptions } from '../../src/cli/workflow-bundle';
import { createSessionLink, sessionSinks } from '../../src/session-link';

export interface WorkflowEnv {
  client: Client;
  /** The workers' connection (one per file, shared by its workers). */
  connection: NativeConnection;
  /** src/workflows bundled once, as the worker registers it (src/worker.ts: workflowsPath or the prebuilt bundle). */
  bundle: WorkflowBundle;
  stop(): Promise<void>;
}


/** One dev server (its own port and SQLite file) and one workflow bundle, built side by side. */
export async function startWorkflowEnv(): Promise<WorkflowEnv> {
  // Workers log their state changes at INFO; warnings and errors are what a failing test needs.
  try {
    Runtime.install({ logger: new DefaultLogger('WARN') });
  } catch {
    // Already installed in this module registry: keep it.
  }
  const dir = mkdtempSync(path.join(tmpdir(), 'dmh-wf-'));
  const cleanups: Array<() => Promise<unknown>> = [];
  const stop = async () => {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const bundling = bundleWorkflowCode({ ...workflowBundleOptions(), logger: quietLogger });
    let temporal: TemporalDevServer | undefined;
    try {
      temporal = await startTemporal(dir);
    } finally {
      // Started or not, the bundle must settle before this returns or throws.
      await bundling.catch(() => undefined);
    }
    const server = temporal;
    cleanups.push(() => server.proc.stop());
    // connectClient waits for the frontend and registers the custom search attributes.
    const { client, close: closeClient } = await connectClient(server.address);
    cleanups.push(closeClient);
    const connection = await NativeConnection.connect({ address: server.address });
    cleanups.push(() => connection.close());
    return { client, connection, bundle: await bundling, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** A test file's dev server and bundle, started before its tests and stopped after them; read it inside tests and hooks. */
export function workflowEnvForFile(): () => WorkflowEnv {
  let env: WorkflowEnv | undefined;
  beforeAll(async () => {
    env = await startWorkflowEnv();
  }, 120_000);
  afterAll(async () => {
    await env?.stop();
  });
  return () => {
    if (!env) throw new Error('the workflow env is not started (read it inside a test or hook)');
    return env;
  };
}

/** The two ways a worker runs turns, for describe.each: its workflow cache kept, and none (every task and query replays). */
export const WORKER_MODES = [
  { mode: 'a caching worker', options: {} as Partial<WorkerOptions>, replays: false },
  { mode: 'a worker with maxCachedWorkflows: 0 (every task replays)', options: { maxCachedWorkflows: 0 } as Partial<WorkerOptions>, replays: true },
];

/** For a describe block: fake activities, and a worker for them started before its tests and stopped after them. */
export function scriptedWorker(env: () => WorkflowEnv, options: Partial<WorkerOptions> = {}): { fakes: FakeActivities; worker: () => RunningWorker } {
  const fakes = new FakeActivities();
  let worker: RunningWorker | undefined;
  beforeAll(async () => {
    worker = await startWorker(env(), fakes.activities, options);
  });
  afterAll(async () => {
    await worker?.stop();
  });
  return {
    fakes,
    worker: () => {
      if (!worker) throw new Error('the worker is not started (read it inside a test or hook)');
      return worker;
    },
  };
}

export interface RunningWorker {
  worker: Worker;
  taskQueue: string;
  stop(): Promise<void>;
}

/** A worker on its own task queue, running until `stop`. */
export async function startWorker(env: WorkflowEnv, activities: Activities, options: Partial<WorkerOptions> = {}): Promise<RunningWorker> {
  const taskQueue = `wf-test-${randomUUID()}`;
  const worker = await Worker.create({
    connection: env.connection,
    namespace: 'default',
    taskQueue,
    workflowBundle: env.bundle,
    activities,
    // Cancellation reaches an activity with a heartbeat response: send heartbeats without delay.
    maxHeartbeatThrottleInterval: '100 ms',
    // The turn workflow reports its end to the worker's metrics sink; these suites do not count turns.
    sinks: { ...tracingWorkerOptions().sinks, ...NOOP_METRICS_SINKS },
    ...options,
  });
  let failure: unknown;
  const running = worker.run().catch((err: unknown) => {
    failure = err;
  });
  return {
    worker,
    taskQueue,
    async stop() {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await running;
      if (failure) throw failure;
    },
  };
}

/**
 * A worker for turns of a chain (decision 0033): fakes over the real session link, and the worker's
 * sink that tells a waiting turn the one before it ended.
 */
export async function startChainWorker(env: WorkflowEnv): Promise<{ fakes: FakeActivities; worker: RunningWorker; handedOn: Map<string, TurnMemory[]> }> {
  const fakes = new FakeActivities(createSessionLink(env.client));
  /** The memories each turn handed on to the API (the worker pushes them; here they are recorded). */
  const handedOn = new Map<string, TurnMemory[]>();
  const worker = await startWorker(env, fakes.activities, {
    sinks: {
      ...tracingWorkerOptions().sinks,
      ...NOOP_METRICS_SINKS,
      ...sessionSinks(
        createSessionLink(env.client),
        (_id, turnId, err) => console.error(`telling the follower of ${turnId} failed: ${String(err)}`),
        (turnId, memory) => handedOn.set(turnId, [...(handedOn.get(turnId) ?? []), memory]),
      ),
    },
  });
  return { fakes, worker, handedOn };
}

type Name = keyof Activities;
type Args<K extends Name> = Parameters<Activities[K]>;
type Impl<K extends Name> = (...args: Args<K>) => ReturnType<Activities[K]>;

/** What one workflow's activities do; anything left out gets the default below. */
export type Script = Partial<Activities>;

/**
 * The activities the test workers register: typed as the real ones (`Activities`, what
 * src/worker.ts registers), so a changed activity signature breaks these tests at compile time.
 * Calls are routed by the calling workflow's id to that workflow's script, and recorded.
 */
export class FakeActivities {
  private readonly scripts = new Map<string, Script>();
  private readonly log = new Map<string, Array<{ name: Name; args: unknown[] }>>();

  /** `link`: the real session link (src/session-link.ts) for turns the API starts beside their session. */
  constructor(link?: SessionLink) {
    this.defaults = { ...this.defaults, ...createSessionLinkActivities(link) };
  }

  readonly defaults: Activities = {
    ...createSessionLinkActivities(undefined),
    recordAudit: async () => undefined,
    listCatalog: async () => CATALOG,
    listToolRefs: async () => ({ tools: CATALOG.tools.map(({ name, server, tool }) => ({ name, server, tool })), servers: CATALOG.servers }),
    gatherContext: async () => ({ pieces: [], failures: [] }),
    callLlm: async (req) => {
      throw ApplicationFailure.nonRetryable(`no fake LLM scripted for ${req.turnId}`, 'TestNotScripted');
    },
    summarizeConversation: async () => {
      throw ApplicationFailure.nonRetryable('no fake summarizer scripted', 'TestNotScripted');
    },
    callTool: async (input) => ({ isError: false, text: `${input.server}/${input.tool} ok` }),
  };

  readonly activities: Activities = {
    recordAudit: (...args) => this.dispatch('recordAudit', args),
    listCatalog: (...args) => this.dispatch('listCatalog', args),
    listToolRefs: (...args) => this.dispatch('listToolRefs', args),
    gatherContext: (...args) => this.dispatch('gatherContext', args),
    callLlm: (...args) => this.dispatch('callLlm', args),
    summarizeConversation: (...args) => this.dispatch('summarizeConversation', args),
    callTool: (...args) => this.dispatch('callTool', args),
    predecessorMemory: (...args) => this.dispatch('predecessorMemory', args),
  };

  script(workflowId: string, script: Script): void {
    this.scripts.set(workflowId, script);
  }

  /** The arguments of every call of `name` made for `workflowId`, in call order. */
  calls<K extends Name>(workflowId: string, name: K): Array<Args<K>[0]> {
    return (this.log.get(workflowId) ?? []).filter((c) => c.name === name).map((c) => c.args[0] as Args<K>[0]);
  }

  private dispatch<K extends Name>(name: K, args: Args<K>): ReturnType<Activities[K]> {
    const workflowId = Context.current().info.workflowExecution?.workflowId ?? '(no workflow)';
    const calls = this.log.get(workflowId) ?? [];
    calls.push({ name, args });
    this.log.set(workflowId, calls);
    const impl = (this.scripts.get(workflowId)?.[name] ?? this.defaults[name]) as Impl<K>;
    return impl(...args);
  }
}

// ---------------------------------------------------------------------------------------------
// Fixtures: one owner, a policy that gates bank/transfer behind approval, a small catalog.
// ---------------------------------------------------------------------------------------------

export const OWNER: UserContext = { id: 'u-owner', role: 'member', tenant: 't-one', scopes: [] };
/** Same role, other tenant: may not decide anything of OWNER's. */
export const STRANGER: UserContext = { id: 'u-stranger', role: 'member', tenant: 't-two', scopes: [] };

export function policy(approvalTimeoutMs: number): Policy {
  return {
    roles: { member: { servers: { '*': { tools: '*' } } } },
    toolScopes: {},
    approval: { tools: ['bank/transfer'], timeoutMs: approvalTimeoutMs, approverRoles: [] },
  };
}

function tool(server: string, name: string): CatalogTool {
  return { name: `${server}__${name}`, server, tool: name, description: `${server} ${name}`, inputSchema: { type: 'object' } };
}

export const CATALOG: Catalog = {
  tools: [tool('bank', 'transfer'), tool('notes', 'add'), tool('clock', 'now'), tool('slow', 'wait')],
  servers: ['bank', 'notes', 'clock', 'slow'].map((server) => ({ server, transport: 'stdio', state: 'connected', toolCount: 1 })),
};

export const SYSTEM_PROMPT = 'You are the workflow test assistant.';

export function turnOptions(overrides: Partial<TurnOptions> = {}): TurnOptions {
  return {
    maxSteps: 4,
    systemPrompt: SYSTEM_PROMPT,
    context: { resources: [], prompts: [] },
    // One attempt: a fake that throws is a test failure to see, not something to retry.
    llmRetry: { maximumAttempts: 1, initialIntervalMs: 100, maximumIntervalMs: 100 },
    mcpRetry: { maximumAttempts: 1, initialIntervalMs: 100, maximumIntervalMs: 100 },
    maxToolResultChars: 2_000,
    timeouts: { llmStartToCloseMs: 30_000, llmHeartbeatMs: 15_000, toolStartToCloseMs: 30_000, toolHeartbeatMs: 15_000 },
    ...overrides,
  };
}

export function turnInput(turnId: string, overrides: Partial<TurnInput> = {}): TurnInput {
  return {
    turnId,
    sessionId: 'wf-tests',
    userText: 'please help',
    user: OWNER,
    policy: policy(60_000),
    history: [],
    options: turnOptions(),
    ...overrides,
  };
}

// ---------------------------------------------------------------------------------------------
// Scripted model answers and small helpers.
// ---------------------------------------------------------------------------------------------

export function say(text: string): LlmResponse {
  return { text, toolCalls: [], finishReason: 'stop' };
}

export function callTools(...calls: Array<[id: string, name: string, args: Record<string, unknown>]>): LlmResponse {
  return { text: null, toolCalls: calls.map(([id, name, args]) => ({ id, name, arguments: JSON.stringify(args) })), finishReason: 'tool_calls' };
}

export function eventTypes(state: TurnState): TurnEvent['type'][] {
  return state.events.map((e) => e.type);
}

export function eventOf(state: TurnState, type: TurnEvent['type']): TurnEvent {
  const event = state.events.find((e) => e.type === type);
  if (!event) throw new Error(`no ${type} event in ${eventTypes(state).join(', ')}`);
  return event;
}

export interface Deferred<T> {
  promise: Promise<T>;
  resolve(value: T): void;
}

export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** Waits for `promise`, failing with `message` after `ms` (a guard against hangs, not a timing assertion). */
export async function within<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(message)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Polls `read` until `done` holds (or fails after `ms`): for state another workflow task will write. */
export async function eventually<T>(read: () => Promise<T>, done: (value: T) => boolean, ms = 15_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) return value;
    await new Promise((r) => setTimeout(r, 50));
  }
}

let counter = 0;
/** A fresh turn id (valid for TURN_ID_PATTERN); unique within one dev server. */
export function newTurnId(label: string): string {
  counter += 1;
  return `turn-wf-${label}-${Date.now().toString(36)}${counter}`;
}
