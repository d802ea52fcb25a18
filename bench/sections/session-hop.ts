/**
 * 6. What the session costs a turn (issue 13 §2): the same 1-step turn through a new session (the API's
 * path: the message appended to the session index, then the turn started with the turns before it), through
 * one session turn after turn, and started directly as a standalone turn workflow with the same input (no session
 * at all: the lower bound of any session design), beside Temporal's floor of the turn's shape and the
 * floor with the turn's I/O (the same model requests and MCP calls as a direct turn, no host code:
 * bench/floor/io-workflow.ts, its requests captured from a direct turn at the start).
 * Interleaved latency, then CPU in blocks of each path alone, and history events per turn (the
 * session's added to the turn's).
 */
import type { TestSystem } from '../../tests/helpers/system';
import { summarize, type Summary } from '../lib/stats';
import { log, SESSION, type Options } from '../options';
import type { FloorShape } from '../floor/workflows';
import { RUN_TAG, type Paths } from '../paths';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { ioTurnFrom, type IoTurn } from '../floor/io-turn';
import { turnBreakdown } from '../lib/history';
import { renderSteps, stepMedians, type StepRow } from '../lib/steps';
import { cpuSplit, floorPids, meter, type Pids } from './cpu';
import { table } from '../lib/stats';

type PathName = 'session' | 'sessionReused' | 'direct' | 'floor' | 'ioFloor' | 'ioSchedule' | 'readOnly' | 'readOnlyFloor';
const PATHS: readonly PathName[] = ['session', 'sessionReused', 'direct', 'floor', 'ioFloor', 'ioSchedule', 'readOnly', 'readOnlyFloor'];
/** The paths that run on the floor's worker (CPU metered on it and the server). */
const ON_FLOOR: ReadonlySet<PathName> = new Set(['floor', 'ioFloor', 'ioSchedule', 'readOnlyFloor']);

export interface SessionHopResult {
  turns: number;
  shape: FloorShape;
  /** The read-only turn's shape (its tools are local activities). */
  readOnlyShape: FloorShape;
  latency: Record<PathName, Summary>;
  cpu: Record<PathName, { temporal: number; workers: number }>;
  /** History events per turn: the turn's own, and what its session added (the session path only). */
  events: { turn: number; session: number };
  /** Encoded history bytes of one direct turn and one I/O floor turn (the floor carries the messages, the tool list by reference). */
  historyBytes: { direct: number; ioFloor: number };
  /** The I/O floor's parallel tool calls. */
  ioCalls: number;
  /** A direct turn beside the I/O floor, step by step (medians of the measured turns' histories). */
  steps: StepRow[];
  /** A new session's turn beside a direct turn, the same way. */
  sessionSteps: StepRow[];
  /** A turn of the session that goes on beside a direct turn, the same way. */
  reusedSteps: StepRow[];
}

export async function sessionHopSection(sys: TestSystem, pids: Pids, paths: Paths, opts: Options, resetNotes: () => void): Promise<SessionHopResult> {
  resetNotes();
  const turns = Math.min(opts.turns, 40);
  log(`session hop: 1 tool step, ${opts.warmup} warm-up + ${turns} measured turns per path (session, direct, floors), interleaved`);
  const firstId = await paths.durable(1);
  const shape = await paths.shapeOf(firstId);
  const readOnlyShape = await paths.shapeOf(await paths.durable(1, true));
  // The I/O floor replays what one direct turn sent the model (its MCP calls are in the second request).
  sys.model.resetRequests();
  const capturedId = await paths.direct(1);
  const { tools, ...captured } = ioTurnFrom(sys.model.requests());
  const ioTurn: IoTurn = { ...captured, toolsFile: path.join(sys.dir, 'io-floor-tools.json') };
  writeFileSync(ioTurn.toolsFile, JSON.stringify(tools));
  const ioFloorId = await paths.ioFloor(ioTurn);
  const run: Record<PathName, () => Promise<unknown>> = {
    session: () => paths.durable(1),
    // One conversation: each turn the next message of the same session (the session is cached and idle).
    sessionReused: () => paths.durable(1, false, `${SESSION}-hop-${RUN_TAG}`),
    direct: () => paths.direct(1),
    floor: () => paths.floor(shape),
    ioFloor: () => paths.ioFloor(ioTurn),
    ioSchedule: () => paths.ioSchedule(ioTurn.calls.length),
    readOnly: () => paths.durable(1, true),
    readOnlyFloor: () => paths.floor(readOnlyShape),
  };
  for (let i = 0; i < opts.warmup; i++) for (const p of PATHS) await run[p]();
  const samples = Object.fromEntries(PATHS.map((p) => [p, [] as number[]])) as Record<PathName, number[]>;
  const measured = { direct: [] as string[], ioFloor: [] as string[], session: [] as string[], sessionReused: [] as string[] };
  for (let i = 0; i < turns; i++) {
    // Rotate which path goes first so none always runs right after another.
    for (let j = 0; j < PATHS.length; j++) {
      const p = PATHS[(i + j) % PATHS.length] as PathName;
      const t0 = performance.now();
      const id = await run[p]();
      samples[p].push(performance.now() - t0);
      if ((p === 'direct' || p === 'ioFloor' || p === 'session' || p === 'sessionReused') && typeof id === 'string') measured[p].push(id);
    }
  }
  const breakdowns = async (ids: string[]) => await Promise.all(ids.map((id) => turnBreakdown(sys.client.workflow.getHandle(id))));
  const directSteps = await breakdowns(measured.direct);
  const steps = stepMedians(directSteps, await breakdowns(measured.ioFloor));
  const sessionSteps = stepMedians(await breakdowns(measured.session), directSteps);
  const reusedSteps = stepMedians(await breakdowns(measured.sessionReused), directSteps);
  log(`session hop: CPU blocks of ${turns} turns per path`);
  const cpu = {} as SessionHopResult['cpu'];
  for (const p of PATHS) {
    const m = meter(ON_FLOOR.has(p) ? floorPids(pids) : pids, false);
    for (let i = 0; i < turns; i++) await run[p]();
    const used = cpuSplit(m.stop(), turns);
    cpu[p] = { temporal: used.temporal, workers: used.workers };
  }
  const sessionId = firstId.replace(/^turn-/, '').replace(/-[^-]+$/, '');
  const turnEvents = (await sys.client.workflow.getHandle(firstId).fetchHistory()).events?.length ?? 0;
  const sessionRuns = sys.client.workflow.list({ query: `WorkflowType = 'sessionWorkflow' AND SessionId = '${sessionId}'` });
  let sessionEvents = 0;
  for await (const wf of sessionRuns) sessionEvents += (await sys.client.workflow.getHandle(wf.workflowId, wf.runId).fetchHistory()).events?.length ?? 0;
  return {
    turns,
    shape,
    readOnlyShape,
    latency: Object.fromEntries(PATHS.map((p) => [p, summarize(samples[p])])) as Record<PathName, Summary>,
    cpu,
    events: { turn: turnEvents, session: sessionEvents },
    ioCalls: ioTurn.calls.length,
    steps,
    sessionSteps,
    reusedSteps,
    historyBytes: {
      direct: (await turnBreakdown(sys.client.workflow.getHandle(capturedId))).historyBytes,
      ioFloor: (await turnBreakdown(sys.client.workflow.getHandle(ioFloorId))).historyBytes,
    },
  };
}

export function renderSessionHop(r: SessionHopResult): string {
  const x = (a: number, b: number) => `${(a / b).toFixed(2)}x`;
  const f = (n: number) => (Math.abs(n) >= 100 ? n.toFixed(0) : n.toFixed(1));
  // A difference, with its sign either way (+12.0, −3.5).
  const d = (n: number) => `${n < 0 ? '−' : '+'}${f(Math.abs(n))}`;
  const label: Record<PathName, string> = {
    session: 'through a new session (API path)',
    sessionReused: 'through one session, turn after turn (the memory the turn before handed on)',
    direct: 'turn started directly',
    floor: `floor (${r.shape.local} local + ${r.shape.regular})`,
    ioFloor: "floor with the turn's I/O (model stream + MCP calls, no host code)",
    ioSchedule: `its schedule, no-op activities (1 local, 1, ${r.ioCalls} in parallel, 1)`,
    readOnly: 'read-only tools only, through a new session',
    readOnlyFloor: `its floor (${r.readOnlyShape.local} local + ${r.readOnlyShape.regular})`,
  };
  const cpuOf = (p: PathName) => r.cpu[p].temporal + r.cpu[p].workers;
  const rows = PATHS.map((p) => {
    const floor = p.startsWith('readOnly') ? 'readOnlyFloor' : 'floor';
    return [
      label[p],
      f(r.latency[p].p50),
      f(r.latency[p].p99),
      x(r.latency[p].p50, r.latency[floor].p50),
      f(r.cpu[p].temporal),
      f(r.cpu[p].workers),
      x(cpuOf(p), cpuOf(floor)),
    ];
  });
  const againstIo = (['direct', 'sessionReused', 'session'] as const).map((p) => `${label[p]} ${x(r.latency[p].p50, r.latency.ioFloor.p50)} p50, ${x(cpuOf(p), cpuOf('ioFloor'))} CPU`);
  return [
    `6. What the session costs: 1-tool-step turns, ${r.turns} per path, interleaved; CPU ms per turn in blocks of each path alone; ` +
      'the read-only turn (two everything__echo calls, local activities) against the floor of its own shape',
    table(['path', 'p50 ms', 'p99 ms', 'p50/floor', 'CPU temporal', 'CPU worker', 'CPU/floor'], rows),
    `Session hop: ${d(r.latency.session.p50 - r.latency.direct.p50)} ms p50 and ${d(r.cpu.session.temporal + r.cpu.session.workers - r.cpu.direct.temporal - r.cpu.direct.workers)} ms CPU per turn over starting the turn directly ` +
      `(${d(r.latency.sessionReused.p50 - r.latency.direct.p50)} ms and ${d(r.cpu.sessionReused.temporal + r.cpu.sessionReused.workers - r.cpu.direct.temporal - r.cpu.direct.workers)} ms in a session that exists); ` +
      `history: the turn ${r.events.turn} events, its new session ${r.events.session} more.`,
    `The turn's I/O itself (the I/O floor over its schedule with no-op activities): ${d(r.latency.ioFloor.p50 - r.latency.ioSchedule.p50)} ms p50, ${d(cpuOf('ioFloor') - cpuOf('ioSchedule'))} ms CPU per turn. ` +
      `Against the floor with the turn's I/O: ${againstIo.join('; ')}. ` +
      `History bytes: a direct turn ${r.historyBytes.direct}, the I/O floor ${r.historyBytes.ioFloor} (the messages in its input and model calls, the tool list by reference). ` +
      'CPU of the MCP server processes is counted on neither side (only the worker processes and the server are metered).',
    "Where a direct turn's time goes beside the I/O floor's, step by step (medians of the measured turns' histories; a workflow task's running time includes the local activities it runs):",
    renderSteps(r.steps, 'direct turn', 'I/O floor'),
    "A new session's turn beside a direct turn, the same way (what the session adds outside the history, the API's start code and the client's wait, is its p50 less its history span):",
    renderSteps(r.sessionSteps, 'new session', 'direct turn'),
    'A turn of the session that goes on (its memory grows by an exchange per turn) beside a direct turn, the same way:',
    renderSteps(r.reusedSteps, 'session going on', 'direct turn'),
  ].join('\n');
}
