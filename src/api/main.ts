// First: tracing patches modules (http) as they load.
import { tracing } from '../telemetry/register-api';
import { Client } from '@temporalio/client';
import { OpenTelemetryWorkflowClientInterceptor } from '@temporalio/interceptors-opentelemetry';
import { ConfigError, loadEnvConfig, loadHostConfig, loadPayloadKeyring, turnSettingsFrom } from '../config';
import { createPayloadCodec } from '../security/payload-codec';
import { dataConverterFor } from '../security/data-converter';
import { claimCheckFrom } from '../config/claim-check';
import { reloadableFile, reloadOnSighup } from '../config/reload';
import { createLogger } from '../logger';
import { buildApp } from './app';
import { createAuthenticator, issuerAndAudience, loadAuthConfig, mintDevToken } from './auth';
import { DEMO_USERS, type DemoRole } from '../config/local-mode';
import { createTemporalGateway, ensureSearchAttributes } from './gateway';
import { connectTemporal } from './gateway/connection';
import { postgresSessionIndex } from './sessions/pg-index';
import { createLiveTextHub } from '../live/hub';
import { loadPolicyFile } from '../config/policy';
import { loadRedactionRules } from '../audit/redact';
import { randomBytes } from 'node:crypto';
import { Pool } from 'pg';
import type { LiveChunk } from '../live/chunk';
import { createPgLiveBus } from '../live/pg-bus';
import { memoryRateLimiters, postgresRateLimiters } from './rate-limits';
import { oauthStoreFor } from '../security/oauth-store-pg';
import { memoryWorkerReports, postgresWorkerReports } from '../health/reports';
import { fileUsageLedger, postgresUsageLedger } from '../usage/ledger';
import { demoSuggestions, loadRulesFile } from '../demo-model/rules-file';

/** Local mode: one-hour tokens for the demo users, signed with the dev secret `npm start` created. */
function demoTokens(secret: string, audience: { issuer: string; audience: string }) {
  return async (role: DemoRole): Promise<string> => {
    const u = DEMO_USERS[role];
    return await mintDevToken({ secret, sub: u.sub, role: u.role, tenant: u.tenant, scopes: [...u.scopes], ttlSec: 3600, ...audience });
  };
}

async function within<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([promise, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(message)), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/** The one file that calls listen(). */
async function main(): Promise<void> {
  const env = loadEnvConfig();
  // With payload keys, what the API sends to workflows (users' text) is sealed and what it reads back
  // opened (docs/decisions/0019-payload-encryption.md); the codec server serves the same codec.
  const keyring = loadPayloadKeyring(env);
  const codec = keyring ? createPayloadCodec(keyring) : undefined;
  const logger = createLogger('api', env.LOG_LEVEL);
  // With PostgreSQL, replicas share live text (LISTEN/NOTIFY), rate limits and payloads stored by
  // reference; without, one process holds the first two and the claim check is a local directory.
  const pool = env.POSTGRES_URL ? new Pool({ connectionString: env.POSTGRES_URL, max: 10 }) : undefined;
  pool?.on('error', (err) => logger.warn({ err: err.message }, 'postgres: idle connection failed'));
  // Edits to the host config and the policy apply to the next request without a restart; an edit
  // that does not load keeps the last good version (and the log says why).
  const host = reloadableFile({ file: env.HOST_CONFIG, what: 'host config', load: loadHostConfig, logger, pollMs: env.CONFIG_POLL_MS });
  const auth = createAuthenticator(loadAuthConfig(env));
  const policy = reloadableFile({ file: env.POLICY_FILE, what: 'policy', load: loadPolicyFile, logger, pollMs: env.CONFIG_POLL_MS });
  const stopReloading = reloadOnSighup([host, policy]);
  const temporal = await connectTemporal({ address: env.TEMPORAL_ADDRESS });
  // Starts, updates, signals and queries carry the request's trace to the workflows (their headers).
  const client = new Client({
    connection: temporal.connection,
    namespace: env.TEMPORAL_NAMESPACE,
    interceptors: { workflow: [new OpenTelemetryWorkflowClientInterceptor()] },
    // Large payloads (a long answer read back) by reference, as the workers store them (0022-claim-check.md).
    dataConverter: dataConverterFor(keyring, await claimCheckFrom(env, pool)),
  });
  await ensureSearchAttributes(client, env.TEMPORAL_NAMESPACE);

  const liveHub = createLiveTextHub();
  const limits = { userPerMinute: env.RATE_LIMIT_USER_PER_MIN, tenantPerMinute: env.RATE_LIMIT_TENANT_PER_MIN };
  const bus = pool && env.POSTGRES_URL ? createPgLiveBus({ pool, connectionString: env.POSTGRES_URL, hub: liveHub, logger }) : undefined;
  const limiters = pool ? await postgresRateLimiters(limits, pool) : memoryRateLimiters(limits);
  if (bus) await within(bus.ready, 10_000, 'POSTGRES_URL: could not LISTEN for live text within 10 s');
  // Workers' MCP reports (for /healthz) reach every replica through PostgreSQL, whichever one got them.
  const workerReports = pool ? await postgresWorkerReports(pool) : memoryWorkerReports();
  // The workers record each turn's tokens here; budgets and GET /v1/admin/usage read it.
  const usageLedger = pool ? await postgresUsageLedger(pool) : fileUsageLedger(env.USAGE_LOG);
  const app = await buildApp({
    ...(env.TOKEN_SEAL_KEY ? { oauthStore: oauthStoreFor({ sealKey: env.TOKEN_SEAL_KEY, dir: env.OAUTH_STORE_DIR, ...(pool ? { pool } : {}) }) } : {}),
    gateway: createTemporalGateway({
      client,
      taskQueue: env.TASK_QUEUE,
      settings: () => turnSettingsFrom(host.current(), policy.current()),
      ...(env.TOKEN_SEAL_KEY ? { tokenSealKey: env.TOKEN_SEAL_KEY } : {}),
      catalogCacheMs: env.CATALOG_CACHE_MS,
      // Shared by the replicas on PostgreSQL; one replica alone keeps it in memory (rebuilt from Temporal at start).
      ...(pool ? { sessions: await postgresSessionIndex(pool) } : {}),
      // A turn whose final event the workers pushed here is over: the next message of its session does not ask Temporal.
      endSeen: (turnId) => liveHub.events.endOf(turnId),
      // ... and the memory it handed on as it ended: the next turn starts with it, reading nothing.
      handedOn: (turnId) => liveHub.events.memoryOf(turnId),
    }),
    auth,
    workerReports,
    usage: { ledger: usageLedger, config: () => host.current() },
    policy: policy.current,
    // Approvers see other users' tool arguments as the audit log shows them.
    ...(env.AUDIT_REDACTION ? { redaction: await loadRedactionRules(env.AUDIT_REDACTION) } : {}),
    limiters,
    logger,
    maxMessageChars: env.MAX_MESSAGE_CHARS,
    ...(env.SUGGESTIONS_RULES ? { suggestions: demoSuggestions(loadRulesFile(env.SUGGESTIONS_RULES)) } : {}),
    ssePollMs: env.SSE_POLL_MS,
    corsOrigins: env.CORS_ORIGINS,
    ...(env.METRICS_TOKEN ? { metricsToken: env.METRICS_TOKEN } : {}),
    console: {
      namespace: env.TEMPORAL_NAMESPACE,
      ...(env.TEMPORAL_UI_URL ? { temporalUiUrl: env.TEMPORAL_UI_URL } : {}),
      ...(env.CONSOLE_DEMO_USERS === 'on' && env.JWT_SECRET ? { demoToken: demoTokens(env.JWT_SECRET, issuerAndAudience(env)) } : {}),
    },
    ...(env.MCP_ENDPOINT === 'on'
      ? {
          mcp: {
            // Replicas must share it (TOKEN_SEAL_KEY); without one, a key of this process (one replica).
            stateKey: env.TOKEN_SEAL_KEY ?? randomBytes(32).toString('hex'),
            authorizationServers: env.MCP_AUTHORIZATION_SERVERS.length
              ? env.MCP_AUTHORIZATION_SERVERS
              : /^https?:\/\//.test(issuerAndAudience(env).issuer)
                ? [issuerAndAudience(env).issuer]
                : [],
            ...(env.MCP_RESOURCE_URL ? { resourceUrl: env.MCP_RESOURCE_URL } : {}),
            ...(env.MCP_ALLOWED_HOSTS.length ? { allowedHosts: env.MCP_ALLOWED_HOSTS } : {}),
          },
        }
      : {}),
    // Operators' Temporal UI reads decoded payloads here (docs/decisions/0019-payload-encryption.md).
    ...(codec ? { codec: { codec, namespace: env.TEMPORAL_NAMESPACE, uiOrigins: env.TEMPORAL_UI_URL ? [new URL(env.TEMPORAL_UI_URL).origin] : [] } } : {}),
        ...(env.LIVE_SECRET ? { live: { hub: liveHub, secret: env.LIVE_SECRET, ...(bus ? { ingest: (chunks: readonly LiveChunk[]) => bus.publish(chunks), listening: bus.listening } : {}) } } : {}),
  });

  const shutdown = async () => {
    stopReloading();
    host.close();
    policy.close();
    await app.close();
    await bus?.close();
    await pool?.end();
    liveHub.close();
    await temporal.close();
    await tracing.shutdown();
    process.exit(0);
  };
  process.once('SIGTERM', () => void shutdown());
  process.once('SIGINT', () => void shutdown());

  let address: string;
  try {
    address = await app.listen({ host: env.API_HOST, port: env.API_PORT });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
    throw new ConfigError(`port ${env.API_PORT} on ${env.API_HOST} is in use: set API_PORT to another port`);
  }
  process.stdout.write(`API_URL=${address}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`api: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(err instanceof ConfigError ? 2 : 1);
});
