import { Client, Connection } from '@temporalio/client';
import { ConfigError, loadEnvConfig, loadHostConfig, sessionSettingsFrom, turnOptionsFrom } from '../config';
import { createLogger } from '../logger';
import { buildApp } from './app';
import { createAuthenticator, issuerAndAudience, loadAuthConfig, mintDevToken } from './auth';
import { DEMO_USERS, type DemoRole } from '../config/local-mode';
import { createTemporalGateway, ensureSearchAttributes } from './gateway';
import { createLiveTextHub } from '../live/hub';
import { loadPolicyFile } from '../config/policy';
import { loadRedactionRules } from '../audit/redact';

/** Local mode: one-hour tokens for the demo users, signed with the dev secret `npm start` created. */
function demoTokens(secret: string, audience: { issuer: string; audience: string }) {
  return async (role: DemoRole): Promise<string> => {
    const u = DEMO_USERS[role];
    return await mintDevToken({ secret, sub: u.sub, role: u.role, tenant: u.tenant, scopes: [...u.scopes], ttlSec: 3600, ...audience });
  };
}

/** The one file that calls listen(). */
async function main(): Promise<void> {
  const env = loadEnvConfig();
  const host = loadHostConfig(env.HOST_CONFIG);
  const auth = createAuthenticator(loadAuthConfig(env));
  const policy = loadPolicyFile(env.POLICY_FILE);
  const logger = createLogger('api', env.LOG_LEVEL);
  const connection = await Connection.connect({ address: env.TEMPORAL_ADDRESS });
  const client = new Client({ connection, namespace: env.TEMPORAL_NAMESPACE });
  await ensureSearchAttributes(client, env.TEMPORAL_NAMESPACE);

  const liveHub = createLiveTextHub();
  const app = await buildApp({
    gateway: createTemporalGateway({
      client,
      taskQueue: env.TASK_QUEUE,
      turnOptions: turnOptionsFrom(host),
      sessionSettings: sessionSettingsFrom(host),
      contextByRole: host.contextByRole,
      policy,
      ...(env.TOKEN_SEAL_KEY ? { tokenSealKey: env.TOKEN_SEAL_KEY } : {}),
      catalogCacheMs: env.CATALOG_CACHE_MS,
    }),
    auth,
    policy,
    // Approvers see other users' tool arguments as the audit log shows them.
    ...(env.AUDIT_REDACTION ? { redaction: await loadRedactionRules(env.AUDIT_REDACTION) } : {}),
    rateLimits: { userPerMinute: env.RATE_LIMIT_USER_PER_MIN, tenantPerMinute: env.RATE_LIMIT_TENANT_PER_MIN },
    logger,
    maxMessageChars: env.MAX_MESSAGE_CHARS,
    ssePollMs: env.SSE_POLL_MS,
    corsOrigins: env.CORS_ORIGINS,
    ...(env.METRICS_TOKEN ? { metricsToken: env.METRICS_TOKEN } : {}),
    console: {
      namespace: env.TEMPORAL_NAMESPACE,
      ...(env.TEMPORAL_UI_URL ? { temporalUiUrl: env.TEMPORAL_UI_URL } : {}),
      ...(env.CONSOLE_DEMO_USERS === 'on' && env.JWT_SECRET ? { demoToken: demoTokens(env.JWT_SECRET, issuerAndAudience(env)) } : {}),
    },
    ...(env.LIVE_SECRET ? { live: { hub: liveHub, secret: env.LIVE_SECRET } } : {}),
  });

  const shutdown = async () => {
    await app.close();
    liveHub.close();
    await connection.close();
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
