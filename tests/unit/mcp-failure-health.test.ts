/**
 * Which failed requests say an MCP server is unwell (what the circuit breaker counts) and which are
 * the server's answer about one request (issue 25 §2). The SDK's own timeout and lost connection are
 * produced by the real SDK here, client and server linked in memory: if an SDK upgrade changes how it
 * builds them, this test says so before the breaker starts miscounting.
 */
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { classifyRequestError, McpAbortError, McpPermanentError, McpTransientError, saysServerUnwell, type RequestVerdict } from '../../src/mcp/failures';

const opts = { timeoutMs: 50, secrets: [] };

/** A server whose tools hang until cancelled, answer a JSON-RPC error with a given code, or throw. */
async function linkedPair(): Promise<{ client: Client; clientTransport: InMemoryTransport; entered: Promise<void>; close(): Promise<void> }> {
  const server = new Server({ name: 'health', version: '1.0.0' }, { capabilities: { tools: {} } });
  let markEntered!: () => void;
  const entered = new Promise<void>((resolve) => (markEntered = resolve));
  server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
    if (req.params.name === 'hang') {
      markEntered();
      await new Promise<void>((resolve) => extra.signal.addEventListener('abort', () => resolve(), { once: true }));
      return { content: [] };
    }
    if (req.params.name === 'fail') throw new McpError(Number(req.params.arguments?.code), 'unknown user');
    throw new Error('database unreachable');
  });
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
  const client = new Client({ name: 'test', version: '1.0.0' });
  await Promise.all([server.connect(serverTransport), client.connect(clientTransport)]);
  return { client, clientTransport, entered, close: async () => void (await Promise.all([client.close(), server.close()])) };
}

async function rejection(work: Promise<unknown>): Promise<unknown> {
  return await work.then(
    () => {
      throw new Error('expected the request to fail');
    },
    (error: unknown) => error,
  );
}

const health = (v: RequestVerdict) => (v.kind === 'transient' ? { connection: v.connection, answered: v.answered } : v.kind);

describe('failures made by the SDK itself say the server is unwell', () => {
  test('its timeout: probe the connection, and count', async () => {
    const { client, close } = await linkedPair();
    const error = await rejection(client.callTool({ name: 'hang', arguments: {} }, undefined, { timeout: 50 }));
    expect(health(classifyRequestError(error, opts))).toEqual({ connection: 'probe', answered: false });
    await close();
  });

  test('a connection lost during the request: retire it, and count', async () => {
    const { client, clientTransport, entered, close } = await linkedPair();
    const pending = rejection(client.callTool({ name: 'hang', arguments: {} }));
    await entered;
    await clientTransport.close();
    expect(health(classifyRequestError(await pending, opts))).toEqual({ connection: 'retire', answered: false });
    await close();
  });
});

describe("a server's JSON-RPC error is an answer about the request, whatever its code", () => {
  // -32001 and -32000 are the codes the SDK uses for its timeout and lost connection; a server may
  // use them (the -32000..-32099 range is the server's) and must not be taken for either.
  test.each([-32001, -32000, -32099, ErrorCode.InternalError, 4001])('code %d: transient, the connection kept, not counted', async (code) => {
    const { client, close } = await linkedPair();
    const error = await rejection(client.callTool({ name: 'fail', arguments: { code } }));
    const verdict = classifyRequestError(error, opts);
    expect(verdict).toMatchObject({ kind: 'transient', reason: expect.stringMatching(/unknown user/) });
    expect(health(verdict)).toEqual({ connection: 'keep', answered: true });
    await close();
  });

  test('a handler that throws (-32603) is an answer too', async () => {
    const { client, close } = await linkedPair();
    expect(health(classifyRequestError(await rejection(client.callTool({ name: 'throw', arguments: {} })), opts))).toEqual({ connection: 'keep', answered: true });
    await close();
  });

  test('a refusal stays a refusal (data for the model, never counted)', async () => {
    const { client, close } = await linkedPair();
    const error = await rejection(client.callTool({ name: 'fail', arguments: { code: ErrorCode.InvalidParams } }));
    expect(classifyRequestError(error, opts)).toMatchObject({ kind: 'refused' });
    await close();
  });
});

describe('HTTP: a status below 500 is an answer; a 5xx, or no status, says the server is unwell', () => {
  test.each([
    [new StreamableHTTPError(500, 'Error POSTing to endpoint: boom'), false],
    [new StreamableHTTPError(502, 'Error POSTing to endpoint: bad gateway'), false],
    [new StreamableHTTPError(503, 'Error POSTing to endpoint: unavailable'), false],
    [new StreamableHTTPError(-1, 'Unexpected content type: text/html'), false],
    [new TypeError('fetch failed', { cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }) }), false],
    [new Error('Not connected'), false],
    [new Error('Error POSTing to endpoint (HTTP 503): unavailable'), false],
    [new StreamableHTTPError(400, 'Error POSTing to endpoint: bad request'), true],
    [new StreamableHTTPError(401, 'Error POSTing to endpoint: who are you'), true],
    [new StreamableHTTPError(403, 'Error POSTing to endpoint: not you'), true],
    [new StreamableHTTPError(404, 'Error POSTing to endpoint: session not found'), true],
    [new StreamableHTTPError(429, 'Error POSTing to endpoint: slow down'), true],
    [new Error('Error POSTing to endpoint (HTTP 429): slow down'), true],
  ])('%s → answered %s (the connection is retired either way)', (error, answered) => {
    expect(health(classifyRequestError(error, opts))).toEqual({ connection: 'retire', answered });
  });
});

test('saysServerUnwell: only transient failures the server did not answer', () => {
  expect(saysServerUnwell(new McpTransientError('s', 'connection lost'))).toBe(true);
  expect(saysServerUnwell(new McpTransientError('s', 'request timed out', { requestSent: true }))).toBe(true);
  expect(saysServerUnwell(new McpTransientError('s', 'server error -32001: unknown user', { requestSent: true, answered: true }))).toBe(false);
  expect(saysServerUnwell(new McpPermanentError('s', 'refused'))).toBe(false);
  expect(saysServerUnwell(new McpAbortError('s'))).toBe(false);
  expect(saysServerUnwell(new Error('anything else'))).toBe(false);
});
