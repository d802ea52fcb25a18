/**
 * Seed pattern 3 (find_user → get_invoice → process_payment → record_payment + receipt) with the
 * payments server on MCP 2026-07-28: the school payments server served by the v2 server package
 * (`--protocol 2026-07-28`, modern.ts), which refuses every 2025 request; the host's entry for it is
 * pinned to that revision (tests/helpers/school.ts says why not `auto`). The worker is SIGKILLed while process_payment is in flight on that
 * server (held there by its fault hook), a new worker takes the turn over: the call goes again with
 * the same idempotency key, the server applies it once, and the invoice is paid by one transaction
 * with one receipt. The admin and comms servers of the same turn stay on 2025-11-25 (stdio).
 */
import { getJson, postMessage, waitForToolProgress } from '../helpers/http';
import { expectPaidOnce, startSchoolSystem, type SchoolSystem } from '../helpers/school';

let sys: SchoolSystem;

beforeAll(async () => {
  sys = await startSchoolSystem({ paymentsProtocol: '2026-07-28', toolDelays: 'process_payment=2500' });
}, 120_000);

afterAll(async () => {
  await sys?.stop();
});

/** The payments server's log lines (stderr: `school-payments[pid]: …`). */
const paymentsLog = (): string[] => sys.payments().output().split('\n');

test("a worker SIGKILLed mid process_payment on a 2026-07-28 server: the next worker's call has the same key, one charge", async () => {
  const invoiceId = sys.store().invoices.find((i) => i.userId === 'u-bob' && i.status === 'unpaid')?.id as string;
  expect(invoiceId).toBe('INV-1001');

  const post = await postMessage(sys.apiUrl, 'school-2026', "Process payment for student Bob's invoice");
  expect(post.status).toBe(202);
  const turnId = post.body.turnId as string;
  // The request is at the 2026-07-28 server, and its progress reaches the turn: the worker dies now.
  await waitForToolProgress(sys.apiUrl, turnId, 'payments__process_payment');
  await sys.worker.kill();
  sys.worker = await sys.startWorker();

  const turn = await expectPaidOnce(sys, invoiceId, turnId);
  expect(turn.toolCalls.map((c) => [c.step, c.name, c.state])).toEqual([
    [1, 'admin__find_user', 'completed'],
    [2, 'admin__get_invoice', 'completed'],
    [3, 'payments__process_payment', 'completed'],
    [4, 'admin__record_payment', 'completed'],
    [4, 'comms__send_bulk', 'completed'],
  ]);

  // Every request the payments server answered spoke 2026-07-28: a 2025 request (an `initialize`
  // among them) would have been refused and logged as such; each call names its own revision.
  const log = paymentsLog();
  expect(log.filter((l) => l.includes('refused:'))).toEqual([]);
  const arrivals = log.filter((l) => /process_payment .*: fault hook delaying/.test(l));
  expect(arrivals).toHaveLength(2);
  expect(arrivals.every((l) => l.includes(' protocol=2026-07-28:'))).toBe(true);

  // Sent twice (once by each worker) with one idempotency key, applied once.
  const keys = arrivals.map((l) => / key=(\S+) /.exec(l)?.[1]);
  expect(new Set(keys).size).toBe(1);
  const key = keys[0] as string;
  expect(key).toMatch(new RegExp(`^${turnId}/step-3/call_`));
  expect(log.filter((l) => l.includes(` key=${key} `) && l.endsWith(': applied'))).toHaveLength(1);
  const store = sys.store();
  const tx = store.transactions.find((t) => t.invoiceId === invoiceId);
  const records = Object.entries(store.idempotency).filter(([, r]) => r.tool === 'process_payment' && r.key.startsWith(`${turnId}/`));
  expect(records.map(([slot]) => slot)).toEqual([`payments/process_payment/demo/${key}`]);
  expect((records[0]?.[1].result.structuredContent as { transaction?: { id: string } } | undefined)?.transaction?.id).toBe(tx?.id);

  // The catalog holds the 2026-07-28 server as connected, beside the 2025-11-25 ones.
  const tools = (await getJson(`${sys.apiUrl}/v1/tools`)).body as { servers: Array<{ server: string; state: string }> };
  expect(tools.servers.map((s) => [s.server, s.state]).sort()).toEqual(['admin', 'comms', 'payments', 'student', 'teacher'].map((s) => [s, 'connected']));
}, 240_000);
