/**
 * The benchmark baseline: `npm run bench` (scripts/bench.sh builds, provides the Temporal CLI, then
 * runs this file from dist/bench/). One run measures, side by side:
 *
 *   1. pooled vs connect-per-call stdio MCP calls (before anything else runs, on a quiet machine);
 *   2. added latency per step: scripted turns with 1 and 4 tool steps, run by an in-process host loop
 *      and by the durable turn workflow (started like the API starts it, result awaited with the
 *      Temporal client), interleaved one by one; plus a few turns through the HTTP API and SSE;
 *   3. throughput at several concurrency levels, in-process vs durable;
 *   4. streaming through the HTTP API: POST → first SSE event, time to first token (first `text_delta`)
 *      against the `openai` client streaming the same request straight from the demo model
 *      (interleaved), and history events per turn (turn and session workflows) for a short and a
 *      long answer. It runs before the throughput levels; its time does not count against their budget.
 *
 * It prints tables and writes `.data/bench/latest.json`. Targets are reported, never enforced.
 * Not a test: nothing here fails on a figure; it exits non-zero only when a turn goes wrong.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { createTemporalGateway } from '../src/api/gateway';
import { AuditLog } from '../src/audit';
import { sessionSettingsFrom, turnOptionsFrom } from '../src/config';
import { createLlmClient } from '../src/llm/client';
import { McpServerHub } from '../src/mcp/pool';
import { createArgumentValidator } from '../src/mcp/validate-args';
import type { TurnInput, TurnState } from '../src/shared/turn';
import { postMessage, readSse } from '../tests/helpers/http';
import {
  defaultHostConfig,
  DEMO_USERS,
  EVERYTHING_SERVER,
  NOTES_SERVER,
  requireBuild,
  ROOT,
  startSystem,
  temporalCli,
  type TestSystem,
} from '../tests/helpers/system';
import { CATEGORIES, turnBreakdown, type Category, type TurnBreakdown } from './lib/history';
import { runInProcessTurn, type InProcessDeps, type InProcessResult } from './lib/in-process';
import { benchPooling, stdioConfig, type PoolingResult } from './lib/pooling';
import { benchMessage, benchRules, STEP_COUNTS, STREAM_REPLIES, streamMessage, type StreamReply } from './lib/scripts';
import { CpuMeter, ms, round, runConcurrent, summarize, table, type Summary } from './lib/stats';
import {
  directClient,
  directStream,
  recordedLlmRequest,
  sessionHistoryEvents,
  timedApiTurn,
  turnTimeline,
  waitSessionIdle,
  type ChatBody,
  type TimedApiTurn,
  type TurnTimeline,
} from './lib/streaming';
import type { Policy } from '../src/shared/policy';
import type { UserContext } from '../src/shared/user';
import { loadPolicyFile } from '../src/config/policy';

const TARGETS = { addedPerStepP50Ms: 5, durableTurnsPerSecond: 50, pooledSpeedup: 50, firstSseEventP50Ms: 30, addedTtftP50Ms: 50 };
const SESSION = 'bench';
const SECTIONS = ['pooling', 'latency', 'api', 'streaming', 'throughput'] as const;
type Section = (typeof SECTIONS)[number];

interface Options {
  turns: number;
  warmup: number;
  total: number;
  levels: number[];
  workers: number;
  pooled: number;
  perCall: number;
  apiTurns: number;
  streamTurns: number;
  streamWarmup: number;
  streamHistoryTurns: number;
  chunkDelayMs: number;
  budgetS: number;
  sections: Section[];
  out: string;
}

function parseOptions(): Options {
  const { values } = parseArgs({
    options: {
      turns: { type: 'string' },
      warmup: { type: 'string' },
      total: { type: 'string' },
      levels: { type: 'string' },
      workers: { type: 'string' },
      pooled: { type: 'string' },
      'per-call': { type: 'string' },
      'api-turns': { type: 'string' },
      'stream-turns': { type: 'string' },
      'stream-warmup': { type: 'string' },
      'stream-history-turns': { type: 'string' },
      'chunk-delay-ms': { type: 'string' },
      'budget-s': { type: 'string' },
      sections: { type: 'string' },
      out: { type: 'string' },
      quick: { type: 'boolean' },
      help: { type: 'boolean' },
    },
  });
  if (values.help) {
    process.stdout.write(
      [
        'usage: npm run bench -- [options]',
        '  --turns N       sequential turns per latency configuration (default 50)',
        '  --warmup N      untimed warm-up turns per configuration (default 8)',
        '  --total N       turns per throughput level (default 100)',
        '  --levels LIST   throughput concurrency levels (default 1,4,16,32)',
        '  --workers N     worker processes for the durable path (default 1)',
        '  --pooled N      pooled MCP calls per server (default 200)',
        '  --per-call N    connect-per-call MCP calls per server (default 20)',
        '  --api-turns N   turns through the HTTP API + SSE (default 30)',
        '  --stream-turns N          streaming: measured turns, each paired with a direct request (default 40)',
        '  --stream-warmup N         streaming: untimed warm-up pairs (default 5)',
        '  --stream-history-turns N  streaming: turns per answer length for the history counts (default 3)',
        '  --chunk-delay-ms N        streaming: demo model pause after each text chunk, both paths (default 2)',
        '  --budget-s N    skip a throughput level that would end after this many seconds (default 250;',
        '                  the streaming section\'s time is not counted)',
        `  --sections LIST run only these, comma-separated (default all: ${SECTIONS.join(',')})`,
        '  --out FILE      JSON results (default .data/bench/latest.json)',
        '  --quick         a smoke run with small counts',
        '',
      ].join('\n'),
    );
    process.exit(0);
  }
  const quick = values.quick === true;
  const int = (v: string | undefined, fallback: number, name: string): number => {
    if (v === undefined) return fallback;
    const n = Number(v);
    if (!Number.isInteger(n) || n < 0) throw new Error(`--${name}: expected a non-negative integer, got ${v}`);
    return n;
  };
  const levels = (values.levels ?? (quick ? '1,4' : '1,4,16,32')).split(',').map((s) => int(s.trim(), 1, 'levels'));
  if (levels.some((l) => l < 1)) throw new Error('--levels: concurrency levels must be >= 1');
  const sections = (values.sections ?? SECTIONS.join(',')).split(',').map((s) => s.trim()) as Section[];
  const unknown = sections.filter((s) => !SECTIONS.includes(s));
  if (unknown.length > 0) throw new Error(`--sections: unknown ${unknown.join(', ')}; choose from ${SECTIONS.join(', ')}`);
  return {
    turns: Math.max(1, int(values.turns, quick ? 10 : 50, 'turns')),
    warmup: int(values.warmup, quick ? 3 : 8, 'warmup'),
    total: Math.max(1, int(values.total, quick ? 24 : 100, 'total')),
    levels,
    workers: Math.max(1, int(values.workers, 1, 'workers')),
    pooled: Math.max(1, int(values.pooled, quick ? 30 : 200, 'pooled')),
    perCall: Math.max(1, int(values['per-call'], quick ? 3 : 20, 'per-call')),
    apiTurns: int(values['api-turns'], quick ? 5 : 30, 'api-turns'),
    streamTurns: Math.max(1, int(values['stream-turns'], quick ? 10 : 40, 'stream-turns')),
    streamWarmup: int(values['stream-warmup'], quick ? 2 : 5, 'stream-warmup'),
    streamHistoryTurns: Math.max(1, int(values['stream-history-turns'], quick ? 2 : 3, 'stream-history-turns')),
    chunkDelayMs: int(values['chunk-delay-ms'], 2, 'chunk-delay-ms'),
    budgetS: int(values['budget-s'], 250, 'budget-s'),
    sections,
    out: path.resolve(ROOT, values.out ?? '.data/bench/latest.json'),
  };
}

const log = (msg: string): void => {
  process.stderr.write(`[bench] ${msg}\n`);
};

// ------------------------------------------------------------------------------------ cleanup

const cleanups: Array<() => Promise<void>> = [];
let cleaning: Promise<void> | undefined;
function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    for (const c of cleanups.reverse()) await c().catch((err: unknown) => log(`cleanup: ${String(err)}`));
  })();
  return cleaning;
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    log(`${signal}: stopping everything this run started`);
    void cleanup().then(() => process.exit(130));
  });
}

// ------------------------------------------------------------------------------------ turns

let turnCounter = 0;
const runTag = Date.now().toString(36);
/** Every turn gets its own session: turns of one session run one after another, and the bench wants concurrency. */
function nextTurn(toolSteps: number): { turnId: string; sessionId: string; text: string } {
  const key = `${runTag}${(turnCounter++).toString(36)}`;
  const sessionId = `${SESSION}-${key}`;
  return { turnId: `turn-${sessionId}-${key}`, sessionId, text: benchMessage(toolSteps, key) };
}

interface Paths {
  inProcess(toolSteps: number): Promise<InProcessResult>;
  /** Resolves with the turn id, so its history can be read afterwards. */
  durable(toolSteps: number): Promise<string>;
}

function makePaths(sys: TestSystem, deps: InProcessDeps, policy: Policy, user: UserContext): Paths {
  const turnOptions = turnOptionsFrom(defaultHostConfig());
  // The API's own start code: same workflow id shape, input, search attributes, summary and reuse policy.
  const gateway = createTemporalGateway({
    client: sys.client,
    taskQueue: sys.taskQueue,
    turnOptions,
    sessionSettings: sessionSettingsFrom(defaultHostConfig()),
    policy,
    catalogCacheMs: 60_000,
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
    async durable(toolSteps) {
      const { turnId, sessionId, text } = nextTurn(toolSteps);
      const outcome = await gateway.submitMessage({ turnId, sessionId, text, user });
      if (outcome.kind !== 'accepted' || !outcome.created) throw new Error(`turn ${turnId} already existed`);
      const state = (await sys.client.workflow.getHandle(turnId).result()) as TurnState;
      const failed = state.toolCalls.filter((c) => c.isError).length;
      expectSteps('durable', toolSteps, state.steps, failed, state.text ?? '');
      return turnId;
    },
  };
}

// ------------------------------------------------------------------------------------ sections

interface LatencyRow {
  toolSteps: number;
  llmSteps: number;
  turns: number;
  inProcess: Summary;
  durable: Summary;
  addedPerTurn: { p50: number; p99: number };
  addedPerStep: { p50: number; p99: number };
  /** Mean wall time per in-process turn inside LLM calls and tool phases: the work itself. */
  inProcessWork: { llmMs: number; toolMs: number };
  breakdown: { spanMean: number; outsideHistoryMean: number; byCategoryMean: Record<Category, number>; workflowTasks: number; activities: number; historyEvents: number; historyBytes: number };
  /** CPU ms per durable turn of the Temporal dev server and the worker process(es) (idle otherwise). */
  cpuPerDurableTurn: { temporal: number; workers: number };
}

interface Pids {
  temporal: number;
  workers: number[];
}

function meter(pids: Pids, withBench: boolean): CpuMeter {
  const named: Record<string, number> = { temporal: pids.temporal };
  pids.workers.forEach((pid, i) => (named[`worker${i}`] = pid));
  if (withBench) named['bench'] = process.pid;
  return new CpuMeter(named);
}

function cpuSplit(used: Record<string, number>, turns: number): { temporal: number; workers: number; bench?: number } {
  const workers = Object.entries(used).filter(([k]) => k.startsWith('worker')).reduce((a, [, v]) => a + v, 0);
  return {
    temporal: (used['temporal'] ?? Number.NaN) / turns,
    workers: workers / turns,
    ...(used['bench'] !== undefined ? { bench: used['bench'] / turns } : {}),
  };
}

async function latencySection(sys: TestSystem, pids: Pids, paths: Paths, opts: Options, resetNotes: () => void): Promise<LatencyRow[]> {
  const rows: LatencyRow[] = [];
  for (const toolSteps of STEP_COUNTS) {
    resetNotes();
    log(`latency: ${toolSteps} tool step(s): ${opts.warmup} warm-up + ${opts.turns} measured turns per path, interleaved`);
    for (let i = 0; i < opts.warmup; i++) {
      await paths.inProcess(toolSteps);
      await paths.durable(toolSteps);
    }
    const inProcess: number[] = [];
    const durable: number[] = [];
    const ids: string[] = [];
    const work = { llmMs: 0, toolMs: 0 };
    const cpu = meter(pids, false);
    for (let i = 0; i < opts.turns; i++) {
      // Alternate which path goes first so neither always runs right after the other.
      const order = i % 2 === 0 ? (['in', 'du'] as const) : (['du', 'in'] as const);
      for (const which of order) {
        const t0 = performance.now();
        if (which === 'in') {
          const r = await paths.inProcess(toolSteps);
          inProcess.push(performance.now() - t0);
          work.llmMs += r.llmMs / opts.turns;
          work.toolMs += r.toolMs / opts.turns;
        } else {
          ids.push(await paths.durable(toolSteps));
          durable.push(performance.now() - t0);
        }
      }
    }
    const cpuUsed = cpuSplit(cpu.stop(), opts.turns);
    const breakdowns: TurnBreakdown[] = [];
    for (const id of ids) breakdowns.push(await turnBreakdown(sys.client.workflow.getHandle(id)));
    const mean = (f: (b: TurnBreakdown) => number) => breakdowns.reduce((a, b) => a + f(b), 0) / breakdowns.length;
    const byCategoryMean = Object.fromEntries(CATEGORIES.map((c) => [c, mean((b) => b.byCategory[c])])) as Record<Category, number>;
    const spanMean = mean((b) => b.spanMs);
    const inS = summarize(inProcess);
    const duS = summarize(durable);
    const llmSteps = toolSteps + 1;
    rows.push({
      toolSteps,
      llmSteps,
      turns: opts.turns,
      inProcess: inS,
      durable: duS,
      addedPerTurn: { p50: duS.p50 - inS.p50, p99: duS.p99 - inS.p99 },
      addedPerStep: { p50: (duS.p50 - inS.p50) / llmSteps, p99: (duS.p99 - inS.p99) / llmSteps },
      inProcessWork: work,
      cpuPerDurableTurn: { temporal: cpuUsed.temporal, workers: cpuUsed.workers },
      breakdown: {
        spanMean,
        outsideHistoryMean: duS.mean - spanMean,
        byCategoryMean,
        workflowTasks: mean((b) => b.workflowTasks),
        activities: mean((b) => b.activities),
        historyEvents: mean((b) => b.historyEvents),
        historyBytes: mean((b) => b.historyBytes),
      },
    });
  }
  return rows;
}

async function apiSection(sys: TestSystem, opts: Options, resetNotes: () => void): Promise<Summary | undefined> {
  if (opts.apiTurns === 0) return undefined;
  resetNotes();
  log(`HTTP API: ${opts.apiTurns} sequential 1-step turns, POST → SSE 'done' (SSE poll 25 ms as set by startSystem)`);
  const latencies: number[] = [];
  for (let i = 0; i < opts.apiTurns + 3; i++) {
    const { text } = nextTurn(1);
    const t0 = performance.now();
    const post = await postMessage(sys.apiUrl, SESSION, text);
    if (post.status !== 202) throw new Error(`POST answered ${post.status}: ${JSON.stringify(post.body)}`);
    const events = await readSse(`${sys.apiUrl}${post.body['eventsUrl'] as string}`, {
      stopAfter: (e) => e.event === 'done' || e.event === 'error',
      timeoutMs: 60_000,
    });
    const last = events[events.length - 1];
    if (last?.event !== 'done') throw new Error(`API turn ended with ${last?.event ?? 'no events'}`);
    if (i >= 3) latencies.push(performance.now() - t0); // the first three are warm-up
  }
  return summarize(latencies);
}

interface StreamingHistoryRow {
  reply: StreamReply;
  chars: number;
  turns: number;
  /** text_delta events the SSE client received per turn (mean). */
  deltasMean: number;
  /** History events of each turn workflow. */
  turnEvents: number[];
  turnBytesMean: number;
  /** Events each turn added to the session workflow's history (the session's first turn excluded). */
  sessionEventsAdded: number[];
}

interface StreamingResult {
  chunkDelayMs: number;
  turns: number;
  warmup: number;
  /** POST → first SSE event of any kind, and what that event was. */
  firstEvent: Summary;
  firstEventTypes: Record<string, number>;
  post: Summary;
  sseHeaders: Summary;
  ttft: { direct: Summary; durable: Summary; added: { p50: number; p95: number; p99: number }; pairedAddedP50: number };
  durableDone: Summary;
  directTotal: Summary;
  /** Medians of when each step before the first token happened, ms after the POST started. */
  timeline: Record<'postAnswered' | 'turnStarted' | 'firstSseEvent' | 'turnBegun' | 'llmScheduled' | 'llmStarted' | 'llmRequestAtModel' | 'firstDelta', number>;
  sseRetries: number;
  /** Turns whose live text (from text_delta offsets) differed from the final text. */
  liveTextMismatches: number;
  ttftSession: { turns: number; events: number; runs: number; turnEventsMean: number; turnEventsMin: number; turnEventsMax: number };
  history: { rows: StreamingHistoryRow[]; sessionFirstTurnEvents: number; sessionRuns: number };
}

async function streamingSection(sys: TestSystem, opts: Options, user: UserContext): Promise<StreamingResult> {
  const owner = { id: user.id, tenant: user.tenant };
  const token = await sys.token('admin');
  const openai = directClient(sys.model);
  // A fixed pause after every text chunk for every request of this section, durable and direct alike.
  sys.model.setFaults([{ chunkDelayMs: opts.chunkDelayMs, times: 1_000_000 }]);
  sys.model.resetRequests();
  try {
    // One conversation, as a chat client would send it: each message waits for the previous answer
    // and for the session to settle (the user reads the answer before typing the next one).
    const sessionId = `stream-${runTag}`;
    let lastBody: ChatBody | undefined;
    const expected = STREAM_REPLIES.short;
    let liveTextMismatches = 0;
    const durable = async (): Promise<TimedApiTurn & { llmRequestAtModel: number }> => {
      const tag = `${runTag}${(turnCounter++).toString(36)}`;
      const t = await timedApiTurn(sys.apiUrl, token, sessionId, streamMessage('short', tag));
      if (t.finalText !== expected) throw new Error(`streaming turn ${t.turnId} answered ${JSON.stringify(t.finalText)}`);
      if (t.liveText !== expected) liveTextMismatches += 1;
      const req = recordedLlmRequest(sys.model, tag);
      lastBody = req.body;
      await waitSessionIdle(sys.client, owner, sessionId);
      return { ...t, llmRequestAtModel: req.atEpoch - t.t0Epoch };
    };
    const direct = async () => {
      if (!lastBody) throw new Error('no LLM request recorded yet');
      const r = await directStream(openai, lastBody);
      if (r.text !== expected) throw new Error(`direct stream answered ${JSON.stringify(r.text)}`);
      return r;
    };

    log(`streaming: ${opts.streamWarmup} warm-up + ${opts.streamTurns} measured turns through POST + SSE in one session, each paired with a direct openai stream of the same request (chunk delay ${opts.chunkDelayMs} ms)`);
    for (let i = 0; i < opts.streamWarmup; i++) {
      await durable();
      await direct();
    }
    liveTextMismatches = 0;
    const turns: Array<TimedApiTurn & { llmRequestAtModel: number }> = [];
    const directs: Array<Awaited<ReturnType<typeof direct>>> = [];
    if (!lastBody) await durable(); // without warm-up, the first direct request needs a recorded body
    for (let i = 0; i < opts.streamTurns; i++) {
      // Alternate which path goes first, as in the latency section.
      if (i % 2 === 0) {
        directs.push(await direct());
        turns.push(await durable());
      } else {
        turns.push(await durable());
        directs.push(await direct());
      }
    }
    const timelines: TurnTimeline[] = [];
    for (const t of turns) timelines.push(await turnTimeline(sys.client, t.turnId, t.t0Epoch));
    const session = await sessionHistoryEvents(sys.client, sessionId);
    const sessionTurns = opts.streamWarmup + opts.streamTurns + (opts.streamWarmup === 0 ? 1 : 0);

    const ttftDurable = turns.map((t) => t.firstDeltaMs ?? Number.NaN);
    if (ttftDurable.some((v) => Number.isNaN(v))) throw new Error('a streaming turn got no text_delta before done');
    const ttftDirect = directs.map((d) => d.ttftMs);
    const du = summarize(ttftDurable);
    const di = summarize(ttftDirect);
    const firstEventTypes: Record<string, number> = {};
    for (const t of turns) firstEventTypes[t.firstEventType] = (firstEventTypes[t.firstEventType] ?? 0) + 1;
    const median = (xs: number[]): number => summarize(xs).p50;

    // History per turn against the length of the answer, and what each turn adds to the session.
    const histSession = `streamhist-${runTag}`;
    log(`streaming: history per turn, ${opts.streamHistoryTurns} turns each of a ${STREAM_REPLIES.short.length}- and a ${STREAM_REPLIES.long.length}-character answer, alternating, in one session`);
    const rows = new Map<StreamReply, { deltas: number[]; turnEvents: number[]; turnBytes: number[]; sessionEventsAdded: number[] }>();
    let sessionBefore: number | undefined;
    let sessionFirstTurnEvents = Number.NaN;
    let sessionRuns = 0;
    for (let i = 0; i < opts.streamHistoryTurns; i++) {
      for (const reply of ['short', 'long'] as const) {
        const tag = `${runTag}${(turnCounter++).toString(36)}`;
        const t = await timedApiTurn(sys.apiUrl, token, histSession, streamMessage(reply, tag));
        if (t.finalText !== STREAM_REPLIES[reply]) throw new Error(`history turn ${t.turnId} answered ${JSON.stringify(t.finalText?.slice(0, 80))}`);
        await waitSessionIdle(sys.client, owner, histSession);
        const tl = await turnTimeline(sys.client, t.turnId, t.t0Epoch);
        const s = await sessionHistoryEvents(sys.client, histSession);
        sessionRuns = s.runs;
        const row = rows.get(reply) ?? { deltas: [], turnEvents: [], turnBytes: [], sessionEventsAdded: [] };
        row.deltas.push(t.deltas);
        row.turnEvents.push(tl.historyEvents);
        row.turnBytes.push(tl.historyBytes);
        if (sessionBefore === undefined) sessionFirstTurnEvents = s.events;
        else row.sessionEventsAdded.push(s.events - sessionBefore);
        sessionBefore = s.events;
        rows.set(reply, row);
      }
    }
    const mean = (xs: number[]): number => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : Number.NaN);

    return {
      chunkDelayMs: opts.chunkDelayMs,
      turns: opts.streamTurns,
      warmup: opts.streamWarmup,
      firstEvent: summarize(turns.map((t) => t.firstEventMs)),
      firstEventTypes,
      post: summarize(turns.map((t) => t.postMs)),
      sseHeaders: summarize(turns.map((t) => t.sseHeadersMs)),
      ttft: {
        direct: di,
        durable: du,
        added: { p50: du.p50 - di.p50, p95: du.p95 - di.p95, p99: du.p99 - di.p99 },
        pairedAddedP50: median(ttftDurable.map((v, i) => v - (ttftDirect[i] ?? Number.NaN))),
      },
      durableDone: summarize(turns.map((t) => t.endMs)),
      directTotal: summarize(directs.map((d) => d.totalMs)),
      timeline: {
        postAnswered: median(turns.map((t) => t.postMs)),
        turnStarted: median(timelines.map((t) => t.started)),
        firstSseEvent: median(turns.map((t) => t.firstEventMs)),
        turnBegun: median(timelines.map((t) => t.begun)),
        llmScheduled: median(timelines.map((t) => t.llmScheduled)),
        llmStarted: median(timelines.map((t) => t.llmStarted)),
        llmRequestAtModel: median(turns.map((t) => t.llmRequestAtModel)),
        firstDelta: du.p50,
      },
      sseRetries: turns.reduce((a, t) => a + t.sseRetries, 0),
      liveTextMismatches,
      ttftSession: {
        turns: sessionTurns,
        events: session.events,
        runs: session.runs,
        turnEventsMean: mean(timelines.map((t) => t.historyEvents)),
        turnEventsMin: Math.min(...timelines.map((t) => t.historyEvents)),
        turnEventsMax: Math.max(...timelines.map((t) => t.historyEvents)),
      },
      history: {
        rows: (['short', 'long'] as const).map((reply) => {
          const r = rows.get(reply) ?? { deltas: [], turnEvents: [], turnBytes: [], sessionEventsAdded: [] };
          return {
            reply,
            chars: STREAM_REPLIES[reply].length,
            turns: r.turnEvents.length,
            deltasMean: mean(r.deltas),
            turnEvents: r.turnEvents,
            turnBytesMean: mean(r.turnBytes),
            sessionEventsAdded: r.sessionEventsAdded,
          };
        }),
        sessionFirstTurnEvents,
        sessionRuns,
      },
    };
  } finally {
    sys.model.setFaults([]);
  }
}

interface ThroughputRow {
  concurrency: number;
  total: number;
  inProcess: { turnsPerSecond: number; latency: Summary };
  durable: { turnsPerSecond: number; latency: Summary; cpuPerTurn: { temporal: number; workers: number; bench?: number } };
}

async function throughputSection(pids: Pids, paths: Paths, opts: Options, resetNotes: () => void, started: number): Promise<{ rows: ThroughputRow[]; skipped: number[] }> {
  const rows: ThroughputRow[] = [];
  const skipped: number[] = [];
  log('throughput: warm-up at concurrency 4');
  await runConcurrent(16, 4, async () => void (await paths.inProcess(1)));
  await runConcurrent(16, 4, async () => void (await paths.durable(1)));
  for (const c of opts.levels) {
    const elapsedS = (performance.now() - started) / 1000;
    // A level takes about as long as the previous one did (throughput hardly grows past saturation).
    const prev = rows[rows.length - 1];
    const estimateS = prev ? opts.total / prev.inProcess.turnsPerSecond + opts.total / prev.durable.turnsPerSecond : 0;
    if (elapsedS + estimateS > opts.budgetS) {
      log(`throughput: skipping concurrency ${c}: ${elapsedS.toFixed(0)} s elapsed + ~${estimateS.toFixed(0)} s needed > ${opts.budgetS} s budget`);
      skipped.push(c);
      continue;
    }
    resetNotes();
    log(`throughput: concurrency ${c}, ${opts.total} turns per path`);
    const inRun = await runConcurrent(opts.total, c, async () => void (await paths.inProcess(1)));
    const cpu = meter(pids, true);
    const duRun = await runConcurrent(opts.total, c, async () => void (await paths.durable(1)));
    const cpuPerTurn = cpuSplit(cpu.stop(), opts.total);
    rows.push({
      concurrency: c,
      total: opts.total,
      inProcess: { turnsPerSecond: opts.total / (inRun.wallMs / 1000), latency: summarize(inRun.latencies) },
      durable: { turnsPerSecond: opts.total / (duRun.wallMs / 1000), latency: summarize(duRun.latencies), cpuPerTurn },
    });
  }
  return { rows, skipped };
}

// ------------------------------------------------------------------------------------ report

function machine() {
  const cpus = os.cpus();
  let temporal = 'unknown';
  try {
    temporal = execFileSync(temporalCli(), ['--version'], { encoding: 'utf8' }).trim();
  } catch {
    // reported as unknown
  }
  return {
    nproc: cpus.length,
    cpuModel: cpus[0]?.model ?? 'unknown',
    totalMemGiB: round(os.totalmem() / 2 ** 30, 1),
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    loadAvgAtStart: os.loadavg().map((l) => round(l, 2)),
    node: process.version,
    temporalCli: temporal,
  };
}

function renderStreaming(s: StreamingResult): string {
  const out: string[] = [];
  const row = (label: string, x: Summary): string[] => [label, String(x.n), ms(x.p50), ms(x.p95), ms(x.p99), ms(x.mean), ms(x.max)];
  out.push(
    `4. Streaming through the HTTP API (ms from just before the POST), ${s.turns} turns in one session after ${s.warmup} warm-up, ` +
      `each paired with a direct openai-client stream of the same request, interleaved; demo model pauses ${s.chunkDelayMs} ms after each text chunk; SSE poll 25 ms`,
  );
  out.push(
    table(
      ['measure', 'n', 'p50', 'p95', 'p99', 'mean', 'max'],
      [
        row('POST answered', s.post),
        row('POST → SSE headers', s.sseHeaders),
        row('POST → first SSE event', s.firstEvent),
        row('TTFT direct (request → first content chunk)', s.ttft.direct),
        row('TTFT durable (POST → first text_delta)', s.ttft.durable),
        ['added TTFT (durable − direct, per percentile)', '', ms(s.ttft.added.p50), ms(s.ttft.added.p95), ms(s.ttft.added.p99), '', ''],
        row('POST → done (durable)', s.durableDone),
        row('direct stream complete', s.directTotal),
      ],
    ),
  );
  out.push(
    `First SSE event: ${Object.entries(s.firstEventTypes).map(([k, v]) => `${k} ×${v}`).join(', ')}. ` +
      `Median of the paired differences (durable − direct TTFT): ${ms(s.ttft.pairedAddedP50)} ms. ` +
      `SSE connections retried: ${s.sseRetries}; turns whose live text differed from the final text: ${s.liveTextMismatches}.`,
  );
  out.push('');
  out.push('Where the time to the first token goes (median ms after the POST started; server steps from the turn workflow history)');
  const t = s.timeline;
  out.push(
    table(
      ['POST answered', 'turn started', 'first SSE event', 'turn begun (session signal)', 'LLM activity scheduled', 'LLM activity started', 'LLM request at model', 'first text_delta'],
      [[t.postAnswered, t.turnStarted, t.firstSseEvent, t.turnBegun, t.llmScheduled, t.llmStarted, t.llmRequestAtModel, t.firstDelta].map(ms)],
    ),
  );
  out.push('');
  out.push(`History per turn against the length of the answer (${s.history.rows[0]?.turns ?? 0} turns each, alternating, in one session)`);
  out.push(
    table(
      ['answer', 'chars', 'text_delta events/turn', 'turn history events', 'turn history KB', 'session events added per turn'],
      s.history.rows.map((r) => [
        r.reply,
        String(r.chars),
        r.deltasMean.toFixed(1),
        r.turnEvents.join(', '),
        (r.turnBytesMean / 1024).toFixed(1),
        r.sessionEventsAdded.join(', '),
      ]),
    ),
  );
  const ts = s.ttftSession;
  out.push(
    `Session workflow: its first turn (start included) left ${s.history.sessionFirstTurnEvents} events. The TTFT session: ${ts.events} events ` +
      `over ${ts.turns} turns (${ts.runs} run${ts.runs === 1 ? '' : 's'}), ${(ts.events / ts.turns).toFixed(1)} per turn; its turn workflows ${ts.turnEventsMean.toFixed(1)} events each ` +
      `(${ts.turnEventsMin}–${ts.turnEventsMax}: a signal or activity result that arrives before the next workflow task starts shares it).`,
  );
  return out.join('\n');
}

function render(
  m: ReturnType<typeof machine>,
  opts: Options,
  latency: LatencyRow[],
  api: Summary | undefined,
  throughput: { rows: ThroughputRow[]; skipped: number[] },
  pooling: PoolingResult[],
  streaming: StreamingResult | undefined,
  targets: Array<{ target: string; measured: string; met: boolean }>,
): string {
  const out: string[] = [];
  out.push(`Machine: ${m.nproc} CPUs (${m.cpuModel}), ${m.totalMemGiB} GiB, ${m.platform}, Node ${m.node}, ${m.temporalCli}`);
  out.push(
    `Load average (1/5/15 min) at start: ${m.loadAvgAtStart.join(' ')}, at the end: ${os.loadavg().map((l) => l.toFixed(2)).join(' ')} (other processes on the machine count too)`,
  );
  out.push(`Durable path: ${opts.workers} worker process(es), default worker options; turns started via the API's gateway code, result awaited with the Temporal client.`);
  out.push('');
  const apiLine = api
    ? `Through the HTTP API (POST → SSE 'done', poll 25 ms), 1 tool step, ${api.n} turns: p50 ${ms(api.p50)} ms, p99 ${ms(api.p99)} ms` +
      (latency[0] ? ` (durable via client p50 ${ms(latency[0].durable.p50)} ms)` : '')
    : undefined;
  if (latency.length > 0) {
    out.push(`1. Latency per turn (ms), ${opts.turns} sequential turns per path, interleaved; each tool step = 1 LLM call + 2 parallel MCP calls`);
    out.push(
      table(
        ['tool steps', 'LLM steps', 'in-process p50', 'in-process p99', 'durable p50', 'durable p99', 'added/turn p50', 'added/step p50', 'added/step p99'],
        latency.map((r) => [
          String(r.toolSteps),
          String(r.llmSteps),
          ms(r.inProcess.p50),
          ms(r.inProcess.p99),
          ms(r.durable.p50),
          ms(r.durable.p99),
          ms(r.addedPerTurn.p50),
          ms(r.addedPerStep.p50),
          ms(r.addedPerStep.p99),
        ]),
      ),
    );
    const first = latency[0];
    const last = latency[latency.length - 1];
    if (first && last && last.toolSteps > first.toolSteps) {
      const slope = (last.addedPerTurn.p50 - first.addedPerTurn.p50) / (last.toolSteps - first.toolSteps);
      out.push(`Marginal added latency per extra tool step (p50 slope ${first.toolSteps}→${last.toolSteps} steps): ${ms(slope)} ms`);
    }
    if (apiLine) out.push(apiLine);
    out.push('');
    out.push('Where a durable turn spends its time (mean ms per turn; critical path from workflow history)');
    out.push(
      table(
        [
          'tool steps',
          'client latency',
          'outside history',
          'WFT queued',
          'WFT running',
          'activity queued',
          'activity running',
          'other',
          'in-process work',
          'WFTs',
          'activities',
          'history KB',
          'CPU temporal',
          'CPU worker',
        ],
        latency.map((r) => [
          String(r.toolSteps),
          ms(r.durable.mean),
          ms(r.breakdown.outsideHistoryMean),
          ms(r.breakdown.byCategoryMean.workflowQueued),
          ms(r.breakdown.byCategoryMean.workflowTask),
          ms(r.breakdown.byCategoryMean.activityQueued),
          ms(r.breakdown.byCategoryMean.activityRunning),
          ms(r.breakdown.byCategoryMean.other),
          ms(r.inProcessWork.llmMs + r.inProcessWork.toolMs),
          r.breakdown.workflowTasks.toFixed(0),
          r.breakdown.activities.toFixed(0),
          (r.breakdown.historyBytes / 1024).toFixed(1),
          ms(r.cpuPerDurableTurn.temporal),
          ms(r.cpuPerDurableTurn.workers),
        ]),
      ),
    );
    out.push(
      'outside history = client latency - history span (start RPC before the first event, result delivery after the last); ' +
        'in-process work = LLM calls + tool phases of the in-process turn (what "activity running" would be with zero overhead); ' +
        'CPU = CPU ms per durable turn used by the Temporal dev server and the worker process(es).',
    );
    out.push('');
  }
  if (apiLine && latency.length === 0) out.push(apiLine, '');
  if (throughput.rows.length + throughput.skipped.length > 0) {
    out.push(`2. Throughput, 1-tool-step turns, ${opts.total} turns per level and path`);
    out.push(
      table(
        [
          'concurrency',
          'in-process turns/s',
          'in-process p50',
          'in-process p99',
          'durable turns/s',
          'durable p50',
          'durable p99',
          'CPU/turn temporal',
          'CPU/turn worker',
          'CPU/turn bench',
        ],
        throughput.rows.map((r) => [
          String(r.concurrency),
          r.inProcess.turnsPerSecond.toFixed(1),
          ms(r.inProcess.latency.p50),
          ms(r.inProcess.latency.p99),
          r.durable.turnsPerSecond.toFixed(1),
          ms(r.durable.latency.p50),
          ms(r.durable.latency.p99),
          ms(r.durable.cpuPerTurn.temporal),
          ms(r.durable.cpuPerTurn.workers),
          ms(r.durable.cpuPerTurn.bench ?? Number.NaN),
        ]),
      ),
    );
    out.push('CPU/turn: CPU ms per durable turn of the dev server, the worker(s) and this process (Temporal client + demo model).');
    if (throughput.skipped.length > 0) out.push(`Skipped (time budget): concurrency ${throughput.skipped.join(', ')}`);
    out.push('');
  }
  if (pooling.length > 0) {
    out.push(`3. stdio tool call: pooled (${opts.pooled} calls) vs connect-per-call (${opts.perCall} calls: spawn + initialize + call + close), ms`);
    out.push(
      table(
        ['call', 'pooled p50', 'pooled p99', 'per-call p50', 'per-call p99', 'speedup p50', 'speedup p99'],
        pooling.map((p) => [
          p.label,
          ms(p.pooled.p50),
          ms(p.pooled.p99),
          ms(p.connectPerCall.p50),
          ms(p.connectPerCall.p99),
          `${p.ratioP50.toFixed(0)}x`,
          `${p.ratioP99.toFixed(0)}x`,
        ]),
      ),
    );
    out.push('');
  }
  if (streaming) out.push(renderStreaming(streaming), '');
  out.push('Targets (reported, not enforced)');
  out.push(table(['target', 'measured', 'met'], targets.map((t) => [t.target, t.measured, t.met ? 'yes' : 'no'])));
  return out.join('\n');
}

function streamingTargets(s: StreamingResult | undefined): Array<{ section: Section; target: string; measured: string; met: boolean }> {
  if (!s) return [];
  const [short, long] = s.history.rows;
  const mean = (xs: number[] | undefined): number => (xs && xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : Number.NaN);
  // Flat: the long answer costs less than one more workflow task (3 events) than the short one. The
  // count can move by a workflow task with timing (see the report), never with the answer's length.
  const flat = (xs: number[] | undefined, ys: number[] | undefined): boolean => mean(ys) - mean(xs) < 3;
  const values = (xs: number[] | undefined): string => [...new Set(xs ?? [])].join('/') || '?';
  return [
    {
      section: 'streaming',
      target: `POST → first SSE event p50 <= ${TARGETS.firstSseEventP50Ms} ms`,
      measured: `${ms(s.firstEvent.p50)} ms (p95 ${ms(s.firstEvent.p95)}, p99 ${ms(s.firstEvent.p99)})`,
      met: s.firstEvent.p50 <= TARGETS.firstSseEventP50Ms,
    },
    {
      section: 'streaming',
      target: `added time to first token p50 <= ${TARGETS.addedTtftP50Ms} ms`,
      measured: `${ms(s.ttft.added.p50)} ms (p95 ${ms(s.ttft.added.p95)}; durable ${ms(s.ttft.durable.p50)} vs direct ${ms(s.ttft.direct.p50)} p50)`,
      met: s.ttft.added.p50 <= TARGETS.addedTtftP50Ms,
    },
    {
      section: 'streaming',
      target: `history events per turn flat in answer length (${short?.chars ?? '?'} vs ${long?.chars ?? '?'} chars)`,
      measured:
        `turn ${values(short?.turnEvents)} vs ${values(long?.turnEvents)} events; ` +
        `session +${values(short?.sessionEventsAdded)} vs +${values(long?.sessionEventsAdded)} per turn`,
      met: flat(short?.turnEvents, long?.turnEvents) && flat(short?.sessionEventsAdded, long?.sessionEventsAdded),
    },
  ];
}

// ------------------------------------------------------------------------------------ main

async function main(): Promise<void> {
  const opts = parseOptions();
  requireBuild();
  temporalCli();
  const started = performance.now();
  const m = machine();
  log(`machine: ${m.nproc} CPUs, Node ${m.node}; options ${JSON.stringify({ ...opts, out: path.relative(ROOT, opts.out) })}`);

  const want = (section: Section): boolean => opts.sections.includes(section);

  // 3 first: nothing else is running yet, so process spawns are not competing with Temporal.
  const pooling: PoolingResult[] = [];
  if (want('pooling')) {
    const poolDir = path.join(os.tmpdir(), `dmh-bench-${process.pid}`);
    mkdirSync(poolDir, { recursive: true });
    cleanups.push(async () => {
      (await import('node:fs')).rmSync(poolDir, { recursive: true, force: true });
    });
    const poolConfig = stdioConfig(ROOT, path.join(poolDir, 'notes.json'), EVERYTHING_SERVER, NOTES_SERVER);
    for (const target of [
      { label: 'notes list_notes', server: 'notes', tool: 'list_notes', arguments: {} },
      { label: 'everything echo', server: 'everything', tool: 'echo', arguments: { message: 'ping' } },
    ]) {
      log(`pooling: ${target.label}: ${opts.pooled} pooled, ${opts.perCall} connect-per-call`);
      pooling.push(await benchPooling(poolConfig, target, { pooled: opts.pooled, connectPerCall: opts.perCall, warmup: 20 }));
    }
  }

  log('starting Temporal dev server, worker, demo model and API (startSystem)');
  const sys = await startSystem({ rules: benchRules() });
  cleanups.push(() => sys.stop());
  const pids: Pids = { temporal: sys.temporal.proc.pid, workers: [sys.worker.pid] };
  for (let i = 1; i < opts.workers; i++) pids.workers.push((await sys.startWorker()).pid);

  // What the API does for the demo admin (the HTTP helpers' default token): examples/policy.json.
  const admin = DEMO_USERS.admin;
  const user: UserContext = { id: admin.sub, role: admin.role, tenant: admin.tenant, scopes: [...admin.scopes] };
  const inProcessNotes = path.join(sys.dir, 'notes-in-process.json');
  let paths: Paths | undefined;
  if (want('latency') || want('throughput')) {
    const hub = new McpServerHub(stdioConfig(ROOT, inProcessNotes, EVERYTHING_SERVER, NOTES_SERVER));
    cleanups.push(() => hub.close());
    const deps: InProcessDeps = {
      hub,
      llm: createLlmClient({ baseUrl: sys.model.url, model: 'demo-model', apiKey: 'not-needed', timeoutMs: 120_000 }),
      validator: createArgumentValidator(),
      audit: new AuditLog(path.join(sys.dir, 'audit-in-process.jsonl')),
    };
    await hub.connectAll();
    const policy = loadPolicyFile(path.join(ROOT, 'examples/policy.json'));
    paths = makePaths(sys, deps, policy, user);
  }
  // The notes server re-reads its file on every call; an empty file per phase keeps its cost flat.
  const resetNotes = (): void => {
    const empty = `${JSON.stringify({ notes: [], idempotency: {} })}\n`;
    writeFileSync(sys.notesFile, empty);
    writeFileSync(inProcessNotes, empty);
    sys.model.resetRequests();
  };

  const latency = want('latency') && paths ? await latencySection(sys, pids, paths, opts, resetNotes) : [];
  const api = want('api') ? await apiSection(sys, opts, resetNotes) : undefined;
  let streaming: StreamingResult | undefined;
  let streamingMs = 0;
  if (want('streaming')) {
    const t0 = performance.now();
    streaming = await streamingSection(sys, opts, user);
    streamingMs = performance.now() - t0;
    log(`streaming: done in ${(streamingMs / 1000).toFixed(0)} s`);
  }
  // The throughput budget predates the streaming section: its time is not counted against it.
  const throughput = want('throughput') && paths ? await throughputSection(pids, paths, opts, resetNotes, started + streamingMs) : { rows: [], skipped: [] };

  const bestDurable = Math.max(0, ...throughput.rows.map((r) => r.durable.turnsPerSecond));
  const bestAt = throughput.rows.find((r) => r.durable.turnsPerSecond === bestDurable)?.concurrency;
  const worstAddedP50 = Math.max(...latency.map((r) => r.addedPerStep.p50));
  const minSpeedup = Math.min(...pooling.map((p) => p.ratioP50));
  const allTargets: Array<{ section: Section; target: string; measured: string; met: boolean }> = [
    {
      section: 'latency',
      target: `added latency per LLM step p50 <= ${TARGETS.addedPerStepP50Ms} ms`,
      measured: latency.map((r) => `${ms(r.addedPerStep.p50)} ms (${r.toolSteps} tool step${r.toolSteps === 1 ? '' : 's'})`).join(', '),
      met: worstAddedP50 <= TARGETS.addedPerStepP50Ms,
    },
    {
      section: 'throughput',
      target: `durable throughput >= ${TARGETS.durableTurnsPerSecond} turns/s`,
      measured: `${bestDurable.toFixed(1)} turns/s (best, at concurrency ${bestAt ?? 'n/a'}, ${opts.workers} worker${opts.workers === 1 ? '' : 's'})`,
      met: bestDurable >= TARGETS.durableTurnsPerSecond,
    },
    {
      section: 'pooling',
      target: `pooled >= ${TARGETS.pooledSpeedup}x faster than connect-per-call (p50)`,
      measured: pooling.map((p) => `${p.ratioP50.toFixed(0)}x (${p.label})`).join(', '),
      met: minSpeedup >= TARGETS.pooledSpeedup,
    },
    ...streamingTargets(streaming),
  ];
  const targets = allTargets.filter((t) => want(t.section)).map(({ section: _section, ...t }) => t);

  const report = render(m, opts, latency, api, throughput, pooling, streaming, targets);
  process.stdout.write(`\n${report}\n\n`);

  const totalS = (performance.now() - started) / 1000;
  mkdirSync(path.dirname(opts.out), { recursive: true });
  writeFileSync(
    opts.out,
    `${JSON.stringify(
      {
        at: new Date().toISOString(),
        durationS: round(totalS, 1),
        machine: m,
        options: { ...opts, out: path.relative(ROOT, opts.out) },
        durableVia: 'gateway.startTurn (the API start code) + WorkflowHandle.result() with the Temporal client',
        workers: opts.workers,
        latency,
        api: api ?? null,
        throughput,
        pooling,
        streaming: streaming ?? null,
        targets,
        report,
      },
      null,
      2,
    )}\n`,
  );
  log(`done in ${totalS.toFixed(0)} s; results in ${path.relative(ROOT, opts.out)}`);
}

main()
  .then(
    () => cleanup(),
    async (err: unknown) => {
      log(`failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
      process.exitCode = 1;
      await cleanup();
    },
  )
  .catch((err: unknown) => {
    log(`cleanup failed: ${String(err)}`);
    process.exitCode = 1;
  });
