/**
 * The seeds' pattern 3 on real processes: admin over stdio, payments over Streamable HTTP, one
 * shared store. find_user → get_invoice → process_payment → record_payment, then every way of
 * repeating or misusing it, and tenant scoping.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { readStore, SEED } from '../../examples/servers/school/store';
import {
  bodyOf,
  buildSchoolServers,
  callTool,
  connectHttp,
  connectStdio,
  readJsonResource,
  startHttpServer,
  tempDir,
  textOf,
  type Connected,
  type HttpServer,
} from './helpers';

jest.setTimeout(60_000);

const tmp = tempDir();
const dataFile = tmp.file();
let admin: Connected;
let paymentsServer: HttpServer;
let payments: Client;

beforeAll(async () => {
  const scripts = await buildSchoolServers();
  admin = await connectStdio(scripts.admin, dataFile);
  paymentsServer = await startHttpServer(scripts.payments, 'PAYMENTS_SERVER_URL', dataFile);
  payments = await connectHttp(paymentsServer.url);
}, 180_000);

afterAll(async () => {
  await payments?.close().catch(() => undefined);
  await paymentsServer?.stop();
  await admin?.close();
  tmp.remove();
});

interface UserRow {
  id: string;
  name: string;
  role: string;
  email: string | null;
}
interface InvoiceRow {
  id: string;
  userId: string;
  amount: number;
  currency: string;
  status: string;
  transactionId?: string;
}
interface TxRow {
  id: string;
  invoiceId: string;
  amount: number;
  status: string;
}

const OTHER = { tenant: 'other', role: 'admin', id: 'u-olivia' };

test('payments speaks Streamable HTTP on 127.0.0.1 and lists its tools', async () => {
  expect(paymentsServer.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
  const { tools } = await payments.listTools();
  expect(tools.map((t) => t.name).sort()).toEqual(['process_payment', 'refund_payment']);
});

test("Bob's invoice: find_user → get_invoice → process_payment → record_payment, exactly once", async () => {
  const found = bodyOf<{ users: UserRow[] }>(await callTool(admin.client, 'find_user', { query: 'bob' }));
  expect(found.users).toEqual([{ id: SEED.users.bob, name: 'Bob Brown', role: 'student', email: 'bob@school.example' }]);

  const invoices = bodyOf<{ invoices: InvoiceRow[] }>(await callTool(admin.client, 'get_invoice', { userId: SEED.users.bob }));
  expect(invoices.invoices).toHaveLength(1);
  const invoice = invoices.invoices[0]!;
  expect(invoice).toMatchObject({ id: 'INV-1001', amount: 250, currency: 'EUR', status: 'unpaid', userId: SEED.users.bob });

  const payKey = 'turn-bob/step-3/call-pay';
  const paid = await callTool(payments, 'process_payment', { invoiceId: invoice.id, amount: invoice.amount, method: 'card' }, { key: payKey });
  const { transaction } = bodyOf<{ transaction: TxRow }>(paid);
  expect(transaction.id).toMatch(/^TX-[0-9A-F]+$/);
  expect(transaction).toMatchObject({ invoiceId: 'INV-1001', amount: 250, status: 'succeeded' });
  // Charged but not yet recorded: the invoice is still unpaid until admin records it.
  expect(readStore(dataFile).invoices.find((i) => i.id === 'INV-1001')?.status).toBe('unpaid');

  // A retry of the very same call (same key: a crashed worker, a lost response) replays the first result.
  const before = readStore(dataFile);
  const replay = await callTool(payments, 'process_payment', { invoiceId: invoice.id, amount: invoice.amount, method: 'card' }, { key: payKey });
  expect(replay).toEqual(paid);
  expect(readStore(dataFile)).toEqual(before);

  // A new key while the invoice has a captured payment is refused: no double charge.
  const second = await callTool(payments, 'process_payment', { invoiceId: invoice.id, amount: 250 }, { key: 'turn-other/step-1/call-pay' });
  expect(second.isError).toBe(true);
  expect(textOf(second)).toContain(transaction.id);

  const recordKey = 'turn-bob/step-4/call-record';
  const recorded = await callTool(admin.client, 'record_payment', { invoiceId: invoice.id, transactionId: transaction.id, amount: 250 }, { key: recordKey });
  const recordedBody = bodyOf<{ invoice: InvoiceRow }>(recorded);
  expect(recordedBody.invoice).toMatchObject({ id: 'INV-1001', status: 'paid', transactionId: transaction.id });

  const afterRecord = readStore(dataFile);
  expect(afterRecord.transactions.filter((t) => t.invoiceId === 'INV-1001')).toHaveLength(1);
  expect(afterRecord.invoices.find((i) => i.id === 'INV-1001')).toMatchObject({ status: 'paid', transactionId: transaction.id });

  // Same key again: the first result, nothing written.
  expect(await callTool(admin.client, 'record_payment', { invoiceId: invoice.id, transactionId: transaction.id, amount: 250 }, { key: recordKey })).toEqual(recorded);
  // Same transaction under a new key: the same answer, no change to the invoice.
  const again = await callTool(admin.client, 'record_payment', { invoiceId: invoice.id, transactionId: transaction.id, amount: 250 }, { key: 'turn-x/step-1/call-record' });
  expect(textOf(again)).toBe(textOf(recorded));
  const afterAgain = readStore(dataFile);
  expect(afterAgain.invoices).toEqual(afterRecord.invoices);
  expect(afterAgain.transactions).toEqual(afterRecord.transactions);

  // Paid now: a new charge under a new key is refused and charges nothing.
  const refused = await callTool(payments, 'process_payment', { invoiceId: 'INV-1001', amount: 250 }, { key: 'turn-y/step-1/call-pay' });
  expect(refused.isError).toBe(true);
  expect(textOf(refused)).toMatch(/already paid/);
  expect(readStore(dataFile).transactions.filter((t) => t.invoiceId === 'INV-1001')).toHaveLength(1);

  const status = await readJsonResource<{ unpaidInvoices: number; students: number; teachers: number; classes: number }>(admin.client, 'admin://system_status');
  expect(status).toMatchObject({ unpaidInvoices: 0, students: 3, teachers: 1, classes: 2 });
});

test('record_payment refuses an invoice already paid by a different transaction', async () => {
  const result = await callTool(admin.client, 'record_payment', { invoiceId: SEED.invoices.carolPaid, transactionId: 'TX-SOMETHINGELSE', amount: 250 });
  expect(result.isError).toBe(true);
  expect(textOf(result)).toContain(`already paid by transaction ${SEED.transactions.carol}`);
  expect(readStore(dataFile).invoices.find((i) => i.id === SEED.invoices.carolPaid)?.transactionId).toBe(SEED.transactions.carol);
});

test('domain errors are isError results with a clear message, and change nothing', async () => {
  const before = readStore(dataFile);
  const cases: Array<[Client, string, Record<string, unknown>, RegExp]> = [
    [payments, 'process_payment', { invoiceId: 'INV-4040', amount: 1 }, /Unknown invoice "INV-4040"/],
    [admin.client, 'get_invoice', { userId: 'u-nobody' }, /Unknown user "u-nobody"/],
    [admin.client, 'get_invoice', {}, /invoiceId or a userId/],
    [admin.client, 'issue_invoice', { userId: 'u-nobody', amount: 10, description: 'x' }, /Unknown user/],
    [admin.client, 'create_class', { name: 'Art', teacherId: SEED.users.bob }, /not a teacher/],
    [admin.client, 'enrol_student', { classId: 'c-nope', studentId: SEED.users.bob }, /No such class/],
    [admin.client, 'record_payment', { invoiceId: 'INV-1001', transactionId: 'TX-0', amount: 250 }, /already paid/],
  ];
  for (const [client, tool, args, message] of cases) {
    const result = await callTool(client, tool, args);
    expect({ tool, isError: result.isError, text: textOf(result) }).toEqual({ tool, isError: true, text: expect.stringMatching(message) });
  }
  const after = readStore(dataFile);
  // Only the refusals' idempotency records were added.
  expect({ ...after, idempotency: {} }).toEqual({ ...before, idempotency: {} });
});

test('amount mismatch is refused and charges nothing', async () => {
  const issued = bodyOf<{ invoice: InvoiceRow }>(
    await callTool(admin.client, 'issue_invoice', { userId: SEED.users.dan, amount: 120.5, description: 'Books' }),
  );
  expect(issued.invoice).toMatchObject({ userId: SEED.users.dan, amount: 120.5, status: 'unpaid' });
  const result = await callTool(payments, 'process_payment', { invoiceId: issued.invoice.id, amount: 120 });
  expect(result.isError).toBe(true);
  expect(textOf(result)).toMatch(/Amount mismatch: invoice INV-\d+ is for 120\.50 EUR/);
  expect(readStore(dataFile).transactions.filter((t) => t.invoiceId === issued.invoice.id)).toEqual([]);
  // 120.500 is the same amount in cents.
  bodyOf(await callTool(payments, 'process_payment', { invoiceId: issued.invoice.id, amount: 120.5 }));
});

test('refund_payment reopens the invoice, and refunding twice changes nothing', async () => {
  const issued = bodyOf<{ invoice: InvoiceRow }>(await callTool(admin.client, 'issue_invoice', { userId: SEED.users.carol, amount: 40, description: 'Trip' }));
  const { transaction } = bodyOf<{ transaction: TxRow }>(await callTool(payments, 'process_payment', { invoiceId: issued.invoice.id, amount: 40 }));
  bodyOf(await callTool(admin.client, 'record_payment', { invoiceId: issued.invoice.id, transactionId: transaction.id, amount: 40 }));
  const refunded = bodyOf<{ transaction: TxRow }>(await callTool(payments, 'refund_payment', { transactionId: transaction.id, reason: 'trip cancelled' }));
  expect(refunded.transaction.status).toBe('refunded');
  const afterFirst = readStore(dataFile);
  expect(afterFirst.invoices.find((i) => i.id === issued.invoice.id)).toMatchObject({ status: 'unpaid' });
  expect(afterFirst.invoices.find((i) => i.id === issued.invoice.id)?.transactionId).toBeUndefined();
  const twice = await callTool(payments, 'refund_payment', { transactionId: transaction.id, reason: 'again' });
  expect(twice.isError).toBeFalsy();
  const afterSecond = readStore(dataFile);
  expect(afterSecond.transactions).toEqual(afterFirst.transactions);
  // A refunded transaction cannot pay the invoice.
  const record = await callTool(admin.client, 'record_payment', { invoiceId: issued.invoice.id, transactionId: transaction.id, amount: 40 });
  expect(record.isError).toBe(true);

  const summary = await readJsonResource<{ totals: Record<string, { collected: number; refunded: number }> }>(payments, 'payments://revenue_summary');
  expect(summary.totals.EUR?.refunded).toBe(40);
});

test('tenant "other" sees none of tenant "demo"', async () => {
  const found = bodyOf<{ users: UserRow[] }>(await callTool(admin.client, 'find_user', { query: 'bob' }, { user: OTHER }));
  expect(found.users.map((u) => u.id)).toEqual([SEED.otherUsers.bobStone]);

  const demoInvoice = await callTool(admin.client, 'get_invoice', { invoiceId: 'INV-1001' }, { user: OTHER });
  expect(demoInvoice.isError).toBe(true);
  expect(textOf(demoInvoice)).toMatch(/Unknown invoice/);
  expect((await callTool(admin.client, 'get_invoice', { userId: SEED.users.bob }, { user: OTHER })).isError).toBe(true);

  const own = bodyOf<{ invoices: InvoiceRow[] }>(await callTool(admin.client, 'get_invoice', { invoiceId: SEED.invoices.otherUnpaid }, { user: OTHER }));
  expect(own.invoices.map((i) => i.id)).toEqual([SEED.invoices.otherUnpaid]);
  // …and demo cannot see other's invoice.
  expect((await callTool(admin.client, 'get_invoice', { invoiceId: SEED.invoices.otherUnpaid })).isError).toBe(true);

  const users = await readJsonResource<UserRow[]>(admin.client, 'admin://users', OTHER);
  expect(users.map((u) => u.id).sort()).toEqual([SEED.otherUsers.bobStone, SEED.otherUsers.olivia].sort());
  const invoices = await readJsonResource<InvoiceRow[]>(admin.client, 'admin://invoices', OTHER);
  expect(invoices.map((i) => i.id)).toEqual([SEED.invoices.otherUnpaid]);
  const transactions = await readJsonResource<TxRow[]>(payments, 'payments://transactions', OTHER);
  expect(transactions).toEqual([]);

  // Charging demo's invoice from tenant other fails as unknown; a user added in other stays in other.
  const charge = await callTool(payments, 'process_payment', { invoiceId: 'INV-1002', amount: 250 }, { user: OTHER });
  expect(textOf(charge)).toMatch(/Unknown invoice/);
  const added = bodyOf<{ user: UserRow }>(await callTool(admin.client, 'add_user', { name: 'Oona Other', role: 'student' }, { user: OTHER }));
  expect(readStore(dataFile).users.find((u) => u.id === added.user.id)?.tenantId).toBe('other');
  expect(bodyOf<{ users: UserRow[] }>(await callTool(admin.client, 'find_user', { query: 'oona' })).users).toEqual([]);

  // A malformed tenant is refused, never widened to the default tenant.
  const bad = await callTool(admin.client, 'find_user', { query: 'bob' }, { user: { tenant: '../demo' } });
  expect(bad.isError).toBe(true);
  expect(textOf(bad)).toMatch(/invalid user context/);
});

test('the same idempotency key in another tenant is a different call', async () => {
  const key = 'turn-shared/step-1/call-add';
  const demo = bodyOf<{ user: UserRow }>(await callTool(admin.client, 'add_user', { name: 'Kim Key', role: 'student' }, { key }));
  const other = bodyOf<{ user: UserRow }>(await callTool(admin.client, 'add_user', { name: 'Kim Key', role: 'student' }, { key, user: OTHER }));
  expect(other.user.id).not.toBe(demo.user.id);
  const store = readStore(dataFile);
  expect(store.users.filter((u) => u.name === 'Kim Key').map((u) => u.tenantId).sort()).toEqual(['demo', 'other']);
  expect(Object.keys(store.idempotency)).toEqual(expect.arrayContaining([`admin/add_user/demo/${key}`, `admin/add_user/other/${key}`]));
});
