import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema, GetTaskResultSchema, ListTasksResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { freePort, type ManagedProcess } from '../../src/cli/processes';
import { startApiProcess } from '../helpers/api-process';
import { readSse, waitFor } from '../helpers/http';
import { SCHOOL_HOST, startSchoolSystem, type SchoolSystem } from '../helpers/school';
import { defaultHostConfig } from '../helpers/system';

/**
 * Issue 21's durability promise, as an MCP client sees it: the payment sentence sent through `chat`
 * as a task (2025-11-25 tasks), the worker SIGKILLed while the payment runs and the API process
 * restarted, and the client, polling the same URL, still gets the answer, with exactly one charge.
 * Real processes throughout: Temporal dev server, worker, the API as its own process, the school
 * servers (payments over Streamable HTTP, slowed so the kill lands mid-call).
 */
jest.setTimeout(240_000);

let sys: SchoolSystem;
let api: { proc: ManagedProcess; url: string };
let apiEnv: NodeJS.ProcessEnv;

beforeAll(async () => {
  sys = await startSchoolSystem({ toolDelays: 'process_payment=2500' });
  const hostConfig = path.join(sys.dir, 'host.json');
  writeFileSync(hostConfig, JSON.stringify(defaultHostConfig(SCHOOL_HOST)));
  apiEnv = { HOST_CONFIG: hostConfig, API_PORT: String(await freePort()), TOKEN_SEAL_KEY: randomBytes(32).toString('hex') };
  api = await startApiProcess(sys, apiEnv);
}, 120_000);

afterAll(async () => {
  await sys?.stop();
});

async function connect(): Promise<Client> {
  const client = new Client({ name: 'tasks-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL('/mcp', api.url), { requestInit: { headers: { authorization: `Bearer ${await sys.token('admin')}` } } }));
  return client;
}

test('a chat task survives a killed worker and a restarted API, and charges Bob once', async () => {
  const invoice = sys.store().invoices.find((i) => i.userId === 'u-bob' && i.status === 'unpaid');
  expect(invoice).toBeDefined();
  const client = await connect();
  try {
    expect(client.getServerCapabilities()?.tasks?.requests?.tools?.call).toBeDefined();
    const chat = (await client.listTools()).tools.find((t) => t.name === 'chat');
    expect(chat?.execution?.taskSupport).toBe('optional');

    const created = await client.request(
      { method: 'tools/call', params: { name: 'chat', arguments: { message: "Process payment for student Bob's invoice" }, task: { ttl: 600_000 } } },
      CreateTaskResultSchema,
    );
    const taskId = created.task.taskId;
    expect(created.task.status).toBe('working');

    // The payment is on its way (2.5 s at the server): kill the worker, then restart the API too.
    await readSse(`${sys.apiUrl}/v1/turns/${taskId}/events`, {
      stopAfter: (e) => e.event === 'tool_call_started' && String(e.data).includes('payments__process_payment'),
      timeoutMs: 60_000,
    });
    await sys.worker.kill();
    await api.proc.kill();
    await sys.startWorker();
    api = await startApiProcess(sys, apiEnv);

    // The same client, the same URL: the task is the turn, which any API process can answer for.
    const done = await waitFor(
      async () => {
        const task = await client.request({ method: 'tasks/get', params: { taskId } }, GetTaskResultSchema).catch(() => undefined);
        return task && ['completed', 'failed', 'cancelled'].includes(task.status) ? task : undefined;
      },
      150_000,
      250,
    );
    expect(done.status).toBe('completed');
    const result = await client.request({ method: 'tasks/result', params: { taskId } }, CallToolResultSchema);
    expect(JSON.stringify(result.content)).toMatch(/paid|payment/i);
    expect((result.structuredContent as { toolCalls: Array<{ name: string }> }).toolCalls.map((c) => c.name)).toContain('payments__process_payment');

    const store = sys.store();
    expect(store.invoices.find((i) => i.id === invoice?.id)?.status).toBe('paid');
    expect(store.transactions.filter((t) => t.invoiceId === invoice?.id)).toHaveLength(1);

    const listed = await client.request({ method: 'tasks/list', params: {} }, ListTasksResultSchema);
    expect(listed.tasks.find((t) => t.taskId === taskId)?.status).toBe('completed');
    await expect(client.request({ method: 'tasks/cancel', params: { taskId } }, GetTaskResultSchema)).rejects.toThrow(/already completed/);
  } finally {
    await client.close();
  }
});
