import { readFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { pssMbOf } from './sampler';

/**
 * What a worker's stdio MCP servers need for their data alone: the same servers started afresh on
 * the store as the run left it, each having answered a few reads. The example school servers parse
 * their whole store (one JSON file) on every call, so their memory grows with the records the run
 * adds; a long-lived set within 10 % of a fresh set on the same data holds nothing the data does not
 * explain, and one above it leaks (soak/figures.ts, growthProblem).
 */
interface StdioServer {
  command: string;
  args?: string[];
  env?: Record<string, string>;
}

/** How many reads each fresh server answers before it is measured. */
const READS = 5;

/** The stdio servers of an MCP config file (mcpServers entries with a command). */
export function stdioServersOf(mcpConfigPath: string): StdioServer[] {
  const config = JSON.parse(readFileSync(mcpConfigPath, 'utf8')) as { mcpServers: Record<string, Partial<StdioServer>> };
  return Object.values(config.mcpServers).flatMap((s) => (typeof s.command === 'string' ? [{ command: s.command, args: s.args ?? [], env: s.env ?? {} }] : []));
}

/**
 * Starts each server, lets it answer READS reads of its first resource (each parses the whole store),
 * and returns the summed PSS of the set (MB), measured while all still run.
 */
export async function freshServersMb(servers: StdioServer[]): Promise<number> {
  const clients: Client[] = [];
  try {
    const pids: number[] = [];
    for (const s of servers) {
      const transport = new StdioClientTransport({ command: s.command, args: s.args ?? [], env: { ...process.env, ...s.env } as Record<string, string>, stderr: 'ignore' });
      const client = new Client({ name: 'soak-fresh', version: '1' });
      clients.push(client);
      await client.connect(transport);
      if (transport.pid) pids.push(transport.pid);
      const [resource] = (await client.listResources()).resources;
      if (!resource) throw new Error(`${s.args?.[0] ?? s.command}: no resource to read its store with`);
      for (let i = 0; i < READS; i++) await client.readResource({ uri: resource.uri });
    }
    return pids.reduce((sum, pid) => sum + pssMbOf(pid), 0);
  } finally {
    await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
  }
}
