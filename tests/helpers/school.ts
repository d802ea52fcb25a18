import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { DemoRules } from '../../src/demo-model/rules';
import { spawnManaged, type ManagedProcess } from '../../src/cli/processes';
import { readStore } from '../../examples/servers/school/store';
import { getJson, readSse } from './http';
import { DIST, EXAMPLE_RULES, ROOT, startSystem, type SystemOptions, type TestSystem } from './system';

export const SCHOOL = (name: string) => path.join(DIST, 'examples/servers/school', `${name}-server.js`);

/** The school context the demo host gathers (examples/host.json), with short timeouts for crash tests. */
export const SCHOOL_HOST = {
  // As in examples/host.json: what an admin, a teacher or a student gets as context.
  contextByRole: (JSON.parse(readFileSync(path.join(ROOT, 'examples/host.json'), 'utf8')) as { contextByRole: unknown }).contextByRole,
  maxSteps: 8,
  timeouts: { llmStartToCloseMs: 30_000, llmHeartbeatMs: 3_000, toolStartToCloseMs: 60_000, toolHeartbeatMs: 3_000 },
};

export interface SchoolSystem extends TestSystem {
  dataFile: string;
  payments: () => ManagedProcess;
  /** Restarts the payments server on the same port (for outage tests), with `extraEnv` added to its environment. */
  stopPayments(): Promise<void>;
  startPayments(extraEnv?: Record<string, string>): Promise<void>;
  store(): ReturnType<typeof readStore>;
}

export interface SchoolOptions extends Omit<SystemOptions, 'servers'> {
  /** SCHOOL_TOOL_DELAY_MS for every school server, e.g. "process_payment=3000". */
  toolDelays?: string;
  /** Leave the payments server off (outage from the start). */
  paymentsDown?: boolean;
  /**
   * The revision the payments server speaks: 2025-11-25 on the v1 SDK, or 2026-07-28 on the v2 server
   * package (`--protocol 2026-07-28`, which refuses 2025 requests); the host's entry is pinned to it.
   * Unset: the server's default (2025-11-25) and the entry at `auto`. (Pinned rather than `auto`: with
   * this entry's 2 s connect deadline the `server/discover` probe gets 666 ms, and a probe that misses
   * it, as a cold server on a busy machine can, falls back to `initialize`, which the 2026 server
   * refuses: correct, but a test could then not tell that no 2025 request reached it.)
   */
  paymentsProtocol?: '2025-11-25' | '2026-07-28';
}

export async function startSchoolSystem(opts: SchoolOptions = {}): Promise<SchoolSystem> {
  let payments: ManagedProcess | undefined;
  let paymentsPort = 0;
  let dataFile = '';
  const env = opts.toolDelays ? { SCHOOL_TOOL_DELAY_MS: opts.toolDelays } : {};
  const startPayments = async (extraEnv: Record<string, string> = {}) => {
    const { proc, match } = await spawnManaged(
      'payments',
      process.execPath,
      [SCHOOL('payments'), '--http', '--port', String(paymentsPort), '--data', dataFile, ...(opts.paymentsProtocol ? ['--protocol', opts.paymentsProtocol] : [])],
      { env: { ...process.env, ...env, ...extraEnv }, readyLine: /^PAYMENTS_SERVER_URL=http:\/\/127\.0\.0\.1:(\d+)\/mcp/ },
    );
    payments = proc;
    paymentsPort = Number(match?.[1]);
  };
  const rules = JSON.parse(readFileSync(EXAMPLE_RULES, 'utf8')) as DemoRules;
  const sys = await startSystem({
    rules,
    ...opts,
    host: { ...SCHOOL_HOST, ...opts.host },
    servers: async (dir, onStop) => {
      dataFile = path.join(dir, 'school.json');
      await startPayments();
      onStop(async () => payments?.stop());
      if (opts.paymentsDown) await payments?.stop();
      // Every school server dedupes tools/call on the host's idempotency key (effectTool in core.ts).
      const stdio = (name: string) => ({ command: process.execPath, args: [SCHOOL(name), '--stdio', '--data', dataFile], env, honoursIdempotencyKey: true });
      return {
        admin: stdio('admin'),
        payments: {
          url: `http://127.0.0.1:${paymentsPort}/mcp`,
          timeouts: { connectMs: 2_000 },
          honoursIdempotencyKey: true,
          ...(opts.paymentsProtocol ? { protocol: opts.paymentsProtocol } : {}),
        },
        comms: stdio('comms'),
        student: stdio('student'),
        teacher: stdio('teacher'),
        ...opts.extraServers,
      };
    },
  });
  return {
    ...sys,
    dataFile,
    payments: () => payments as ManagedProcess,
    stopPayments: async () => payments?.stop(),
    startPayments,
    store: () => {
      if (!existsSync(dataFile)) throw new Error(`no school store at ${dataFile}`);
      return readStore(dataFile);
    },
  };
}

/**
 * Waits for the turn to end, then checks seed pattern 3's promise: the turn completed, the invoice is
 * paid by its one transaction, and one receipt went out. Returns the turn's state.
 */
export async function expectPaidOnce(sys: SchoolSystem, invoiceId: string, turnId: string): Promise<{ toolCalls: Array<{ name: string; state: string; step: number }> }> {
  const events = await readSse(`${sys.apiUrl}/v1/turns/${turnId}/events`, { timeoutMs: 150_000 });
  expect(events.at(-1)?.event).toBe('done');
  const turn = await getJson(`${sys.apiUrl}/v1/turns/${turnId}`);
  const store = sys.store();
  const invoice = store.invoices.find((i) => i.id === invoiceId);
  // A failure shows the answer and the calls' states, which say why (e.g. "I stopped because a step failed: …").
  const calls = (turn.body.toolCalls as Array<{ name: string; state: string }> | undefined)?.map((c) => `${c.name}: ${c.state}`);
  expect({ status: turn.body.status, invoice: invoice?.status, answer: turn.body.text, calls }).toEqual({ status: 'completed', invoice: 'paid', answer: expect.anything(), calls: expect.anything() });
  const txs = store.transactions.filter((t) => t.invoiceId === invoiceId);
  expect(txs).toHaveLength(1);
  expect(invoice?.transactionId).toBe(txs[0]?.id);
  expect(store.outbox.filter((m) => m.subject === `Payment receipt for invoice ${invoiceId}`)).toHaveLength(1);
  return turn.body as { toolCalls: Array<{ name: string; state: string; step: number }> };
}

/**
 * Bob's one unpaid invoice (the demo script pays "the" unpaid invoice): the seeded one first, later a
 * fresh one issued through a real admin server on the same store.
 */
export async function newInvoiceForBob(sys: SchoolSystem, amount: number): Promise<string> {
  const unpaid = sys.store().invoices.filter((i) => i.userId === 'u-bob' && i.status === 'unpaid');
  if (unpaid.length > 1) throw new Error(`Bob has ${unpaid.length} unpaid invoices; the scenario needs exactly one`);
  if (unpaid[0]) return unpaid[0].id;
  const client = new Client({ name: 'school-test', version: '1' });
  await client.connect(new StdioClientTransport({ command: process.execPath, args: [SCHOOL('admin'), '--stdio', '--data', sys.dataFile], stderr: 'ignore' }));
  try {
    const res = await client.callTool({ name: 'issue_invoice', arguments: { userId: 'u-bob', amount, description: `test ${amount}` } });
    return (res.structuredContent as { invoice: { id: string } }).invoice.id;
  } finally {
    await client.close();
  }
}
