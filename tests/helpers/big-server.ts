/**
 * An MCP server over Streamable HTTP (stateless) that answers big: the tool `dump` returns a text of
 * `toolBytes` characters and the resource `big://context` a text of `resourceBytes`, each beginning
 * and ending with a marker the test names, so it can tell what reached the model, Temporal's history
 * or the claim-check store.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { serveStatelessMcp } from './stateless-mcp-http';

export interface BigServer {
  url: string;
  /** The tool's result and the resource's text, as served. */
  toolText: string;
  resourceText: string;
  close(): Promise<void>;
}

/** `length` characters: `head`, filler that does not compress to nothing, `tail`. */
export function markedText(head: string, tail: string, length: number): string {
  const filler = 'lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor ';
  const body = filler.repeat(Math.ceil(length / filler.length)).slice(0, length - head.length - tail.length);
  return `${head}${body}${tail}`;
}

export async function startBigServer(opts: { toolText: string; resourceText: string }): Promise<BigServer> {
  const create = (): McpServer => {
    const server = new McpServer({ name: 'big', version: '1.0.0' });
    server.registerTool('dump', { description: 'Returns a very large text.', inputSchema: {} }, () => ({
      content: [{ type: 'text', text: opts.toolText }],
    }));
    server.registerResource('context', 'big://context', { mimeType: 'text/plain', description: 'A very large text.' }, (uri) => ({
      contents: [{ uri: uri.href, mimeType: 'text/plain', text: opts.resourceText }],
    }));
    return server;
  };
  const served = await serveStatelessMcp(create);
  return { ...served, toolText: opts.toolText, resourceText: opts.resourceText };
}
