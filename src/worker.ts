// First: tracing patches modules (http) as they load.
import { tracing } from './telemetry/register-worker';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { NativeConnection, Runtime, Worker, type WorkerOptions } from '@temporalio/worker';
import { SessionIdKey, TenantIdKey, type TurnAccounting, type TurnOutcome, UserIdKey } from './workflows/definitions';
import { createActivities } from './activities';
import { createLivePublisher, createNoopPublisher } from './live/publisher';
import { busLiveTransport } from './live/pg-bus';
import { postgresWorkerReports, type WorkerPhase } from './health/reports';
import { AuditLog, DEFAULT_REDACTION, loadRedactionRules } from './audit';
import { postgresAuditStore } from './audit/pg-store';
import { ConfigError, loadEnvConfig, loadHostConfig, loadPayloadKeyring, oauthRedirectUrl, workflowCacheOptions } from './config';
import { claimCheckFrom } from './config/claim-check';
import { dataConverterFor } from './security/data-converter';
import { namespaceRetentionMs, startClaimCheckSweeper } from './security/claim-check-sweep';
import { resolveModels } from './config/models';
import { createLlmClient } from './llm/client';
import { probeModels } from './llm/probe';
import { createLogger, temporalLogger } from './logger';
import { reloadableFile, reloadOnSighup } from './config/reload';
import { loadMcpConfig } from './mcp/config';
import { Pool } from 'pg';
import { oauthStoreFor } from './security/oauth-store-pg';
import { elicitFromCaller } from './mcp/elicitation';
import { sampleForCaller } from './mcp/sampling';
import { McpServerHub } from './mcp/pool';
import { configSecrets } from './security/secrets';
import { createWorkerMetrics, serveMetrics } from './metrics';
import { recordMcpOperationsWith } from './telemetry/mcp-spans';
import { ResilientHub } from './mcp/resilience';
import { unsealToken } from './security/seal';
import { createArgumentValidator } from './validation/json-schema';
import { freePort } from './cli/processes';
import { FAILURE_CONVERTER_PATH, PREBUILT_BUNDLES, tracingWorkerOptions, workflowInterceptorModules, WORKFLOWS_PATH } from './cli/workflow-bundle';
import { logContextActivityInterceptor } from './cli/activity-log-context';
import { reportUrlFrom, startWorkerReporter } from './health/reporter';
import { fileUsageLedger, postgresUsageLedger } from './usage/ledger';
import { createAttemptUsageRecorder, workflowOwnerFrom } from './usage/attempt-usage';
import { createSessionLink } from './session-link';
import { workerSinks } from './worker-sinks';
import { createInputLink } from './input-link';
import { Client } from '@temporalio/client';
import { fileLivenessRegistry } from './liveness/file-registry';
import { postgresLivenessRegistry } from './liveness/pg-registry';
import { startWorkerLiveness, type WorkerLiveness } from './liveness/reaper';

/**
 * Prebuilt by `npm run build` so workers start in milliseconds instead of bundling on every start;
 * with tracing on, the bundle with the OpenTelemetry workflow interceptors (src/cli/workflow-bundle.ts).
 */
const PREBUILT_BUNDLE = path.join(__dirname, tracing.enabled ? PREBUILT_BUNDLES.traced : PREBUILT_BUNDLES.plain);

async function main(): Promise<void> {
  const env = loadEnvConfig();
  const logger = createLogger('worker', env.LOG_LEVEL);
  // With POSTGRES_URL, state shared with workers and API replicas on other machines lives there
  // (OAuth tokens, audit, usage, payloads stored by reference).
  const pool = env.POSTGRES_URL ? new Pool({ connectionString: env.POSTGRES_URL, max: 8 }) : undefined;
  pool?.on('error', (err) => logger.warn({ err: err.message }, 'postgres: idle connection failed'));
  // Histories hold users' text and tool results: with keys configured, sealed before they leave the
  // worker (docs/decisions/0019-payload-encryption.md); large payloads stored by reference
  // (0022-claim-check.md). The same converter for the worker and its client.
  const claimCheck = await claimCheckFrom(env, pool);
  const dataConverter = { ...dataConverterFor(loadPayloadKeyring(env), claimCheck), failureConverterPath: FAILURE_CONVERTER_PATH };
  // One log stream: the SDK's messages (its native core's too) and workflow and activity logs go
  // through pino like the worker's own.
  // With a metrics endpoint, the SDK's own metrics (workflow and activity task latencies, slots,
  // sticky cache, polls: temporal_*) are served on a loopback port and appended to GET /metrics.
  const sdkMetricsPort = env.WORKER_METRICS_PORT !== undefined ? await freePort() : undefined;
  Runtime.install({
    logger: temporalLogger(logger),
    telemetryOptions: {
      logging: { filter: { core: 'WARN', other: 'ERROR' }, forward: {} },
      ...(sdkMetricsPort ? { metrics: { prometheus: { bindAddress: `127.0.0.1:${sdkMetricsPort}` } } } : {}),
    },
  });
  // The host config (HOST_CONFIG, the file the API reads): the models it can ask (src/config/models.ts:
  // the default from the environment or its `models`, which also prices them for the metrics, fixed at
  // start) and maxToolResultChars for turns started before their calls carried it (reloaded).
  const hostConfig = reloadableFile({ file: env.HOST_CONFIG, what: 'host config', load: loadHostConfig, logger, pollMs: env.CONFIG_POLL_MS });
  const host = hostConfig.current();
  const models = (() => {
    try {
      return resolveModels(env, host.models, process.env);
    } catch (err) {
      throw new ConfigError((err as Error).message);
    }
  })();
  const defaultModel = models.defaultModel;
  if (env.LLM_PROBE === 'on' && defaultModel.provider === 'openai' && defaultModel.baseUrl) {
    const probe = await probeModels({ baseUrl: defaultModel.baseUrl, apiKey: env.LLM_API_KEY, model: defaultModel.model });
    if (probe.kind === 'failed') throw new ConfigError(probe.message);
    logger[probe.kind === 'ok' ? 'info' : 'warn']({}, `LLM probe: ${probe.message}`);
  }
  const secrets = [env.LLM_API_KEY, env.TOKEN_SEAL_KEY ?? '', env.LIVE_SECRET ?? '', ...[...models.named.values()].map((m) => m.apiKey).filter((k) => k !== 'not-needed')];
  // Edits to the MCP config apply without a restart: new servers appear in the next catalog, removed
  // and changed ones finish their in-flight calls first; an edit that does not load changes nothing.
  const mcpConfig = reloadableFile({
    file: env.MCP_CONFIG,
    what: 'MCP config',
    load: (file) => loadMcpConfig(file, process.env),
    apply: (next) => {
      // Grows with every version: a value once configured is never printed, even after it changed.
      secrets.push(...configSecrets(next).filter((s) => !secrets.includes(s)));
      for (const warning of next.warnings) logger.warn({}, `MCP config: ${warning}`);
      const summary = servers.reconfigure(next);
      for (const server of [...summary.changed, ...summary.removed]) hub.invalidate(server);
      logger.info({ ...summary, servers: Object.keys(next.mcpServers) }, 'MCP servers reconfigured');
      void servers.connectAll();
    },
    logger,
    pollMs: env.CONFIG_POLL_MS,
  });
  secrets.push(...configSecrets(mcpConfig.current()));
  // Fields the host does not know (Claude Desktop's `envFile`, Cursor's `autoApprove`, a typo): said
  // once at start and after each edit, never silently ignored.
  for (const warning of mcpConfig.current().warnings) logger.warn({}, `MCP config: ${warning}`);
  // Servers with `auth: { type: "oauth" }` act for each user; their tokens live in the sealed store
  // the API's callback route also writes to.
  // With POSTGRES_URL the store is PostgreSQL, shared by workers and API replicas on other machines.
  const oauth = env.TOKEN_SEAL_KEY
    ? {
        store: oauthStoreFor({ sealKey: env.TOKEN_SEAL_KEY, dir: env.OAUTH_STORE_DIR, ...(pool ? { pool } : {}) }),
        redirectUrl: oauthRedirectUrl(env),
        clientName: 'durable-mcp-host',
      }
    : undefined;
  const servers = new McpServerHub(mcpConfig.current(), {
    logger,
    clientInfo: { name: 'durable-mcp-host', version: '0.1.0' },
    ...(oauth ? { oauth } : {}),
    // A server's questions during a tool call go to the turn's user (src/mcp/elicitation.ts).
    elicit: elicitFromCaller,
    // And its requests for the host's model, within the turn's sampling allowance (src/mcp/sampling.ts).
    sample: sampleForCaller,
    // A context resource that changed is read afresh by the next turn, not served from the cache.
    onResourceUpdated: (server, uri) => hub.invalidateResource(server, uri),
  });
  const hub = new ResilientHub(
    servers,
    {
      breaker: { failureThreshold: env.MCP_BREAKER_THRESHOLD, cooldownMs: env.MCP_BREAKER_COOLDOWN_MS },
      cache: { ttlMs: env.RESOURCE_CACHE_TTL_MS, maxStaleMs: env.RESOURCE_MAX_STALE_MS, maxTtlMs: env.RESOURCE_CACHE_MAX_TTL_MS },
      logger,
    },
  );
  const llm = createLlmClient(defaultModel);
  const namedModels = new Map([...models.named].map(([name, settings]) => [name, createLlmClient(settings)] as const));
  logger.info({ provider: llm.provider, model: llm.model, endpoint: llm.endpoint, from: models.defaultSource, named: [...namedModels.keys()] }, 'default model');
  const stopReloading = reloadOnSighup([mcpConfig, hostConfig]);
  // Live text is a side channel to the API (no history event per token); without it, clients get
  // the final text only.
  // With the replicas' PostgreSQL, on the bus itself: no replica stands between this worker and the
  // others, so losing one costs no live text (docs/decisions/0020-live-text-without-a-single-target.md).
  const viaBus = pool !== undefined && env.LIVE_VIA !== 'http';
  const live =
    env.LIVE_SECRET && (viaBus || env.LIVE_PUSH_URL)
      ? createLivePublisher({
          ...(viaBus ? { transport: busLiveTransport({ pool }) } : { url: env.LIVE_PUSH_URL ?? [] }),
          secret: env.LIVE_SECRET,
          logger,
        })
      : createNoopPublisher();
  if (viaBus && env.LIVE_SECRET) logger.info({ via: 'postgres NOTIFY' }, 'live text and worker reports go to the shared bus');
  const redaction = env.AUDIT_REDACTION ? await loadRedactionRules(env.AUDIT_REDACTION) : DEFAULT_REDACTION;
  if (env.AUDIT_STORE === 'postgres' && !pool) throw new ConfigError('environment: AUDIT_STORE: postgres needs POSTGRES_URL');
  const audit = new AuditLog(pool && env.AUDIT_STORE === 'postgres' ? await postgresAuditStore(pool) : env.AUDIT_LOG, { redaction });
  // Tokens for budgets and the admin usage route (src/usage): each model call attempt's from its
  // activity; at a turn's end, its servers' sampling tokens (its model calls' are recorded already),
  // and all its tokens in the audit trail (docs/decisions/0029-usage-exact.md).
  const usage = pool ? await postgresUsageLedger(pool) : fileUsageLedger(env.USAGE_LOG);
  const accountTurn = async (turnId: string, outcome: TurnOutcome, a: TurnAccounting & { user: NonNullable<TurnAccounting['user']> }): Promise<void> => {
    const u = a.usage ?? { promptTokens: 0, completionTokens: 0, samplingTokens: 0 };
    try {
      const sampling = { promptTokens: 0, completionTokens: 0, samplingTokens: u.samplingTokens };
      await usage.record({ turnId, sessionId: a.sessionId, tenant: a.user.tenant, userId: a.user.id, provider: llm.provider, model: llm.model, ...sampling, at: new Date().toISOString() });
      await audit.append({
        kind: 'turn_usage',
        actor: a.user,
        workflowId: turnId,
        outcome: outcome === 'completed' ? 'ok' : outcome === 'cancelled' ? 'cancelled' : 'error',
        // The models that answered its steps (a role's own, decision 0042); the default's for older workflow code.
        detail: `model=${(a.models ?? [llm.model]).join(',')} prompt=${u.promptTokens} completion=${u.completionTokens} sampling=${u.samplingTokens}`,
      });
    } catch (err) {
      logger.error({ turnId, err: err instanceof Error ? err.message : String(err) }, 'recording the turn\'s token usage failed');
    }
  };
  const metrics = createWorkerMetrics({
    prices: () => host.prices,
    circuits: () => Object.keys(mcpConfig.current().mcpServers).map((server) => ({ server, state: hub.breaker.state(server) })),
  });
  recordMcpOperationsWith((labels, seconds) => metrics.observer.mcpOperation(labels, seconds));
  const sdkMetrics = sdkMetricsPort
    ? async () => await (await fetch(`http://127.0.0.1:${sdkMetricsPort}/metrics`, { signal: AbortSignal.timeout(2_000) })).text()
    : undefined;
  // What the worker is doing, for its reports to the API and its own health endpoint beside the metrics.
  const configured = Object.keys(mcpConfig.current().mcpServers);
  let phase: { phase: WorkerPhase; detail?: string } = {
    phase: 'connecting',
    detail: `connecting ${configured.length} MCP server${configured.length === 1 ? '' : 's'}${configured.length ? `: ${configured.join(', ')}` : ''}`,
  };
  let running: Pick<Worker, 'getState'> | undefined;
  const health = {
    ready() {
      const temporal = running?.getState() ?? 'CONNECTING';
      const ready = phase.phase === 'ready' && temporal === 'RUNNING';
      return { ready, status: ready ? 'ready' : 'not_ready', ...phase, temporal, live: live.stats() };
    },
  };
  const metricsServer =
    env.WORKER_METRICS_PORT !== undefined ? await serveMetrics(metrics.registry, env.WORKER_METRICS_HOST, env.WORKER_METRICS_PORT, sdkMetrics, health) : undefined;

  const connection = await NativeConnection.connect({ address: env.TEMPORAL_ADDRESS });
  let stopReporting = (): void => undefined;
  let stopSweeping = (): void => undefined;
  let stopping = false;
  let liveness: WorkerLiveness | undefined;
  try {
    const bundle: Pick<WorkerOptions, 'workflowBundle' | 'workflowsPath' | 'interceptors'> =
      existsSync(PREBUILT_BUNDLE) && env.WORKFLOW_BUNDLE !== 'off'
        ? { workflowBundle: { codePath: PREBUILT_BUNDLE } }
        : { workflowsPath: WORKFLOWS_PATH, interceptors: { workflowModules: workflowInterceptorModules(tracing.enabled) } };
    const traced = tracingWorkerOptions(tracing);
    const client = new Client({ connection, namespace: env.TEMPORAL_NAMESPACE, dataConverter });
    const sessionLink = createSessionLink(client);
    // Blobs stored by reference go with the histories that hold them: after the retention.
    const retentionHours = env.CLAIM_CHECK_RETENTION_HOURS;
    stopSweeping = startClaimCheckSweeper({
      store: claimCheck.store,
      retentionMs: retentionHours ? async () => retentionHours * 3_600_000 : () => namespaceRetentionMs(client, env.TEMPORAL_NAMESPACE),
      everyMs: env.CLAIM_CHECK_SWEEP_MS,
      logger,
    }).stop;
    // A peer that dies mid tool call is noticed at once, not after its heartbeat timeout: running calls
    // are recorded, and dead workers' calls failed for a retry here (docs/decisions/0028-worker-liveness.md).
    liveness = await startWorkerLiveness({
      registry: pool && env.POSTGRES_URL ? await postgresLivenessRegistry(pool, env.POSTGRES_URL, logger) : fileLivenessRegistry(path.resolve(env.WORKER_LIVENESS_DIR)),
      client,
      everyMs: env.WORKER_LIVENESS_MS,
      logger,
    });
    const worker = await Worker.create({
      connection,
      namespace: env.TEMPORAL_NAMESPACE,
      dataConverter,
      taskQueue: env.TASK_QUEUE,
      ...bundle,
      // After a crash, how soon another worker goes on (docs/SCALING.md, "A crashed worker"). A turn's
      // next workflow task first waits for its cached copy on this worker's sticky queue; from a worker
      // that was killed no answer comes, and the server hands the task to the shared queue only after
      // this (10 s by default). A live worker takes its sticky tasks within milliseconds, so 3 s costs a
      // busy one at most a replay elsewhere.
      stickyQueueScheduleToStartTimeout: '3 seconds',
      ...workflowCacheOptions(env.WORKER_MAX_CACHED_WORKFLOWS),
      // Heartbeats keep the SDK's throttle (80% of the heartbeat timeout). A 1 s maximum was tried and
      // stopped a cancelled turn's task from being cancelled on its server (tests/e2e/tasks.e2e.test.ts),
      // so the tool heartbeat timeout is 10 s instead of 5 s (docs/SCALING.md, "A crashed worker").
      interceptors: { ...bundle.interceptors, activity: [...traced.interceptors.activity, logContextActivityInterceptor, ...(liveness ? [liveness.interceptor] : [])] },
      // The workflows' sinks: metrics, a turn's usage at its end, its follower, its events and memory to the API.
      sinks: { ...traced.sinks, ...workerSinks({ metrics: metrics.observer, accountTurn, sessionLink, live, logger }) },
      activities: createActivities({
        audit,
        hub,
        llm,
        models: namedModels,
        validator: createArgumentValidator(),
        logger,
        secrets,
        heartbeatEveryMs: env.ACTIVITY_HEARTBEAT_MS,
        maxToolResultChars: () => hostConfig.current().maxToolResultChars,
        toolSearch: () => hostConfig.current().toolSearch,
        adaptiveContext: () => hostConfig.current().adaptiveContext,
        live,
        metrics: metrics.observer,
        // Each model call attempt's tokens (turns' steps, sessions' summaries), against the workflow's
        // owner (read from its search attributes).
        usage: createAttemptUsageRecorder({
          ledger: usage,
          ownerOf: workflowOwnerFrom(client, { user: UserIdKey, tenant: TenantIdKey, session: SessionIdKey }),
        }),
        // Turns the API starts beside their session join it and tell it their end through this client.
        sessions: sessionLink,
        inputs: createInputLink(client),
        ...(env.TOKEN_SEAL_KEY ? { unsealToken: (sealed: string) => unsealToken(sealed, env.TOKEN_SEAL_KEY as string) } : {}),
      }),
    });
    logger.info({ taskQueue: env.TASK_QUEUE, temporal: env.TEMPORAL_ADDRESS, servers: Object.keys(mcpConfig.current().mcpServers) }, 'worker started');
    // /healthz answers from these reports (src/health): the API never asks a worker through a workflow.
    running = worker;
    // With the shared bus, into the replicas' table directly, like live text.
    const sharedReports = viaBus && pool ? await postgresWorkerReports(pool) : undefined;
    const reporter =
      env.LIVE_SECRET && (sharedReports || env.LIVE_PUSH_URL)
        ? startWorkerReporter({
            ...(sharedReports ? { deliver: (report) => sharedReports.record(report) } : { url: (env.LIVE_PUSH_URL ?? []).map(reportUrlFrom), secret: env.LIVE_SECRET }),
            worker: worker.options.identity,
            everyMs: env.WORKER_REPORT_MS,
            status: () => hub.status(),
            phase: () => phase,
            logger,
          })
        : undefined;
    stopReporting = () => reporter?.stop();
    // Connect to every server now rather than inside the first turn; failures are only reported,
    // since a server that is down must not keep the worker (and the other servers) from serving.
    void servers.connectAll().then(
      (statuses) => {
        // Stopped before they were up (Ctrl-C right after start): closing them is not a failure.
        if (stopping) return;
        // Health says so now, not at the next scheduled report.
        phase = { phase: 'ready' };
        liveness?.startReaping();
        void reporter?.reportNow();
        // One line for the servers that are up, one for those that are not. A server that failed to
        // connect was warned about by the pool already, with its reason and stderr; one waiting for a
        // user's authorization is not a fault.
        const ready = statuses.filter((s) => s.state !== 'unavailable');
        const down = statuses.filter((s) => s.state === 'unavailable');
        if (ready.length) logger.info({ servers: Object.fromEntries(ready.map((s) => [s.server, { state: s.state, tools: s.toolCount }])) }, `MCP servers ready: ${ready.map((s) => s.server).join(', ')}`);
        if (down.length) logger.info({ servers: Object.fromEntries(down.map((s) => [s.server, s.error ?? 'unavailable'])) }, `MCP servers not connected at start: ${down.map((s) => s.server).join(', ')}`);
      },
      (err: unknown) => {
        phase = { phase: 'ready' };
        liveness?.startReaping();
        void reporter?.reportNow();
        if (!stopping) logger.warn({ err }, 'connecting MCP servers failed');
      },
    );
    // Print a stable marker for scripts and tests that wait for readiness.
    process.stdout.write('WORKER_READY\n');
    await worker.run();
  } finally {
    stopping = true;
    // After the worker has stopped: its calls are over, nothing of it is left to reap.
    await liveness?.stop();
    stopReporting();
    stopSweeping();
    stopReloading();
    mcpConfig.close();
    hostConfig.close();
    metricsServer?.close();
    await live.close();
    await hub.close();
    await pool?.end();
    await connection.close();
    await tracing.shutdown();
  }
}

main().catch((err: unknown) => {
  const message = err instanceof Error ? err.message : String(err);
  process.stderr.write(`worker: ${message}\n`);
  process.exit(err instanceof ConfigError || (err instanceof Error && err.name === 'McpConfigError') ? 2 : 1);
});
