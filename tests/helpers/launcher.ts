import path from 'node:path';
import { freePort, spawnManaged, type ManagedProcess } from '../../src/cli/processes';
import { DIST, ROOT, temporalCli } from './system';

/**
 * `npm start`'s launcher (dist/src/cli/up.js) with its state in `dataDir`, every port free, none of
 * the caller's configuration variables inherited (only `env`), stdout not a terminal (so JSON lines,
 * unless `env` sets LOG_FORMAT=pretty: then the banner people see); resolves once it says it is up,
 * with the API's URL.
 */
export async function startLauncher(dataDir: string, env: NodeJS.ProcessEnv = {}, args: string[] = []): Promise<{ up: ManagedProcess; apiUrl: string }> {
  const full: NodeJS.ProcessEnv = {
    ...process.env,
    TEMPORAL_CLI: temporalCli(),
    DATA_DIR: dataDir,
    TEMPORAL_PORT: String(await freePort()),
    TEMPORAL_UI_PORT: String(await freePort()),
    DEMO_MODEL_PORT: String(await freePort()),
    PAYMENTS_PORT: String(await freePort()),
    API_PORT: String(await freePort()),
  };
  for (const name of ['MCP_CONFIG', 'HOST_CONFIG', 'POLICY_FILE', 'LLM_BASE_URL', 'LLM_MODEL', 'JWT_SECRET', 'JWT_JWKS_URL', 'TEMPORAL_ADDRESS', 'PAYMENTS_SERVER_URL', 'LOG_FORMAT', 'LOG_LEVEL', 'PAYLOAD_KEYS', 'PAYLOAD_KEY_FILE']) delete full[name];
  const { proc, match } = await spawnManaged('up', process.execPath, [path.join(DIST, 'src/cli/up.js'), ...args], {
    env: { ...full, ...env },
    cwd: ROOT,
    // The JSON line, or the pretty banner's API line.
    readyLine: /"api":"(http[^"]+)".*"msg":"Durable MCP host is up"|^ {2}API: +(http\S+)$/,
    readyTimeoutMs: 90_000,
  });
  return { up: proc, apiUrl: match?.[1] ?? match?.[2] ?? '' };
}
