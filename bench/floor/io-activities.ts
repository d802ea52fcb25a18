/**
 * The I/O floor's activities (io-workflow.ts), in the floor's worker: what a turn must do on the wire and
 * nothing else. `model` streams a captured chat request from the demo model with the `openai` package
 * (the host's client library), its tool list read once from the file the turn names (as the host's
 * worker holds its catalog), and reads the stream to the end as the host's client does; `tool` calls
 * the tool over `@modelcontextprotocol/sdk`'s Client on the servers of the host's own MCP config (same
 * command or URL, hence the same data files), one connection per server per process, made at first use.
 * No host code on these paths: no hub, audit, live pushes or policy.
 */
import { readFileSync } from 'node:fs';
import type { Readable } from 'node:stream';
import OpenAI from 'openai';
import type { ChatCompletionCreateParamsStreaming } from 'openai/resources/chat/completions';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { IDEMPOTENCY_KEY_META_KEY, TRACE_META_KEY } from '../../src/shared/meta';
import type { AssistantMessage, IoActivities } from './io-turn';

interface ServerEntry {
  command?: string;
  args?: string[];
  env?: Record<string, string>;
  cwd?: string;
  url?: string;
}

function serversOf(mcpConfigPath: string): Record<string, ServerEntry> {
  const config = JSON.parse(readFileSync(mcpConfigPath, 'utf8')) as { mcpServers?: Record<string, ServerEntry> };
  if (!config.mcpServers || typeof config.mcpServers !== 'object') throw new Error(`${mcpConfigPath}: no mcpServers`);
  return config.mcpServers;
}

function transportFor(name: string, entry: ServerEntry): Transport {
  if (entry.url) return new StreamableHTTPClientTransport(new URL(entry.url));
  if (!entry.command) throw new Error(`MCP server ${name}: neither command nor url`);
  // As the host starts a stdio server: the default environment plus the entry's, stderr piped (and drained).
  const transport = new StdioClientTransport({
    command: entry.command,
    args: entry.args ?? [],
    env: { ...getDefaultEnvironment(), ...entry.env },
    ...(entry.cwd ? { cwd: entry.cwd } : {}),
    stderr: 'pipe',
  });
  (transport.stderr as Readable | null)?.resume();
  return transport;
}

/** Reads a streamed chat completion to its end: the text and the tool calls, assembled from their fragments. */
async function readStream(stream: AsyncIterable<OpenAI.Chat.Completions.ChatCompletionChunk>): Promise<AssistantMessage> {
  let content = '';
  const calls = new Map<number, { id: string; name: string; arguments: string }>();
  for await (const chunk of stream) {
    const delta = chunk.choices[0]?.delta;
    if (delta?.content) content += delta.content;
    for (const tc of delta?.tool_calls ?? []) {
      const entry = calls.get(tc.index) ?? { id: '', name: '', arguments: '' };
      if (tc.id) entry.id = tc.id;
      entry.name += tc.function?.name ?? '';
      entry.arguments += tc.function?.arguments ?? '';
      calls.set(tc.index, entry);
    }
  }
  const toolCalls = [...calls.entries()].sort(([a], [b]) => a - b).map(([, c]) => c);
  return { content: content === '' && toolCalls.length > 0 ? null : content, toolCalls };
}

export function ioActivities(modelUrl: string, mcpConfigPath: string): { activities: Omit<IoActivities, 'noop'>; close(): Promise<void> } {
  const openai = new OpenAI({ baseURL: modelUrl, apiKey: 'not-needed', maxRetries: 0, timeout: 60_000 });
  const clients = new Map<string, Promise<Client>>();
  const toolLists = new Map<string, unknown[]>();
  const toolsOf = (file: string): unknown[] => {
    let tools = toolLists.get(file);
    if (!tools) {
      tools = JSON.parse(readFileSync(file, 'utf8')) as unknown[];
      if (!Array.isArray(tools)) throw new Error(`${file}: not a JSON array of tools`);
      toolLists.set(file, tools);
    }
    return tools;
  };
  let servers: Record<string, ServerEntry> | undefined;
  const clientFor = (server: string): Promise<Client> => {
    let client = clients.get(server);
    if (!client) {
      servers ??= serversOf(mcpConfigPath);
      const entry = servers[server];
      if (!entry) throw new Error(`MCP server ${server} is not in ${mcpConfigPath}`);
      const c = new Client({ name: 'bench-io-floor', version: '1.0.0' });
      client = c.connect(transportFor(server, entry)).then(() => c);
      // A failed connect is not kept: the next call tries again.
      client.catch(() => clients.delete(server));
      clients.set(server, client);
    }
    return client;
  };
  return {
    activities: {
      async model({ body, toolsFile }) {
        const request = { ...body, tools: toolsOf(toolsFile), stream: true };
        const stream = await openai.chat.completions.create(request as unknown as ChatCompletionCreateParamsStreaming);
        return await readStream(stream);
      },
      async tool(call) {
        const client = await clientFor(call.server);
        const result = await client.callTool({
          name: call.tool,
          arguments: call.arguments,
          _meta: { [IDEMPOTENCY_KEY_META_KEY]: call.key, [TRACE_META_KEY]: call.key },
        });
        const content = Array.isArray(result.content) ? (result.content as Array<{ type: string; text?: string }>) : [];
        return { isError: result.isError === true, text: content.map((c) => (c.type === 'text' ? (c.text ?? '') : `[${c.type}]`)).join('\n') };
      },
    },
    async close() {
      const open = [...clients.values()];
      clients.clear();
      await Promise.all(open.map(async (c) => (await c.catch(() => undefined))?.close()));
    },
  };
}
