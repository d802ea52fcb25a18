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
 *      long answer. It runs before the throughput levels; its time does not count against their budget;
 *   5. scale-out: 1, 2 and 3 workers and 1 and 2 API processes on PostgreSQL, turns/s as ratios to one
 *      of each, and what a turn costs the shared parts (bench/sections/scale.ts). It runs last.
 *   7. the payload codec: a turn's payloads through no codec, encryption, the claim check and both,
 *      against the floor of the turn's shape, and a 1 MiB payload (bench/sections/codec.ts), before the throughput levels;
 *   8. hundreds of tools: tool-list tokens per turn with tool search against offering all 300 tools of
 *      12 stand-in servers, twenty requests each (bench/sections/tool-search.ts, its own dev server);
 *   9. session protocols at the floor: the turn's no-op shape through today's session protocol and the
 *      candidate designs of issue 23, no project code (bench/sections/protocols.ts, bench/floor/protocols.ts);
 *  10. a tool call on each MCP revision: 2025-11-25 and 2026-07-28 servers over HTTP, warm and a new pool's
 *      first call, HTTP requests per call, against a bare POST of the same request (bench/sections/revisions.ts).
 *      It runs right after 1, before the system starts.
 *  11. context strategies: the five seed patterns by role, by intent and adaptively: prompt tokens, resource
 *      reads and LLM steps per turn (bench/sections/context.ts, its own dev server and school servers).
 *
 * It prints tables and writes `.data/bench/latest.json`. Targets are reported, never enforced.
 * Not a test: nothing here fails on a figure; it exits non-zero only when a turn goes wrong.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { AuditLog } from '../src/audit';
import { createLlmClient } from '../src/llm/client';
import { McpServerHub } from '../src/mcp/pool';
import { createArgumentValidator } from '../src/validation/json-schema';
import { DEMO_USERS, EVERYTHING_SERVER, NOTES_SERVER, requireBuild, ROOT, startSystem, temporalCli } from '../tests/helpers/system';
import type { InProcessDeps } from './lib/in-process';
import { benchPooling, stdioConfig, type PoolingResult } from './lib/pooling';
import { benchRules } from './lib/scripts';
import { ms, round } from './lib/stats';
import type { UserContext } from '../src/shared/user';
import { loadPolicyFile } from '../src/config/policy';
import { log, parseOptions, TARGETS, type Section } from './options';
import { FLOOR_TASK_QUEUE, makePaths, type Paths } from './paths';
import { spawnManaged } from '../src/cli/processes';
import { machine, render } from './report';
import { apiSection } from './sections/api';
import type { Pids } from './sections/cpu';
import { latencySection } from './sections/latency';
import { streamingSection, streamingTargets, type StreamingResult } from './sections/streaming';
import { throughputSection } from './sections/throughput';
import { scaleSection } from './sections/scale';
import { renderSessionHop, sessionHopSection } from './sections/session-hop';
import { codecSection, renderCodec } from './sections/codec';
import { protocolsSection, renderProtocols } from './sections/protocols';
import { renderToolSearch, toolSearchSection } from './sections/tool-search';
import { contextSection, renderContext } from './sections/context';
import { renderRevisions, revisionsSection } from './sections/revisions';
import { startTemporalCluster } from '../tests/helpers/temporal-cluster';

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

  // Before the system too: its servers and this process alone on the machine.
  const revisions = want('revisions') ? await revisionsSection(opts) : undefined;

  log(`starting Temporal (${opts.temporal === 'cluster' ? 'the full server on PostgreSQL' : 'dev server'}), worker, demo model and API (startSystem)`);
  // PAYLOAD_KEYS in the environment: the host (and the floor, bench/floor/worker.ts) seal payloads.
  if (process.env.PAYLOAD_KEYS) log('payloads sealed with PAYLOAD_KEYS (the floor worker has them too)');
  // --profile: node writes each worker's profile when it exits (the system's stop ends them gracefully).
  const profiling = opts.profile ? { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --cpu-prof --cpu-prof-dir=${opts.profile}`.trim() } : undefined;
  const sys = await startSystem({
    rules: benchRules(),
    ...(profiling ? { workerEnv: profiling } : {}),
    ...(opts.temporal === 'cluster' ? { temporal: startTemporalCluster } : {}),
    ...(process.env.PAYLOAD_KEYS ? { payloadKeys: process.env.PAYLOAD_KEYS } : {}),
  });
  cleanups.push(() => sys.stop());
  // Temporal's floor runs beside the project on the same dev server, in a worker process of its own; its
  // I/O floor talks to the same demo model and the same MCP servers (the worker's MCP config), from ROOT as the worker.
  const floorArgs = [path.join(__dirname, 'floor', 'worker.js'), sys.temporal.address, FLOOR_TASK_QUEUE, sys.model.url, sys.mcpConfigPath];
  const floorWorker = await spawnManaged('floor-worker', process.execPath, floorArgs, {
    cwd: ROOT,
    readyLine: /^FLOOR_WORKER_READY$/,
    readyTimeoutMs: 60_000,
    ...(profiling ? { env: { ...process.env, ...profiling } } : {}),
  });
  cleanups.push(() => floorWorker.proc.stop());
  const pids: Pids = { temporal: sys.temporal.proc.pid, workers: [sys.worker.pid], floorWorker: floorWorker.proc.pid };
  if (opts.profile) log(`CPU profiles in ${opts.profile}: the host's worker is pid ${sys.worker.pid}, the floor's ${floorWorker.proc.pid}`);
  for (let i = 1; i < opts.workers; i++) pids.workers.push((await sys.startWorker()).pid);

  // What the API does for the demo admin (the HTTP helpers' default token): examples/policy.json.
  const admin = DEMO_USERS.admin;
  const user: UserContext = { id: admin.sub, role: admin.role, tenant: admin.tenant, scopes: [...admin.scopes] };
  const inProcessNotes = path.join(sys.dir, 'notes-in-process.json');
  let paths: Paths | undefined;
  if (want('latency') || want('throughput') || want('session-hop') || want('protocols') || want('codec')) {
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
  const sessionHop = want('session-hop') && paths ? await sessionHopSection(sys, pids, paths, opts, resetNotes) : undefined;
  const protocols = want('protocols') && paths ? await protocolsSection(sys.client, pids, paths, opts) : undefined;
  const codec = want('codec') && paths ? await codecSection(sys, paths, opts) : undefined;
  const toolSearch = want('tool-search') ? await toolSearchSection() : undefined;
  const context = want('context') ? await contextSection() : undefined;
  // The throughput budget predates the streaming section: its time is not counted against it.
  const throughput = want('throughput') && paths ? await throughputSection(pids, paths, opts, resetNotes, started + streamingMs) : { rows: [], skipped: [] };
  // Last: it stops the system's own worker and brings PostgreSQL, two APIs and up to three workers.
  const scale = want('scale') ? await scaleSection(sys, opts, (fn) => cleanups.push(fn)) : undefined;

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

  const report = [render(m, opts, latency, api, throughput, pooling, streaming, targets, scale), ...(sessionHop ? [renderSessionHop(sessionHop)] : []), ...(codec ? [renderCodec(codec)] : []), ...(toolSearch ? [renderToolSearch(toolSearch)] : []), ...(context ? [renderContext(context)] : []), ...(protocols ? [renderProtocols(protocols)] : []), ...(revisions ? [renderRevisions(revisions)] : [])].join('\n\n');
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
        sessionHop: sessionHop ?? null,
        protocols: protocols ?? null,
        codec: codec ?? null,
        toolSearch: toolSearch ?? null,
        context: context ?? null,
        revisions: revisions ?? null,
        scale: scale ?? null,
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

