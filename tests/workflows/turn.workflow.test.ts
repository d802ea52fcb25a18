import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Context } from '@temporalio/activity';
import { CancelledFailure, type Client, WorkflowFailedError } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import type { Activities } from '../../src/activities';
import type { Policy } from '../../src/shared/policy';
import type { Catalog, ToolOutcome } from '../../src/shared/tool-types';
import type { LlmRequest, LlmResponse, TurnInput, TurnState } from '../../src/shared/turn';
import type { UserContext } from '../../src/shared/user';
import { approveToolCallUpdate, turnStateQuery } from '../../src/workflows/definitions';
import type { TemporalDevServer } from '../../src/cli/processes';
import { connectClient, DIST, requireBuild, startTemporal } from '../helpers/system';

/**
 * The workflow tier: the real turn workflow (the prebuilt bundle the worker runs) on the real Temporal
 * dev server, with typed fake activities in place of the LLM and the MCP servers. Each case scripts the
 * model and the tools, then checks what the workflow did: approvals, parallel calls, cancel, the step
 * limit. The last block runs with no workflow cache, so every workflow task replays from history.
 */
const USER: UserContext = { id: 'u-1', role: 'member', tenant: 't-1', scopes: [] };
const CATALOG: Catalog = {
  tools: [
    { name: 'shop__charge', server: 'shop', tool: 'charge', inputSchema: { type: 'object' } },
    { name: 'shop__look', server: 'shop', tool: 'look', inputSchema: { type: 'object' } },
  ],
  servers: [{ server: 'shop', transport: 'stdio', state: 'connected', toolCount: 2 }],
};
const policy = (approvalTimeoutMs = 60_000): Policy => ({
  roles: { member: { servers: { shop: { tools: '*' } } } },
  toolScopes: {},
  approval: { tools: ['shop/charge'], timeoutMs: approvalTimeoutMs, approverRoles: [] },
});

/** What one test scripts: the model's answer per request, and the tool's. */
interface Script {
  llm(req: LlmRequest, calls: number): LlmResponse;
  tool?(input: { tool: string; arguments: Record<string, unknown> }): Promise<ToolOutcome>;
}

const call = (id: string, name: string, args: Record<string, unknown> = {}) => ({ id, name, arguments: JSON.stringify(args) });
const toolCalls = (...calls: ReturnType<typeof call>[]): LlmResponse => ({ text: null, toolCalls: calls, finishReason: 'tool_calls' });
const answer = (text: string): LlmResponse => ({ text, toolCalls: [], finishReason: 'stop' });

/** The worker's activities, faked with their real types: a signature change breaks this file. */
function fakeActivities(script: Script, seen: { llm: LlmRequest[]; tools: string[] }): Activities {
  return {
    async recordAudit() {},
    async listCatalog() {
      return CATALOG;
    },
    async gatherContext() {
      return { pieces: [], failures: [] };
    },
    async callLlm(req) {
      seen.llm.push(req);
      return script.llm(req, seen.llm.length);
    },
    async summarizeConversation() {
      return { summary: '' };
    },
    async callTool(input) {
      seen.tools.push(input.tool);
      return (await script.tool?.(input)) ?? { isError: false, text: `${input.tool} ok` };
    },
  };
}

let server: TemporalDevServer;
let client: Client;
let connection: NativeConnection;
let dir: string;
let queue = 0;

beforeAll(async () => {
  requireBuild();
  dir = mkdtempSync(path.join(tmpdir(), 'dmh-wf-'));
  server = await startTemporal(dir);
  client = await connectClient(server.address);
  connection = await NativeConnection.connect({ address: server.address });
}, 90_000);

afterAll(async () => {
  await connection?.close();
  await client?.connection.close();
  await server?.proc.stop();
  rmSync(dir, { recursive: true, force: true });
});

interface Run {
  seen: { llm: LlmRequest[]; tools: string[] };
  /** Runs `body` while a worker serves the turn; the turn's result or failure is returned. */
  result: Promise<TurnState>;
  handle: ReturnType<Client['workflow']['getHandle']>;
}

async function runTurn(
  script: Script,
  opts: { maxSteps?: number; approvalTimeoutMs?: number; maxCachedWorkflows?: number },
  body: (run: Run) => Promise<void> = async () => {},
): Promise<{ state?: TurnState; error?: unknown; seen: Run['seen'] }> {
  const taskQueue = `wf-tier-${process.pid}-${++queue}`;
  const seen = { llm: [] as LlmRequest[], tools: [] as string[] };
  const worker = await Worker.create({
    connection,
    taskQueue,
    workflowBundle: { codePath: path.join(DIST, 'src/workflow-bundle.js') },
    activities: fakeActivities(script, seen),
    ...(opts.maxCachedWorkflows !== undefined ? { maxCachedWorkflows: opts.maxCachedWorkflows } : {}),
  });
  const input: TurnInput = {
    turnId: `turn-wf-${queue}`,
    sessionId: 'wf',
    userText: 'go',
    user: USER,
    policy: policy(opts.approvalTimeoutMs),
    history: [],
    options: {
      maxSteps: opts.maxSteps ?? 8,
      context: { resources: [], prompts: [] },
      llmRetry: { maximumAttempts: 2, initialIntervalMs: 100, maximumIntervalMs: 200 },
      mcpRetry: { maximumAttempts: 2, initialIntervalMs: 100, maximumIntervalMs: 200 },
      maxToolResultChars: 10_000,
      timeouts: { llmStartToCloseMs: 10_000, llmHeartbeatMs: 2_000, toolStartToCloseMs: 20_000, toolHeartbeatMs: 1_000 },
    },
  };
  const out: { state?: TurnState; error?: unknown; seen: Run['seen'] } = { seen };
  await worker.runUntil(async () => {
    const handle = await client.workflow.start('turnWorkflow', { taskQueue, workflowId: input.turnId, args: [input] });
    const result = handle.result() as Promise<TurnState>;
    result.catch(() => undefined);
    try {
      await body({ seen, result, handle });
    } catch (err) {
      // A failed expectation must not leave the turn (and its result poll) running past the test.
      await handle.terminate('test failed').catch(() => undefined);
      throw err;
    }
    try {
      out.state = await result;
    } catch (err) {
      out.error = err;
    }
  });
  return out;
}

/** Polls the turn's query until `pred` holds (the workflow's own view, not a sleep). */
async function until(handle: Run['handle'], pred: (s: TurnState) => boolean, timeoutMs = 10_000): Promise<TurnState> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const state = await handle.query(turnStateQuery);
    if (pred(state)) return state;
    if (Date.now() > deadline) throw new Error(`turn state never matched; last: ${JSON.stringify(state.events.map((e) => e.type))}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const chargeThenAnswer: Script = {
  llm: (req, n) => (n === 1 ? toolCalls(call('c1', 'shop__charge', { amount: 5 })) : answer(`after: ${req.messages.at(-1)?.content ?? ''}`)),
};

function cases(maxCachedWorkflows?: number) {
  const cache = maxCachedWorkflows !== undefined ? { maxCachedWorkflows } : {};

  test('approval granted: the turn waits, the owner approves, the tool runs once and the model hears its result', async () => {
    const { state, seen } = await runTurn(chargeThenAnswer, { ...cache }, async ({ handle, seen: during }) => {
      const waiting = await until(handle, (s) => s.status === 'awaiting_approval');
      expect(waiting.approvals).toEqual([expect.objectContaining({ toolCallId: 'c1', state: 'pending' })]);
      expect(during.tools).toEqual([]);
      const decided = await handle.executeUpdate(approveToolCallUpdate, { args: [{ toolCallId: 'c1', approve: true, approver: USER }] });
      expect(decided).toEqual({ toolCallId: 'c1', decision: 'approved' });
    });
    expect(seen.tools).toEqual(['charge']);
    expect(state?.status).toBe('completed');
    expect(state?.text).toBe('after: charge ok');
    expect(state?.approvals).toEqual([expect.objectContaining({ toolCallId: 'c1', state: 'approved', decidedBy: 'u-1' })]);
  });

  test('approval timeout: nobody decides, the durable timer fires, the tool never runs and the model is told', async () => {
    const { state, seen } = await runTurn(chargeThenAnswer, { ...cache, approvalTimeoutMs: 1_500 });
    expect(seen.tools).toEqual([]);
    expect(state?.status).toBe('completed');
    expect(state?.text).toBe('after: Error: The user did not approve this action in time; it was not performed.');
    expect(state?.events.filter((e) => e.type === 'approval_decided').map((e) => e.data['decision'])).toEqual(['timed_out']);
  });

  test('parallel calls of one step run at the same time; their results go back in the order the model asked', async () => {
    let inFlight = 0;
    let together = false;
    const release: Array<() => void> = [];
    const { state, seen } = await runTurn(
      {
        llm: (req, n) => (n === 1 ? toolCalls(call('a', 'shop__look', { item: 1 }), call('b', 'shop__look', { item: 2 })) : answer(req.messages.filter((m) => m.role === 'tool').map((m) => m.content).join(' | '))),
        async tool(input) {
          inFlight += 1;
          // Each call waits for the other: with sequential calls this would never resolve.
          if (inFlight === 2) {
            together = true;
            for (const r of release) r();
          } else await new Promise<void>((resolve) => release.push(resolve));
          // The second-asked call finishes first, so order comes from the workflow, not from timing.
          if (input.arguments['item'] === 1) await new Promise((r) => setTimeout(r, 200));
          return { isError: false, text: `item ${String(input.arguments['item'])}` };
        },
      },
      { ...cache },
    );
    expect(together).toBe(true);
    expect(seen.tools).toEqual(['look', 'look']);
    expect(state?.text).toBe('item 1 | item 2');
    expect(state?.toolCalls.map((c) => [c.id, c.step, c.state])).toEqual([
      ['a', 1, 'completed'],
      ['b', 1, 'completed'],
    ]);
  });

  test('the step limit: a model that keeps asking for tools gets none after maxSteps and the turn ends', async () => {
    const { state, seen } = await runTurn({ llm: (_req, n) => toolCalls(call(`c${n}`, 'shop__look')) }, { ...cache, maxSteps: 2 });
    expect(seen.llm.map((r) => r.tools.length)).toEqual([2, 2, 0]);
    expect(seen.tools).toEqual(['look', 'look']);
    expect(state?.status).toBe('completed');
    expect(state?.text).toBe('I stopped after 2 tool steps without reaching an answer.');
  });
}

describe('turn workflow on the dev server, fake activities', () => {
  cases();

  test('cancel: the tool call in flight is cancelled, no further step runs, the turn ends cancelled', async () => {
    let cancelledInTool = false;
    const { error, seen } = await runTurn(
      {
        llm: (_req, n) => (n === 1 ? toolCalls(call('slow', 'shop__look')) : answer('never')),
        async tool() {
          const ctx = Context.current();
          const beat = setInterval(() => ctx.heartbeat(), 200);
          try {
            await ctx.cancelled;
          } catch {
            cancelledInTool = true;
          } finally {
            clearInterval(beat);
          }
          return { isError: false, text: 'late' };
        },
      },
      {},
      async ({ handle }) => {
        await until(handle, (s) => s.events.some((e) => e.type === 'tool_call_started'));
        await handle.cancel();
      },
    );
    expect(error).toBeInstanceOf(WorkflowFailedError);
    expect((error as WorkflowFailedError).cause).toBeInstanceOf(CancelledFailure);
    expect(cancelledInTool).toBe(true);
    expect(seen.llm).toHaveLength(1);
  });
});

describe('with no workflow cache: every workflow task replays from history', () => {
  cases(0);
});
