/**
 * Seed pattern 3 (find_user → get_invoice → process_payment → record_payment + receipt) with the
 * payments server on MCP 2026-07-28: the school payments server served by the v2 server package
 * (`--protocol 2026-07-28`, modern.ts), which refuses every 2025 request; the host's entry for it is
 * pinned to that revision (tests/helpers/school.ts says why not `auto`). The admin and comms servers
 * of the same turn stay on 2025-11-25 (stdio). The worker is SIGKILLed while process_payment is in
 * flight on that server, a new worker takes the turn over, and the call goes again with the same
 * idempotency key: killed before the effect (the fault hook delays the call first) or after it (the
 * server, restarted with SCHOOL_TOOL_HOLD_MS, holds the applied effect's result until its caller is
 * gone), the server applies it once, and the invoice is paid by one transaction with one receipt.
 */
import { getJson, postMessage, waitFor, waitForToolProgress } from '../helpers/http';
import { expectPaidOnce, newInvoiceForBob, startSchoolSystem, type SchoolSystem } from '../helpers/school';

let sys: SchoolSystem;

beforeAll(async () => {
  sys = await startSchoolSystem({ paymentsProtocol: '2026-07-28', toolDelays: 'process_payment=2500' });
}, 120_000);

afterAll(async () => {
  await sys?.stop();
});

/** The payments server's log lines (stderr: `school-payments[pid]: …`). */
const paymentsLog = (): string[] => sys.payments().output().split('\n');

async function payBobsInvoice(amount: number): Promise<{ invoiceId: string; turnId: string }> {
  const invoiceId = await newInvoiceForBob(sys, amount);
  const post = await postMessage(sys.apiUrl, `school-2026-${amount}`, "Process payment for student Bob's invoice");
  expect(post.status).toBe(202);
  return { invoiceId, turnId: post.body.turnId as string };
}

async function replaceWorker(): Promise<void> {
  await sys.worker.kill();
  sys.worker = await sys.startWorker();
}

/**
 * The turn completes as pattern 3 with one charge; the server answered it on 2026-07-28 only; the
 * call arrived twice (once from each worker) with one idempotency key and was applied once. Returns
 * the server's log lines about that call.
 */
async function expectOneChargeOn2026(invoiceId: string, turnId: string): Promise<string[]> {
  const turn = await expectPaidOnce(sys, invoiceId, turnId);
  expect(turn.toolCalls.map((c) => [c.step, c.name, c.state])).toEqual([
    [1, 'admin__find_user', 'completed'],
    [2, 'admin__get_invoice', 'completed'],
    [3, 'payments__process_payment', 'completed'],
    [4, 'admin__record_payment', 'completed'],
    [4, 'comms__send_bulk', 'completed'],
  ]);

  // A 2025 request (an `initialize` among them) would have been refused and logged as such.
  const log = paymentsLog();
  expect(log.filter((l) => l.includes('refused:'))).toEqual([]);
  const lines = log.filter((l) => l.includes(' key=') && l.includes(` trace=${turnId} `));
  const arrivals = lines.filter((l) => l.endsWith(': fault hook delaying 2500 ms before the effect'));
  expect(arrivals).toHaveLength(2);
  // Each request named its own revision in its `_meta` envelope.
  expect(lines.every((l) => l.includes(' protocol=2026-07-28:'))).toBe(true);

  const keys = arrivals.map((l) => / key=(\S+) /.exec(l)?.[1]);
  expect(new Set(keys).size).toBe(1);
  const key = keys[0] as string;
  expect(key).toMatch(new RegExp(`^${turnId}/step-3/call_`));
  expect(lines.filter((l) => l.endsWith(': applied'))).toHaveLength(1);
  const store = sys.store();
  const tx = store.transactions.find((t) => t.invoiceId === invoiceId);
  const records = Object.entries(store.idempotency).filter(([, r]) => r.tool === 'process_payment' && r.key.startsWith(`${turnId}/`));
  expect(records.map(([slot]) => slot)).toEqual([`payments/process_payment/demo/${key}`]);
  expect((records[0]?.[1].result.structuredContent as { transaction?: { id: string } } | undefined)?.transaction?.id).toBe(tx?.id);
  return lines;
}

test('a worker SIGKILLed while process_payment waits on the 2026-07-28 server, before its effect: one charge', async () => {
  const { invoiceId, turnId } = await payBobsInvoice(250);
  expect(invoiceId).toBe('INV-1001');
  // The request is at the server, before its effect, and its progress reaches the turn: the worker dies now.
  await waitForToolProgress(sys.apiUrl, turnId, 'payments__process_payment');
  await replaceWorker();
  await expectOneChargeOn2026(invoiceId, turnId);

  // The catalog holds the 2026-07-28 server as connected, beside the 2025-11-25 ones.
  const tools = (await getJson(`${sys.apiUrl}/v1/tools`)).body as { servers: Array<{ server: string; state: string }> };
  expect(tools.servers.map((s) => [s.server, s.state]).sort()).toEqual(['admin', 'comms', 'payments', 'student', 'teacher'].map((s) => [s, 'connected']));
}, 240_000);

test('a worker SIGKILLed after the 2026-07-28 server applied process_payment, before its answer arrived: the retry replays it', async () => {
  // The same server, now holding an applied charge's answer until its caller is gone (at most 10 minutes).
  await sys.stopPayments();
  await sys.startPayments({ SCHOOL_TOOL_HOLD_MS: 'process_payment=600000' });
  const { invoiceId, turnId } = await payBobsInvoice(251);
  // The server has applied the charge and holds the answer: the worker dies without it.
  await waitFor(async () => (paymentsLog().some((l) => l.includes(` trace=${turnId} `) && l.endsWith(': fault hook holding the result 600000 ms')) ? true : undefined), 60_000);
  await replaceWorker();
  const lines = await expectOneChargeOn2026(invoiceId, turnId);
  // The next worker's call found the key recorded and got the first result back.
  expect(lines.filter((l) => l.endsWith(': idempotency key seen before, returning the first result unchanged'))).toHaveLength(1);
  // The first answer was never delivered: the server stopped holding it when its caller died.
  const lost = `school-payments[${sys.payments().pid}]: process_payment: cancelled while its result was held; the effect stays applied`;
  await waitFor(async () => (paymentsLog().includes(lost) ? true : undefined), 30_000);
}, 240_000);
