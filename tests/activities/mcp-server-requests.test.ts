import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import { ElicitResultSchema, type ElicitRequestFormParams, type ServerNotification, type ServerRequest } from '@modelcontextprotocol/sdk/types.js';
import pino from 'pino';
import { z } from 'zod';
import { parseMcpConfig } from '../../src/mcp/config';
import { ElicitationSession, elicitFromCaller } from '../../src/mcp/elicitation';
import { McpServerHub } from '../../src/mcp/pool';
import { callerContext, type CallerContext } from '../../src/mcp/user-token';

/**
 * A server's question reaches the tool call it belongs to, or nobody (issue 22 §2). One pooled
 * Streamable HTTP connection to a shared server carries two users' calls at once; the server asks on
 * the standalone GET stream (tied to no call) and on each call's own stream. The connection was
 * opened by the first user's call, whose context the GET stream used to inherit.
 */
type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

interface Deferred<T> {
  promise: Promise<T>;
  resolve: (value: T) => void;
}

function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

const question = (message: string): ElicitRequestFormParams => ({
  mode: 'form',
  message,
  requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
});

/** The server: a `hold` tool that stays in flight until released, reporting its call's `extra`. */
function startServer() {
  const started = new Map<string, Deferred<Extra>>([['alice', deferred<Extra>()], ['bob', deferred<Extra>()]]);
  const release = deferred();
  const getStreamOpen = deferred();
  const mcp = new McpServer({ name: 'shared', version: '1' });
  mcp.registerTool('hold', { description: 'waits', inputSchema: { who: z.string() } }, async ({ who }, extra) => {
    started.get(who)?.resolve(extra);
    await release.promise;
    return { content: [{ type: 'text', text: `done for ${who}` }] };
  });
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID() });
  const connected = mcp.connect(transport);
  const http = createServer((req, res) => {
    if (req.method === 'GET') {
      // The standalone stream is registered before its headers go out: from then on, the server can use it.
      const writeHead = res.writeHead.bind(res) as (...args: unknown[]) => typeof res;
      res.writeHead = ((...args: unknown[]) => {
        const result = writeHead(...args);
        if (res.statusCode === 200) getStreamOpen.resolve();
        return result;
      }) as typeof res.writeHead;
    }
    void connected.then(() => transport.handleRequest(req, res));
  });
  return { mcp, http, started, release, getStreamOpen };
}

let server: ReturnType<typeof startServer>;
let hub: McpServerHub;

beforeEach(async () => {
  server = startServer();
  await new Promise<void>((r) => server.http.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.http.address() as AddressInfo).port}/mcp`;
  const config = parseMcpConfig({ mcpServers: { shared: { url, transport: 'streamable-http' } } }, {}, process.cwd());
  hub = new McpServerHub(config, { elicit: elicitFromCaller, logger: pino({ level: process.env.DEBUG_HUB ? 'debug' : 'silent' }) });
});

afterEach(async () => {
  server.release.resolve();
  await hub.close();
  server.http.closeAllConnections();
  await new Promise((r) => server.http.close(r));
  await server.mcp.close();
});

const caller = (principal: string, answers: ConstructorParameters<typeof ElicitationSession>[0]): CallerContext & { elicitation: ElicitationSession } => ({
  principal,
  turnId: `turn-${principal}`,
  elicitation: new ElicitationSession(answers),
});

test("a question on the standalone GET stream reaches neither user's call; one on a call's stream reaches that user only", async () => {
  const alice = caller('alice', [{ message: 'Alice, your name?', action: 'accept', content: { name: 'Ada' } }]);
  const bob = caller('bob', [{ message: 'Bob, your name?', action: 'accept', content: { name: 'Bob' } }]);
  // Alice's call opens the connection; Bob's shares it.
  const aliceCall = callerContext.run(alice, () => hub.callTool({ server: 'shared', tool: 'hold', arguments: { who: 'alice' } }));
  const aliceExtra = await server.started.get('alice')!.promise;
  const bobCall = callerContext.run(bob, () => hub.callTool({ server: 'shared', tool: 'hold', arguments: { who: 'bob' } }));
  const bobExtra = await server.started.get('bob')!.promise;
  await server.getStreamOpen.promise;

  // Related to no request: the SDK sends it on the standalone GET stream. Nobody's, so declined.
  expect(await server.mcp.server.elicitInput(question('Whose question is this?'))).toEqual({ action: 'decline' });
  expect(alice.elicitation?.asked).toBeUndefined();
  expect(bob.elicitation?.asked).toBeUndefined();

  // Related to Bob's call (its own POST stream): Bob's recorded answer, and nothing asked of Alice.
  const toBob = await bobExtra.sendRequest({ method: 'elicitation/create', params: question('Bob, your name?') }, ElicitResultSchema);
  expect(toBob).toEqual({ action: 'accept', content: { name: 'Bob' } });
  const toAlice = await aliceExtra.sendRequest({ method: 'elicitation/create', params: question('Alice, your name?') }, ElicitResultSchema);
  expect(toAlice).toEqual({ action: 'accept', content: { name: 'Ada' } });
  expect(alice.elicitation?.asked).toBeUndefined();
  expect(bob.elicitation?.asked).toBeUndefined();

  server.release.resolve();
  expect(await aliceCall).toEqual({ isError: false, text: 'done for alice' });
  expect(await bobCall).toEqual({ isError: false, text: 'done for bob' });
});

test('a question on the standalone GET stream while one call is in flight is that call’s (its user is the only one the host could ask)', async () => {
  const alice = caller('alice', [{ message: 'Your name?', action: 'accept', content: { name: 'Ada' } }]);
  const aliceCall = callerContext.run(alice, () => hub.callTool({ server: 'shared', tool: 'hold', arguments: { who: 'alice' } }));
  await server.started.get('alice')!.promise;
  await server.getStreamOpen.promise;
  // As the conformance suite's server asks: on the connection's own stream, related to no request.
  expect(await server.mcp.server.elicitInput(question('Your name?'))).toEqual({ action: 'accept', content: { name: 'Ada' } });
  server.release.resolve();
  expect(await aliceCall).toEqual({ isError: false, text: 'done for alice' });
});
