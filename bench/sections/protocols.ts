/**
 * 9. Session protocols at the floor (issue 23): the turn's no-op shape run through each way a session
 * could order its turns (bench/floor/protocols.ts), no project code anywhere, beside the plain floor of
 * the same shape on the same server and worker. Interleaved latency; CPU in blocks of each path alone;
 * throughput with 16 conversations at once; history events per turn (the turn's and its session's).
 */
import { WithStartWorkflowOperation, type Client } from '@temporalio/client';
import type { FloorShape } from '../floor/workflows';
import { registerUpdate } from '../floor/protocols';
import { summarize, table, type Summary } from '../lib/stats';
import { log, type Options } from '../options';
import { FLOOR_TASK_QUEUE, nextTag, type Paths } from '../paths';
import { cpuSplit, floorPids, meter, type Pids } from './cpu';

type PathName = 'floor' | 'todayNew' | 'todayExisting' | 'chainExisting' | 'ledgerNew' | 'ledgerExisting';
const PATHS: readonly PathName[] = ['floor', 'todayNew', 'todayExisting', 'chainExisting', 'ledgerNew', 'ledgerExisting'];
const LABEL: Record<PathName, string> = {
  floor: 'plain turn (the floor)',
  todayNew: "today's protocol, a new session",
  todayExisting: "today's protocol, an existing session",
  chainExisting: 'chain: memory from the predecessor, no session workflow',
  ledgerNew: 'chain + ledger, a new session',
  ledgerExisting: 'chain + ledger, an existing session',
};
const CONCURRENCY = 16;

export interface ProtocolsResult {
  turns: number;
  shape: FloorShape;
  latency: Record<PathName, Summary>;
  cpu: Record<PathName, { temporal: number; workers: number }>;
  turnsPerSecond: Record<PathName, number>;
  /** History events per turn: the turn's own and its session's share. */
  events: Record<PathName, { turn: number; session: number }>;
}

/** One conversation of a path: `next()` runs its next turn to the end and returns the turn's id. */
interface Conversation {
  next(): Promise<string>;
  /** The session (or ledger) workflow, if the path has one. */
  sessionId?: string;
}

/** `opened` collects every session and ledger workflow the paths start (terminated at the end). */
function conversations(client: Client, shape: FloorShape, opened: string[]): Record<PathName, () => Conversation> {
  const opts = (id: string) => ({ workflowId: id, taskQueue: FLOOR_TASK_QUEUE });
  const today = (): Conversation => {
    const session = `floor-session-${nextTag()}`;
    opened.push(session);
    return {
      sessionId: session,
      async next() {
        const turnId = `floor-turn-${nextTag()}`;
        const memory = await client.workflow.executeUpdateWithStart(registerUpdate, {
          args: [turnId],
          startWorkflowOperation: new WithStartWorkflowOperation('floorSession', { ...opts(session), workflowIdConflictPolicy: 'USE_EXISTING' }),
        });
        await client.workflow.execute('floorSessionTurn', { ...opts(turnId), args: [{ shape, session, memory }] });
        return turnId;
      },
    };
  };
  const chain = (ledger: boolean): Conversation => {
    const sessionId = ledger ? `floor-ledger-${nextTag()}` : undefined;
    if (sessionId) opened.push(sessionId);
    let head: string | undefined;
    return {
      ...(sessionId ? { sessionId } : {}),
      async next() {
        const turnId = `floor-turn-${nextTag()}`;
        await client.workflow.execute('floorChainTurn', { ...opts(turnId), args: [{ shape, ...(head ? { predecessor: head } : {}), ...(sessionId ? { ledger: sessionId } : {}) }] });
        head = turnId;
        return turnId;
      },
    };
  };
  /** A new session per turn; `sessionId` names the newest. */
  const fresh =
    (make: () => Conversation): (() => Conversation) =>
    () => {
      const c: Conversation = {
        async next() {
          const inner = make();
          if (inner.sessionId) c.sessionId = inner.sessionId;
          return await inner.next();
        },
      };
      return c;
    };
  return {
    floor: () => ({
      async next() {
        const id = `floor-${nextTag()}`;
        await client.workflow.execute('floorTurn', { ...opts(id), args: [shape] });
        return id;
      },
    }),
    todayNew: fresh(today),
    todayExisting: today,
    chainExisting: () => chain(false),
    ledgerNew: fresh(() => chain(true)),
    ledgerExisting: () => chain(true),
  };
}

async function historyLength(client: Client, workflowId: string): Promise<number> {
  return (await client.workflow.getHandle(workflowId).fetchHistory()).events?.length ?? 0;
}

export async function protocolsSection(client: Client, pids: Pids, paths: Paths, opts: Options): Promise<ProtocolsResult> {
  const turns = Math.min(opts.turns, 40);
  const shape = await paths.shapeOf(await paths.durable(1));
  log(`protocols: the turn's floor shape ${shape.local} local + ${shape.regular}, ${opts.warmup} warm-up + ${turns} turns per path, interleaved`);
  const opened: string[] = [];
  const make = conversations(client, shape, opened);
  const one = Object.fromEntries(PATHS.map((p) => [p, make[p]()])) as Record<PathName, Conversation>;
  for (let i = 0; i < opts.warmup; i++) for (const p of PATHS) await one[p].next();

  const samples = Object.fromEntries(PATHS.map((p) => [p, [] as number[]])) as Record<PathName, number[]>;
  for (let i = 0; i < turns; i++) {
    for (let j = 0; j < PATHS.length; j++) {
      const p = PATHS[(i + j) % PATHS.length] as PathName;
      const t0 = performance.now();
      await one[p].next();
      samples[p].push(performance.now() - t0);
    }
  }

  log(`protocols: CPU blocks of ${turns} turns per path`);
  const cpu = {} as ProtocolsResult['cpu'];
  for (const p of PATHS) {
    const m = meter(floorPids(pids), false);
    for (let i = 0; i < turns; i++) await one[p].next();
    const used = cpuSplit(m.stop(), turns);
    cpu[p] = { temporal: used.temporal, workers: used.workers };
  }

  const perConversation = Math.max(2, Math.round(turns / 8));
  log(`protocols: ${CONCURRENCY} conversations at once, ${perConversation} turns each, per path`);
  const turnsPerSecond = {} as ProtocolsResult['turnsPerSecond'];
  for (const p of PATHS) {
    const many = Array.from({ length: CONCURRENCY }, () => make[p]());
    const t0 = performance.now();
    await Promise.all(many.map(async (c) => {
      for (let i = 0; i < perConversation; i++) await c.next();
    }));
    turnsPerSecond[p] = (CONCURRENCY * perConversation) / ((performance.now() - t0) / 1000);
  }

  // History per turn: a fresh conversation of 5 turns per path, so a session's share is exact.
  const events = {} as ProtocolsResult['events'];
  for (const p of PATHS) {
    const c = make[p]();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(await c.next());
    const turnEvents = await historyLength(client, ids[4] as string);
    // A new-session path opens a session per turn: the last one holds that turn's share alone.
    const sessionEvents = c.sessionId ? (await historyLength(client, c.sessionId)) / (p.endsWith('New') ? 1 : 5) : 0;
    events[p] = { turn: turnEvents, session: sessionEvents };
  }

  for (const id of opened) await client.workflow.getHandle(id).terminate('bench done').catch(() => undefined);
  return {
    turns,
    shape,
    latency: Object.fromEntries(PATHS.map((p) => [p, summarize(samples[p])])) as Record<PathName, Summary>,
    cpu,
    turnsPerSecond,
    events,
  };
}

export function renderProtocols(r: ProtocolsResult): string {
  const x = (a: number, b: number) => `${(a / b).toFixed(2)}x`;
  const f = (n: number) => (n >= 100 ? n.toFixed(0) : n.toFixed(1));
  const floorCpu = r.cpu.floor.temporal + r.cpu.floor.workers;
  const rows = PATHS.map((p) => [
    LABEL[p],
    f(r.latency[p].p50),
    f(r.latency[p].p99),
    x(r.latency[p].p50, r.latency.floor.p50),
    f(r.cpu[p].temporal),
    f(r.cpu[p].workers),
    x(r.cpu[p].temporal + r.cpu[p].workers, floorCpu),
    f(r.turnsPerSecond[p]),
    x(r.turnsPerSecond[p], r.turnsPerSecond.floor),
    `${r.events[p].turn} + ${f(r.events[p].session)}`,
  ]);
  return [
    `9. Session protocols at the floor (${r.shape.local} local + ${r.shape.regular} no-op activities per turn, no project code): ` +
      `${r.turns} turns per path, interleaved; CPU ms per turn in blocks of each path alone; throughput with ${CONCURRENCY} conversations at once`,
    table(['path', 'p50 ms', 'p99 ms', 'p50/floor', 'CPU temporal', 'CPU worker', 'CPU/floor', `turns/s c=${CONCURRENCY}`, 'tput/floor', 'events turn + session'], rows),
  ].join('\n');
}
