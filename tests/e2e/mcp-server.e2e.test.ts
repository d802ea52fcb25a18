import { readFileSync } from 'node:fs';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CreateTaskResultSchema, ElicitRequestSchema, GetTaskResultSchema, ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { waitFor } from '../helpers/http';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { DIST, MCP_TEST_ISSUER, ROOT, startSystem, type TestSystem } from '../helpers/system';
import path from 'node:path';
import type { Policy } from '../../src/shared/policy';

/**
 * The host as an MCP server (issue 21): MCP clients of both revisions reach /mcp on the running API,
 * authenticate with the API's JWTs, chat through durable turns, and answer approvals. Real parts
 * throughout: the Temporal dev server, the worker process, the demo model, the notes and everything
 * servers; the clients are the SDK's v1 client (2025-11-25) and v2 client (2026-07-28).
 */
let sys: TestSystem;

// notes/add_note needs approval here, so a chat can stop for the caller's decision.
const basePolicy = JSON.parse(readFileSync(path.join(ROOT, 'examples/policy.json'), 'utf8')) as Policy;
const policy: Policy = { ...basePolicy, approval: { ...basePolicy.approval, tools: ['notes/add_note'], timeoutMs: 300_000, approverRoles: ['admin'] } } as Policy;

beforeAll(async () => {
  sys = await startSystem({ policy });
}, 120_000);

afterAll(async () => {
  await sys?.stop();
});

const mcpUrl = () => new URL('/mcp', sys.apiUrl);

async function legacyClient(token: string, elicit?: (message: string) => { action: 'accept' | 'decline' | 'cancel'; content?: Record<string, string | number | boolean | string[]> }): Promise<LegacyClient> {
  const client = new LegacyClient({ name: 'legacy-test', version: '1.0.0' }, { capabilities: elicit ? { elicitation: { form: {} } } : {} });
  if (elicit) client.setRequestHandler(ElicitRequestSchema, async (request) => elicit(request.params.message));
  await client.connect(new LegacyTransport(mcpUrl(), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  return client;
}

async function modernClient(token: string, opts: { elicit?: (params: { message: string }) => { action: 'accept' | 'decline' | 'cancel'; content?: Record<string, string | number | boolean | string[]> } } = {}): Promise<Client> {
  const client = new Client(
    { name: 'modern-test', version: '1.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } }, capabilities: opts.elicit ? { elicitation: { form: {} } } : {} },
  );
  if (opts.elicit) {
    const elicit = opts.elicit;
    client.setRequestHandler('elicitation/create', async (request) => elicit(request.params as { message: string }));
  }
  await client.connect(new StreamableHTTPClientTransport(mcpUrl(), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  return client;
}

type Structured = { turnId: string; sessionId: string; status: string; text?: string; toolCalls: Array<{ name: string; state: string }>; pendingApprovals?: Array<{ toolCallId: string }> };
const structured = (r: unknown): Structured => (r as { structuredContent: Structured }).structuredContent;

describe('the edge of /mcp', () => {
  test('the protected resource metadata names the resource and the authorization server', async () => {
    const res = await fetch(new URL('/.well-known/oauth-protected-resource/mcp', sys.apiUrl));
    expect(res.status).toBe(200);
    const body = (await res.json()) as { resource: string; authorization_servers: string[] };
    expect(body.resource).toBe(mcpUrl().href);
    expect(body.authorization_servers).toEqual([MCP_TEST_ISSUER]);
  });

  test('no token or a bad one: 401 with a challenge that points at the metadata', async () => {
    for (const authorization of [undefined, 'Bearer not-a-jwt']) {
      const res = await fetch(mcpUrl(), {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(authorization ? { authorization } : {}) },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      });
      expect(res.status).toBe(401);
      const challenge = res.headers.get('www-authenticate') ?? '';
      expect(challenge).toMatch(/^Bearer resource_metadata="http:\/\/127\.0\.0\.1:\d+\/\.well-known\/oauth-protected-resource\/mcp"/);
      expect(challenge.includes('invalid_token')).toBe(authorization !== undefined);
    }
  });

  test('DNS rebinding: a foreign Host or Origin is refused before authentication', async () => {
    const token = await sys.token('student');
    const base = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${token}` };
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    const url = mcpUrl();
    // fetch does not let a caller set Host; node:http does.
    const { request } = await import('node:http');
    const status = await new Promise<number>((resolve, reject) => {
      const req = request({ host: url.hostname, port: url.port, path: url.pathname, method: 'POST', headers: { ...base, host: 'attacker.example' } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end(body);
    });
    expect(status).toBe(403);
    const fromPage = await fetch(url, { method: 'POST', headers: { ...base, origin: 'http://attacker.example' }, body });
    expect(fromPage.status).toBe(403);
  });
});

describe('a 2025-11-25 client', () => {
  test('lists the tools and chats through a durable turn; another user cannot read it', async () => {
    const client = await legacyClient(await sys.token('student'));
    try {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name).sort()).toEqual(['cancel_turn', 'chat', 'decide_approval', 'get_turn', 'list_approvals', 'list_sessions', 'read_session']);
      const chat = tools.find((t) => t.name === 'chat');
      expect(chat?.inputSchema.required).toEqual(['message']);

      const result = await client.callTool({ name: 'chat', arguments: { message: 'add 2 and 3' } });
      const turn = structured(result);
      expect(turn.status).toBe('completed');
      expect(turn.text).toContain('5');
      expect(turn.toolCalls.map((c) => c.name)).toEqual(['everything__get-sum']);

      const other = await legacyClient(await sys.token('teacher'));
      try {
        const read = await other.callTool({ name: 'get_turn', arguments: { turnId: turn.turnId } });
        expect(read.isError).toBe(true);
        expect(JSON.stringify(read.content)).toContain('not found');
      } finally {
        await other.close();
      }
    } finally {
      await client.close();
    }
  });

  test('a call that needs approval comes back pending, and the approval tools decide it', async () => {
    const client = await legacyClient(await sys.token('student'));
    try {
      const first = structured(await client.callTool({ name: 'chat', arguments: { message: 'remember that the kettle is broken' } }));
      expect(first.status).toBe('awaiting_approval');
      const pending = first.pendingApprovals?.[0];
      expect(pending).toBeDefined();

      const inbox = (await client.callTool({ name: 'list_approvals', arguments: {} })).structuredContent as { approvals: Array<{ turnId: string; toolCallId: string }> };
      expect(inbox.approvals.some((a) => a.turnId === first.turnId && a.toolCallId === pending?.toolCallId)).toBe(true);

      const decided = await client.callTool({ name: 'decide_approval', arguments: { turnId: first.turnId, toolCallId: pending?.toolCallId, approve: true } });
      expect(decided.structuredContent).toMatchObject({ decision: 'approved' });
    } finally {
      await client.close();
    }
  });
});

describe('a 2025-11-25 client in a session', () => {
  test('an approval is asked of it as elicitation/create, and its answer runs the call', async () => {
    const asked: string[] = [];
    const client = await legacyClient(await sys.token('student'), (message) => {
      asked.push(message);
      return { action: 'accept', content: { approve: true } };
    });
    try {
      const turn = structured(await client.callTool({ name: 'chat', arguments: { message: 'remember that the door squeaks' } }));
      expect(asked).toHaveLength(1);
      expect(asked[0]).toContain('notes__add_note');
      expect(turn.status).toBe('completed');
      expect(turn.toolCalls.find((c) => c.name === 'notes__add_note')?.state).toBe('completed');
    } finally {
      await client.close();
    }
  });

  test('a session is its opener\'s: another caller naming it gets 404, as for an unknown one', async () => {
    const client = await legacyClient(await sys.token('student'));
    try {
      const sessionId = (client.transport as LegacyTransport).sessionId;
      expect(sessionId).toBeDefined();
      const res = await fetch(mcpUrl(), {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          authorization: `Bearer ${await sys.token('teacher')}`,
          'mcp-session-id': sessionId ?? '',
          'mcp-protocol-version': '2025-11-25',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      });
      expect(res.status).toBe(404);
    } finally {
      await client.close();
    }
  });
});

describe('subscriptions to a running turn (2025 sessions)', () => {
  test('a client subscribed to a turn hears of its changes until it ends', async () => {
    const client = await legacyClient(await sys.token('student'));
    try {
      expect(client.getServerCapabilities()?.resources?.subscribe).toBe(true);
      const updates: string[] = [];
      client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void updates.push(n.params.uri));
      // A turn that stops for approval: it runs until someone decides, so the subscription comes first.
      const created = await client.request(
        { method: 'tools/call', params: { name: 'chat', arguments: { message: 'remember that the gate is open' }, task: { ttl: 60_000 } } },
        CreateTaskResultSchema,
      );
      const uri = `durable-host://turns/${created.task.taskId}`;
      await client.subscribeResource({ uri });
      await waitFor(async () => ((await client.request({ method: 'tasks/get', params: { taskId: created.task.taskId } }, GetTaskResultSchema)).status === 'input_required' ? true : undefined));
      const pending = structured(await client.callTool({ name: 'get_turn', arguments: { turnId: created.task.taskId } })).pendingApprovals?.[0];
      await client.callTool({ name: 'decide_approval', arguments: { turnId: created.task.taskId, toolCallId: pending?.toolCallId, approve: true } });
      await waitFor(async () => (updates.length > 0 ? true : undefined));
      expect(new Set(updates)).toEqual(new Set([uri]));
      await waitFor(async () => {
        const read = await client.readResource({ uri });
        return (JSON.parse((read.contents[0] as { text: string }).text) as { status: string }).status === 'completed' ? true : undefined;
      });
      await client.unsubscribeResource({ uri });
      // Someone else's turn cannot be subscribed to.
      const other = await legacyClient(await sys.token('teacher'));
      try {
        await expect(other.subscribeResource({ uri })).rejects.toThrow(/not found/);
      } finally {
        await other.close();
      }
    } finally {
      await client.close();
    }
  });
});

describe('chat as a task (2025-11-25 tasks)', () => {
  test('a task waiting for approval reports input_required, and cancelling it cancels the turn', async () => {
    const client = await legacyClient(await sys.token('student'));
    try {
      const created = await client.request(
        { method: 'tools/call', params: { name: 'chat', arguments: { message: 'remember that the roof leaks' }, task: { ttl: 60_000 } } },
        CreateTaskResultSchema,
      );
      const taskId = created.task.taskId;
      const get = () => client.request({ method: 'tasks/get', params: { taskId } }, GetTaskResultSchema);
      await waitFor(async () => ((await get()).status === 'input_required' ? true : undefined));
      const cancelled = await client.request({ method: 'tasks/cancel', params: { taskId } }, GetTaskResultSchema);
      expect(cancelled.status).toBe('cancelled');
      await waitFor(async () => ((await get()).status === 'cancelled' ? true : undefined));
      const turn = await client.callTool({ name: 'get_turn', arguments: { turnId: taskId } });
      expect(structured(turn).status).toBe('cancelled');

      // Someone else's task is not found, whatever its id.
      const other = await legacyClient(await sys.token('teacher'));
      try {
        await expect(other.request({ method: 'tasks/get', params: { taskId } }, GetTaskResultSchema)).rejects.toThrow(/not found/);
      } finally {
        await other.close();
      }
    } finally {
      await client.close();
    }
  });
});

describe('a 2026-07-28 client', () => {
  test('chats with progress, continues its session, and a retried key lands on the same turn', async () => {
    const client = await modernClient(await sys.token('student'));
    try {
      const progress: string[] = [];
      const first = await client.callTool(
        { name: 'chat', arguments: { message: 'echo hello from the other side' } },
        { onprogress: (p: { message?: string }) => void progress.push(p.message ?? '') },
      );
      const turn = structured(first);
      expect(turn.status).toBe('completed');
      expect(turn.text).toContain('hello from the other side');
      expect(progress).toContain('calling everything__echo');

      const again = structured(await client.callTool({ name: 'chat', arguments: { message: 'add 4 and 5', sessionId: turn.sessionId } }));
      expect(again.sessionId).toBe(turn.sessionId);
      const transcript = (await client.callTool({ name: 'read_session', arguments: { sessionId: turn.sessionId } })).structuredContent as { messages: unknown[] };
      expect(transcript.messages).toHaveLength(4);

      const keyed = { name: 'chat', arguments: { message: 'add 1 and 1' }, _meta: { idempotencyKey: `k-${turn.turnId}` } };
      const a = structured(await client.callTool(keyed));
      const b = structured(await client.callTool(keyed));
      expect(b.turnId).toBe(a.turnId);

      const resource = await client.readResource({ uri: `durable-host://turns/${a.turnId}` });
      expect(JSON.parse((resource.contents[0] as { text: string }).text)).toMatchObject({ turnId: a.turnId, status: 'completed' });
    } finally {
      await client.close();
    }
  });

  test('an approval is asked of the client through input_required, and its answer runs the call', async () => {
    const asked: string[] = [];
    const client = await modernClient(await sys.token('student'), {
      elicit: ({ message }) => {
        asked.push(message);
        return { action: 'accept', content: { approve: true } };
      },
    });
    try {
      const turn = structured(await client.callTool({ name: 'chat', arguments: { message: 'remember that the plants need water' } }));
      expect(asked).toHaveLength(1);
      expect(asked[0]).toContain('notes__add_note');
      expect(turn.status).toBe('completed');
      expect(turn.toolCalls.find((c) => c.name === 'notes__add_note')?.state).toBe('completed');
      const notes = (await client.callTool({ name: 'chat', arguments: { message: 'list notes', sessionId: turn.sessionId } })).structuredContent as Structured;
      expect(notes.text).toContain('the plants need water');
    } finally {
      await client.close();
    }
  });
});

describe('the stdio bridge, for clients that only spawn processes', () => {
  test('a client spawning the bridge lists the tools and chats', async () => {
    const client = new LegacyClient({ name: 'spawning-test', version: '1.0.0' });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [path.join(DIST, 'src/cli/mcp-bridge.js'), '--url', mcpUrl().href],
        env: { DMH_TOKEN: await sys.token('student'), PATH: process.env.PATH ?? '' },
        stderr: 'pipe',
      }),
    );
    try {
      expect((await client.listTools()).tools.map((t) => t.name)).toContain('chat');
      const turn = structured(await client.callTool({ name: 'chat', arguments: { message: 'add 20 and 22' } }));
      expect(turn.status).toBe('completed');
      expect(turn.text).toContain('42');
    } finally {
      await client.close();
    }
  });
});

describe('MCP Inspector (CLI mode)', () => {
  const inspector = path.join(ROOT, 'node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js');
  const run = async (args: string[]): Promise<unknown> => {
    const { execFile } = await import('node:child_process');
    const token = await sys.token('student');
    const stdout = await new Promise<string>((resolve, reject) =>
      execFile(process.execPath, [inspector, '--cli', mcpUrl().href, '--header', `Authorization: Bearer ${token}`, ...args], { timeout: 120_000 }, (err, out, errOut) =>
        err ? reject(new Error(`inspector failed: ${err.message}\n${errOut}`)) : resolve(out),
      ),
    );
    return JSON.parse(stdout);
  };

  test('lists the tools and calls chat against the running host', async () => {
    const listed = (await run(['--method', 'tools/list'])) as { tools: Array<{ name: string }> };
    expect(listed.tools.map((t) => t.name)).toEqual(expect.arrayContaining(['chat', 'decide_approval', 'read_session']));
    const called = (await run(['--method', 'tools/call', '--tool-name', 'chat', '--tool-arg', 'message=add 7 and 8'])) as { structuredContent: Structured };
    expect(called.structuredContent.status).toBe('completed');
    expect(called.structuredContent.text).toContain('15');
  });
});
