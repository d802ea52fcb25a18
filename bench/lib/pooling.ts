/**
 * A stdio tool call through a warm pooled McpServerHub connection versus a fresh hub per call
 * (spawn the server, `initialize`, call, close and wait for the child to exit).
 */
import path from 'node:path';
import { parseMcpConfig, type McpConfig } from '../../src/mcp/config';
import { McpServerHub } from '../../src/mcp/pool';
import { summarize, type Summary } from './stats';

export interface PoolingTarget {
  label: string;
  server: string;
  tool: string;
  arguments: Record<string, unknown>;
}

export interface PoolingResult {
  label: string;
  pooled: Summary;
  connectPerCall: Summary;
  /** connect-per-call p50 / pooled p50. */
  ratioP50: number;
  ratioP99: number;
}

export function stdioConfig(root: string, notesFile: string, everythingServer: string, notesServer: string): McpConfig {
  return parseMcpConfig(
    {
      mcpServers: {
        notes: { command: process.execPath, args: [notesServer, '--stdio', '--data', notesFile] },
        everything: { command: process.execPath, args: [everythingServer, 'stdio'] },
      },
    },
    process.env,
    root,
    path.join(root, 'bench (generated config)'),
  );
}

/** The config with only one server, so a fresh hub spawns exactly the process being measured. */
function only(config: McpConfig, server: string): McpConfig {
  const cfg = config.mcpServers[server];
  if (!cfg) throw new Error(`no server ${server} in the bench config`);
  return { ...config, mcpServers: { [server]: cfg } };
}

async function call(hub: McpServerHub, target: PoolingTarget): Promise<void> {
  const outcome = await hub.callTool({ server: target.server, tool: target.tool, arguments: target.arguments });
  if (outcome.isError) throw new Error(`${target.label}: tool error: ${outcome.text}`);
}

export async function benchPooling(
  config: McpConfig,
  target: PoolingTarget,
  counts: { pooled: number; connectPerCall: number; warmup: number },
): Promise<PoolingResult> {
  const single = only(config, target.server);

  const hub = new McpServerHub(single);
  const pooled: number[] = [];
  try {
    for (let i = 0; i < counts.warmup; i++) await call(hub, target);
    for (let i = 0; i < counts.pooled; i++) {
      const t0 = performance.now();
      await call(hub, target);
      pooled.push(performance.now() - t0);
    }
  } finally {
    await hub.close();
  }

  const perCall: number[] = [];
  // One untimed round first: the first spawn pays for cold file caches.
  for (let i = 0; i < counts.connectPerCall + 1; i++) {
    const t0 = performance.now();
    const fresh = new McpServerHub(single);
    try {
      await call(fresh, target);
    } finally {
      await fresh.close();
    }
    if (i > 0) perCall.push(performance.now() - t0);
  }

  const p = summarize(pooled);
  const c = summarize(perCall);
  return { label: target.label, pooled: p, connectPerCall: c, ratioP50: c.p50 / p.p50, ratioP99: c.p99 / p.p99 };
}
