/**
 * 6. What the session costs a turn (issue 13 §2): the same 1-step turn through a new session (the API's
 * path: the message appended to the session index, then the turn started with the turns before it), through
 * one session turn after turn, and started directly as a standalone turn workflow with the same input (no session
 * at all: the lower bound of any session design), beside Temporal's floor of the turn's shape.
 * Interleaved latency, then CPU in blocks of each path alone, and history events per turn (the
 * session's added to the turn's).
 */
import type { TestSystem } from '../../tests/helpers/system';
import { summarize, type Summary } from '../lib/stats';
import { log, SESSION, type Options } from '../options';
import type { FloorShape } from '../floor/workflows';
import { RUN_TAG, type Paths } from '../paths';
import { cpuSplit, floorPids, meter, type Pids } from './cpu';
import { table } from '../lib/stats';

type PathName = 'session' | 'sessionReused' | 'direct' | 'floor' | 'readOnly' | 'readOnlyFloor';
const PATHS: readonly PathName[] = ['session', 'sessionReused', 'direct', 'floor', 'readOnly', 'readOnlyFloor'];

export interface SessionHopResult {
  turns: number;
  shape: FloorShape;
  /** The read-only turn's shape (its tools are local activities). */
  readOnlyShape: FloorShape;
  latency: Record<PathName, Summary>;
  cpu: Record<PathName, { temporal: number; workers: number }>;
  /** History events per turn: the turn's own, and what its session added (the session path only). */
  events: { turn: number; session: number };
}

export async function sessionHopSection(sys: TestSystem, pids: Pids, paths: Paths, opts: Options, resetNotes: () => void): Promise<SessionHopResult> {
  resetNotes();
  const turns = Math.min(opts.turns, 40);
  log(`session hop: 1 tool step, ${opts.warmup} warm-up + ${turns} measured turns per path (session, direct, floor), interleaved`);
  const firstId = await paths.durable(1);
  const shape = await paths.shapeOf(firstId);
  const readOnlyShape = await paths.shapeOf(await paths.durable(1, true));
  const run: Record<PathName, () => Promise<unknown>> = {
    session: () => paths.durable(1),
    // One conversation: each turn the next message of the same session (the session is cached and idle).
    sessionReused: () => paths.durable(1, false, `${SESSION}-hop-${RUN_TAG}`),
    direct: () => paths.direct(1),
    floor: () => paths.floor(shape),
    readOnly: () => paths.durable(1, true),
    readOnlyFloor: () => paths.floor(readOnlyShape),
  };
  for (let i = 0; i < opts.warmup; i++) for (const p of PATHS) await run[p]();
  const samples: Record<PathName, number[]> = { session: [], sessionReused: [], direct: [], floor: [], readOnly: [], readOnlyFloor: [] };
  for (let i = 0; i < turns; i++) {
    // Rotate which path goes first so none always runs right after another.
    for (let j = 0; j < PATHS.length; j++) {
      const p = PATHS[(i + j) % PATHS.length] as PathName;
      const t0 = performance.now();
      await run[p]();
      samples[p].push(performance.now() - t0);
    }
  }
  log(`session hop: CPU blocks of ${turns} turns per path`);
  const cpu = {} as SessionHopResult['cpu'];
  for (const p of PATHS) {
    const m = meter(p === 'floor' || p === 'readOnlyFloor' ? floorPids(pids) : pids, false);
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
  };
}

export function renderSessionHop(r: SessionHopResult): string {
  const x = (a: number, b: number) => `${(a / b).toFixed(2)}x`;
  const f = (n: number) => (n >= 100 ? n.toFixed(0) : n.toFixed(1));
  const label: Record<PathName, string> = {
    session: 'through a new session (API path)',
    sessionReused: 'through one session, turn after turn (the memory the turn before handed on)',
    direct: 'turn started directly',
    floor: `floor (${r.shape.local} local + ${r.shape.regular})`,
    readOnly: 'read-only tools only, through a new session',
    readOnlyFloor: `its floor (${r.readOnlyShape.local} local + ${r.readOnlyShape.regular})`,
  };
  const rows = PATHS.map((p) => {
    const floor = p.startsWith('readOnly') ? 'readOnlyFloor' : 'floor';
    return [
      label[p],
      f(r.latency[p].p50),
      f(r.latency[p].p99),
      x(r.latency[p].p50, r.latency[floor].p50),
      f(r.cpu[p].temporal),
      f(r.cpu[p].workers),
      x(r.cpu[p].temporal + r.cpu[p].workers, r.cpu[floor].temporal + r.cpu[floor].workers),
    ];
  });
  return [
    `6. What the session costs: 1-tool-step turns, ${r.turns} per path, interleaved; CPU ms per turn in blocks of each path alone; ` +
      'the read-only turn (two everything__echo calls, local activities) against the floor of its own shape',
    table(['path', 'p50 ms', 'p99 ms', 'p50/floor', 'CPU temporal', 'CPU worker', 'CPU/floor'], rows),
    `Session hop: +${f(r.latency.session.p50 - r.latency.direct.p50)} ms p50 and +${f(r.cpu.session.temporal + r.cpu.session.workers - r.cpu.direct.temporal - r.cpu.direct.workers)} ms CPU per turn over starting the turn directly ` +
      `(+${f(r.latency.sessionReused.p50 - r.latency.direct.p50)} ms and +${f(r.cpu.sessionReused.temporal + r.cpu.sessionReused.workers - r.cpu.direct.temporal - r.cpu.direct.workers)} ms in a session that exists); ` +
      `history: the turn ${r.events.turn} events, its new session ${r.events.session} more.`,
  ].join('\n');
}
