/**
 * A stdio bridge to the host's /mcp, for MCP clients that only spawn processes (Claude Desktop's
 * config file, older IDE plugins):
 *
 *   DMH_TOKEN=<bearer token> node dist/src/cli/mcp-bridge.js [--url http://127.0.0.1:3000/mcp]
 *
 * The client talks MCP over this process's stdin and stdout; each message goes on to /mcp over
 * Streamable HTTP with the token, and every answer comes back the same way. The bridge is a pipe, not
 * a server: the host answers everything, so what the client sees is exactly what an HTTP client would.
 * Logs go to stderr only (stdout is the protocol); the token never appears in them.
 */
import { parseArgs } from 'node:util';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const USAGE = 'usage: DMH_TOKEN=<token> mcp-bridge [--url http://127.0.0.1:3000/mcp]';

async function main(): Promise<void> {
  const { values } = parseArgs({ args: process.argv.slice(2), options: { url: { type: 'string' }, help: { type: 'boolean' } }, strict: true });
  if (values.help) {
    process.stderr.write(`${USAGE}\n`);
    return;
  }
  const token = process.env.DMH_TOKEN;
  if (!token) throw new Error(`DMH_TOKEN is not set (mint one with: npm run -s token -- --role student). ${USAGE}`);
  const url = new URL(values.url ?? process.env.DMH_MCP_URL ?? 'http://127.0.0.1:3000/mcp');

  const local = new StdioServerTransport();
  const remote = new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: `Bearer ${token}` } } });
  const fail = (where: string) => (err: Error) => process.stderr.write(`mcp-bridge: ${where}: ${err.message}\n`);
  local.onmessage = (message) => void remote.send(message).catch(fail('to the host'));
  remote.onmessage = (message) => void local.send(message).catch(fail('to the client'));
  local.onerror = fail('stdin');
  remote.onerror = fail('host');
  // The client closing stdin ends the bridge; the host's stream ending does not (each request has its own).
  local.onclose = () => void remote.close().finally(() => process.exit(0));
  await remote.start();
  await local.start();
}

main().catch((err: unknown) => {
  process.stderr.write(`mcp-bridge: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(2);
});
