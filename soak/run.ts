import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { DemoRules } from '../src/demo-model/rules';
import { EXAMPLE_RULES, requireBuild } from '../tests/helpers/system';
import { effectFigures } from './effects';
import { schedule, runFaults } from './faults';
import { awaitLate, inBatches, turnRow } from './late';
import { growth, latencySeries, percentile, turnFigures } from './figures';
import { failures, markdown, overall, type SoakFigures } from './report';
import { freshServersMb, stdioServersOf } from './fresh';
import { addProcessMetrics, sample, type Sample, type Watched } from './sampler';
import { soakSvg } from './svg';
import { fetchTurn } from './streams';
import { SOAK_API_OLD_SPACE_MB, SOAK_TEMPORAL_PG_FILES_PER_PROCESS, SOAK_WORKER_OLD_SPACE_MB, startTopology, type Topology } from './topology';
import { runUser, startApprover, studentName, type TurnRecord } from './users';

/**
 * The soak (issue 26 §1): the scale-out topology under N users for T minutes with faults on a
 * schedule; figures, verdict, report and picture. `npm run soak` runs it from the command line
 * (soak/main.ts); tests/chaos/soak.test.ts runs a short one.
 */
export interface SoakOptions {
  users: number;
  minutes: number;
  /** Where report.md, soak.svg and result.json go. */
  out: string;
  command: string;
  /** How long after the drain the turns still counted lost are read again (ms; default: the drain's length). */
  lateMs?: number;
  log?: (line: string) => void;
  /** Hears how to stop every process of the run, as soon as there is one (soak/main.ts calls it on SIGINT/SIGTERM). */
  onStop?: (stop: () => Promise<void>) => void;
}

export interface SoakResult {
  ok: boolean;
  failures: string[];
  figures: SoakFigures;
  report: string;
}

const TEMPORAL_PG = "Temporal's PostgreSQL";

function watched(topo: Topology): Watched[] {
  const temporal = topo.temporalProc().pid;
  return [
    ...topo.apis.map((a) => ({ name: a.name, pid: a.proc.pid })),
    ...topo.workers.flatMap((w) => [
      { name: w.name, pid: w.proc.pid, worker: true },
      { name: `${w.name} stdio MCP servers`, pid: w.proc.pid, children: true },
    ]),
    { name: 'payments (HTTP MCP)', pid: topo.sys.payments().pid },
    { name: 'temporal-server', pid: temporal, comm: 'temporal-server' },
    { name: TEMPORAL_PG, pid: temporal, comm: 'postgres', tree: true },
    { name: 'bus PostgreSQL', pid: topo.bus.pid(), tree: true },
    { name: 'soak runner (model, clients)', pid: process.pid },
  ];
}

async function historySizes(topo: Topology, turns: TurnRecord[]): Promise<SoakFigures['histories']> {
  const ids = [...new Set(turns.map((t) => t.turnId).filter((x): x is string => !!x))];
  const events: number[] = [];
  const bytes: number[] = [];
  await inBatches(ids, 8, async (id) => {
    // Bounded: a Temporal that is down would otherwise be retried for minutes per turn.
    const timeout = new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 15_000).unref());
    const d = await Promise.race([topo.sys.client.workflow.getHandle(id).describe().catch(() => undefined), timeout]);
    const info = d?.raw.workflowExecutionInfo;
    if (!info) return;
    events.push(Number(info.historyLength ?? 0));
    bytes.push(Number(info.historySizeBytes ?? 0));
  });
  return { turns: events.length, eventsP50: percentile(events, 50), eventsMax: Math.max(0, ...events), bytesP50: percentile(bytes, 50), bytesMax: Math.max(0, ...bytes) };
}

export async function runSoak(o: SoakOptions): Promise<SoakResult> {
  requireBuild();
  const log = o.log ?? ((line: string) => process.stderr.write(`soak: ${line}\n`));
  const rules = JSON.parse(readFileSync(EXAMPLE_RULES, 'utf8')) as DemoRules;
  const topo = await startTopology(rules, log, o.onStop);
  let approver: ReturnType<typeof startApprover> | undefined;
  try {
    const base = topo.proxy.url;
    // One student per user, and one for the warm-up's user.
    await topo.seedStudents(Array.from({ length: o.users + 1 }, (_, i) => studentName(i)));
    const paymentsPort = Number(/:(\d+)\//.exec(JSON.parse(readFileSync(topo.sys.mcpConfigPath, 'utf8')).mcpServers.payments.url as string)?.[1]);
    const token = (sub: string) => topo.sys.token({ sub, role: 'admin', tenant: 'demo', scopes: ['admin.super'] }, 24 * 3_600);
    // Warm-up: one user's session before the clock starts, so the first figures are not cold processes'.
    approver = startApprover(base, await token('soak-approver'));
    const warm: TurnRecord[] = [];
    log('warm-up session');
    await runUser(o.users, { base, token, going: () => true, drainUntil: () => Date.now() + 180_000, turns: warm, maxSessions: 1 });
    if (warm.some((t) => t.outcome !== 'completed')) throw new Error(`the warm-up session did not complete: ${JSON.stringify(warm.map((t) => [t.kind, t.outcome, t.reason]))}`);

    const approvedInWarmUp = approver.decided();
    const durationMs = o.minutes * 60_000;
    const start = Date.now();
    const until = start + durationMs;
    const drainMs = Math.max(180_000, durationMs / 2);
    log(`${o.users} users for ${o.minutes} min through ${base}`);
    const samples: Sample[] = [];
    const sampleEvery = Math.max(2_000, durationMs / 150);
    const metricsOf = (pid: number) => [...topo.workers, ...topo.apis].find((w) => w.proc.pid === pid)?.metrics;
    const takeSample = async () => {
      const taken = sample(watched(topo), paymentsPort);
      await addProcessMetrics(taken, metricsOf);
      samples.push(...taken);
    };
    const sampler = setInterval(() => void takeSample(), sampleEvery);
    await takeSample();
    const faults = runFaults(topo, schedule(durationMs), start, log);
    const turns: TurnRecord[] = [];
    // The users go on past T until every fault of the schedule has run (a slow restart delays the rest).
    let faultsDone = false;
    const going = () => Date.now() < until || !faultsDone;
    let stoppedAt = 0;
    const drainUntil = () => (stoppedAt ? stoppedAt : Date.now()) + drainMs;
    const users = Array.from({ length: o.users }, async (_, u) => {
      // Spread over the first seconds, as users arrive.
      await new Promise((r) => setTimeout(r, (u * 5_000) / o.users));
      await runUser(u, { base, token, going, drainUntil, turns });
    });
    void faults.then(() => {
      faultsDone = true;
    });
    const storeKb = (): number => Math.round(statSync(topo.sys.dataFile).size / 1024);
    const stopWatch = setInterval(() => {
      if (!going() && !stoppedAt) stoppedAt = Date.now();
    }, 200);
    const progress = setInterval(() => log(`${Math.round((Date.now() - start) / 1000)} s: ${turns.length} turns, ${turns.filter((t) => t.outcome === 'completed').length} completed, school store ${storeKb()} KB`), 30_000);
    const marks = await faults;
    await Promise.all(users);
    clearInterval(stopWatch);
    clearInterval(progress);
    clearInterval(sampler);
    const end = Date.now();
    // Before the approver and the topology stop (a late refund still needs its approval): lost or late?
    const lateMs = o.lateMs ?? drainMs;
    const lostAtDrain = turns.filter((t) => t.outcome === 'lost').length;
    if (lostAtDrain) log(`${lostAtDrain} turns without an end at the drain deadline: reading their records until ${Math.round(lateMs / 1000)} s after it`);
    // Each turn is read as its own user, as its client did.
    const owners = new Map(await Promise.all([...new Set(turns.map((t) => t.user))].map(async (u) => [u, await token(`soak-user-${u}`)] as const)));
    const drainEnd = stoppedAt ? stoppedAt + drainMs : Date.now();
    const late = await awaitLate(turns, { read: (t) => fetchTurn(base, owners.get(t.user) ?? '', t.turnId ?? ''), until: Math.max(Date.now(), drainEnd) + lateMs, everyMs: 2_000 });
    if (lostAtDrain) log(`${late} of them ended late, ${lostAtDrain - late} lost`);
    await approver.stop();
    log(`the worker's stdio MCP servers started afresh on the final store (${storeKb()} KB)`);
    const fresh = await freshServersMb(stdioServersOf(topo.sys.mcpConfigPath)).catch((err: Error) => void log(`the fresh servers failed: ${err.message}`));
    log('reading histories and the school store');
    const warmUpMs = Math.max(30_000, durationMs * 0.2);
    const rows = growth(samples, { warmUpEnd: start + warmUpMs, warmUpMs, minSpanMs: durationMs * 0.4 }).map((g) =>
      g.name.startsWith('soak runner')
        ? { ...g, skipped: 'load generator, not judged' }
        : g.name.endsWith('stdio MCP servers') && fresh !== undefined
          ? { ...g, freshMb: fresh }
          : g.name === TEMPORAL_PG
            ? { ...g, fdsCapPerProcess: SOAK_TEMPORAL_PG_FILES_PER_PROCESS }
            : g,
    );
    const figures: SoakFigures = {
      users: o.users, minutes: o.minutes, allocator: `${topo.allocator.name} (${topo.allocator.why})`, oldSpaceMb: { api: SOAK_API_OLD_SPACE_MB, worker: SOAK_WORKER_OLD_SPACE_MB }, start, end, drainMs, lateMs,
      turns: turnFigures(turns),
      effects: effectFigures(topo.sys.store(), o.users, turns),
      latency: latencySeries(turns, start, Math.max(until, stoppedAt), Math.max(4, Math.min(20, Math.round(o.minutes * 2)))),
      overall: overall(turns),
      growth: rows,
      faults: marks,
      crashes: topo.crashes.map((c) => ({ name: c.name, at: c.at })),
      approvals: approver.decided() - approvedInWarmUp,
      histories: await historySizes(topo, turns),
    };
    const failed = failures(figures);
    const report = markdown(figures, failed, o.command);
    mkdirSync(o.out, { recursive: true });
    writeFileSync(path.join(o.out, 'report.md'), report);
    writeFileSync(path.join(o.out, 'soak.svg'), soakSvg({ title: `Soak: ${o.users} users, ${o.minutes} min, faults on a schedule`, start, end: Math.max(until, stoppedAt), latency: figures.latency, samples, faults: marks }));
    writeFileSync(path.join(o.out, 'result.json'), JSON.stringify({ figures, failures: failed, turns: turns.map(turnRow), samples, crashes: topo.crashes }, null, 1));
    return { ok: failed.length === 0, failures: failed, figures, report };
  } finally {
    await approver?.stop();
    await topo.stop();
  }
}
