/**
 * A third-party-style MCP server over Streamable HTTP (stateless) that applies every tools/call it
 * receives and ignores our idempotency key, like most servers in the wild. The test can cut the
 * connection of the next answers: the tool has run (its effect is applied), then the socket is
 * destroyed instead of the response being written, so the client never learns the outcome.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { serveStatelessMcp } from './stateless-mcp-http';
import { z } from 'zod';

export interface ApplyingServer {
  url: string;
  /** How many times `apply` ran. */
  applied(): number;
  /** How many times `read` ran. */
  reads(): number;
  /** The next `n` tools/call answers are cut after the tool ran. */
  cutNextAnswers(n: number): void;
  close(): Promise<void>;
}

export async function startApplyingServer(): Promise<ApplyingServer> {
  let applied = 0;
  let reads = 0;
  let toCut = 0;

  const create = (): McpServer => {
    const server = new McpServer({ name: 'applying', version: '1.0.0' });
    server.registerTool(
      'apply',
      {
        description: 'Applies one change; every call counts, keys or not.',
        inputSchema: { note: z.string().optional() },
        annotations: { readOnlyHint: false, idempotentHint: false, destructiveHint: true },
      },
      () => {
        applied += 1;
        return { content: [{ type: 'text', text: `applied #${applied}` }] };
      },
    );
    server.registerTool(
      'read',
      { description: 'Reads the count; changes nothing.', inputSchema: {}, annotations: { readOnlyHint: true } },
      () => {
        reads += 1;
        return { content: [{ type: 'text', text: `count ${applied}` }] };
      },
    );
    return server;
  };

  const served = await serveStatelessMcp(create, (body, req, res) => {
    if (body.method !== 'tools/call' || toCut <= 0) return;
    toCut -= 1;
    // With JSON responses the transport writes once, after the tool ran: that write never leaves.
    const cut = () => {
      req.socket.destroy();
      return res;
    };
    res.writeHead = cut as typeof res.writeHead;
    res.write = (() => (cut(), true)) as typeof res.write;
    res.end = cut as typeof res.end;
  });
  return {
    url: served.url,
    applied: () => applied,
    reads: () => reads,
    cutNextAnswers: (n) => void (toCut = n),
    close: served.close,
  };
}
