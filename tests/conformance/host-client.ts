/**
 * The conformance suite's client under test, through the whole host (issue 22 §2): the scenario's
 * server becomes an entry of a running system's MCP config (the worker reloads it), each of its tools
 * is run as a turn through the public API (`POST /v1/sessions/:id/tool-calls`), and the server's
 * questions reach the worker's own elicitation handler, the turn and this process, which plays the user:
 * it answers each `input_required` through `POST /v1/turns/:turnId/inputs/:toolCallId`, accepting the
 * form as the console shows it (its defaults filled in). Nothing here speaks MCP.
 *
 * The runner starts it with the server's URL; the system comes from tests/conformance/client-through-host.test.ts:
 * DMH_CONFORMANCE_API, DMH_CONFORMANCE_TOKEN and DMH_CONFORMANCE_MCP_CONFIG (the worker's MCP config file).
 */
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { sseEvents } from '../../src/shared/sse';
import { sampleArguments } from './sample-arguments';

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run this through tests/conformance/client-through-host.test.ts`);
  return value;
};
const api = env('DMH_CONFORMANCE_API');
const headers = { authorization: `Bearer ${env('DMH_CONFORMANCE_TOKEN')}`, 'content-type': 'application/json' };
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

type Schema = { properties?: Record<string, { type?: string; default?: unknown }> };

/** What a user sends who accepts the form as shown: every field that has a default, with it. */
function formDefaults(schema: Schema | undefined): Record<string, unknown> {
  return Object.fromEntries(Object.entries(schema?.properties ?? {}).flatMap(([name, p]) => (p.default === undefined ? [] : [[name, p.default]])));
}

/** The scenario's server as the one conformance entry of the worker's MCP config (the file is replaced whole). */
function configure(file: string, name: string, url: string): void {
  const config = JSON.parse(readFileSync(file, 'utf8')) as { mcpServers: Record<string, unknown> };
  for (const key of Object.keys(config.mcpServers)) if (key.startsWith('conformance')) delete config.mcpServers[key];
  const protocol = process.env['MCP_CONFORMANCE_PROTOCOL_VERSION'] === '2026-07-28' ? { protocol: '2026-07-28' } : {};
  config.mcpServers[name] = { url, transport: 'streamable-http', timeouts: { connectMs: 60_000, listMs: 60_000, callMs: 60_000 }, ...protocol };
  writeFileSync(`${file}.next`, JSON.stringify(config, null, 2));
  renameSync(`${file}.next`, file);
}

async function json(method: string, route: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${api}${route}`, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  return { status: res.status, body: (await res.json().catch(() => ({}))) as Record<string, unknown> };
}

/** The server's tools once the worker has connected it and the API lists them. */
async function toolsOf(server: string): Promise<Array<{ tool: string; inputSchema: Schema }>> {
  const deadline = Date.now() + 90_000;
  for (;;) {
    const listed = await json('GET', '/v1/tools');
    const tools = ((listed.body['tools'] ?? []) as Array<{ server: string; tool: string; inputSchema: Schema }>).filter((t) => t.server === server);
    if (tools.length > 0) return tools;
    if (Date.now() > deadline) throw new Error(`the host never listed ${server}'s tools: ${JSON.stringify(listed.body['servers'] ?? listed.body).slice(0, 500)}`);
    await pause(250);
  }
}

/** Follows the turn to its end, answering each question as the user; the turn's answer. */
async function follow(turnId: string): Promise<string> {
  let last = 0;
  for (let round = 0; round < 20; round++) {
    const res = await fetch(`${api}/v1/turns/${turnId}/events?after=${last}`, { headers: { ...headers, accept: 'text/event-stream' } });
    if (!res.ok || !res.body) throw new Error(`events of ${turnId}: HTTP ${res.status}`);
    for await (const e of sseEvents(res.body as unknown as AsyncIterable<Uint8Array>)) {
      if (e.id !== undefined) last = Number(e.id);
      const data = e.data as Record<string, unknown>;
      if (e.event === 'input_required') {
        const content = formDefaults(data['requestedSchema'] as Schema);
        const answered = await json('POST', `/v1/turns/${turnId}/inputs/${String(data['toolCallId'])}`, { action: 'accept', content });
        console.log(`the user accepted "${String(data['message'])}" with ${JSON.stringify(content)}: HTTP ${answered.status}`);
      }
      if (e.event === 'done' || e.event === 'error' || e.event === 'cancelled') {
        const turn = await json('GET', `/v1/turns/${turnId}`);
        return `${e.event}: ${String(turn.body['text'] ?? JSON.stringify(turn.body['error'] ?? ''))}`;
      }
    }
  }
  throw new Error(`turn ${turnId} never ended`);
}

async function main(): Promise<void> {
  const url = process.argv[2];
  if (!url) throw new Error('usage: host-client.js <server-url>');
  const server = `conformance${new URL(url).port}`;
  configure(env('DMH_CONFORMANCE_MCP_CONFIG'), server, url);
  const tools = await toolsOf(server);
  for (const t of tools) {
    const posted = await json('POST', `/v1/sessions/${server}/tool-calls`, { server, tool: t.tool, arguments: sampleArguments(t.inputSchema) });
    if (posted.status !== 202) throw new Error(`${t.tool}: HTTP ${posted.status} ${JSON.stringify(posted.body)}`);
    console.log(`${t.tool}: ${(await follow(String(posted.body['turnId']))).slice(0, 300)}`);
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : String(error));
  process.exit(1);
});
