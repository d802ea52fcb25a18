/**
 * The store and the exactly-once guarantee across processes: restarts, SIGKILL (before and after an
 * effect), and two server processes writing one file at the same time.
 */
import { readStore, SEED } from '../../examples/servers/school/store';
import { bodyOf, buildSchoolServers, callTool, connectStdio, tempDir, textOf, waitFor, waitForPidExit, type SchoolServerName } from './helpers';

jest.setTimeout(90_000);

const tmp = tempDir();
let scripts: Record<SchoolServerName, string>;

beforeAll(async () => {
  scripts = await buildSchoolServers();
}, 180_000);

afterAll(() => tmp.remove());

interface UserRow {
  id: string;
  name: string;
}

test('a new data file is seeded once; an existing one is kept across restarts', async () => {
  const file = tmp.file('restart.json');
  const first = await connectStdio(scripts.admin, file);
  const seeded = readStore(file);
  expect(seeded.users.filter((u) => u.tenantId === 'demo').map((u) => u.name).sort()).toEqual(['Ada Admin', 'Bob Brown', 'Carol Chen', 'Dan Diaz', 'Tom Teacher']);
  expect(seeded.invoices.filter((i) => i.userId === SEED.users.bob)).toEqual([
    expect.objectContaining({ id: 'INV-1001', amount: 250, currency: 'EUR', status: 'unpaid', description: 'Term 1 tuition' }),
  ]);

  const key = 'turn-restart/step-1/call-1';
  const added = await callTool(first.client, 'add_user', { name: 'Rita Restart', role: 'teacher', email: 'rita@school.example' }, { key });
  const rita = bodyOf<{ user: UserRow }>(added).user;
  await first.close();

  const second = await connectStdio(scripts.admin, file);
  try {
    const found = bodyOf<{ users: UserRow[] }>(await callTool(second.client, 'find_user', { query: 'rita' }));
    expect(found.users.map((u) => u.id)).toEqual([rita.id]);
    // The host retries the call after the restart: the first result, no second user.
    expect(await callTool(second.client, 'add_user', { name: 'Rita Restart', role: 'teacher', email: 'rita@school.example' }, { key })).toEqual(added);
    expect(readStore(file).users.filter((u) => u.name === 'Rita Restart')).toHaveLength(1);
    // A duplicate email under a new key is a domain refusal.
    const duplicate = await callTool(second.client, 'add_user', { name: 'Rita Again', role: 'teacher', email: 'RITA@school.example' });
    expect(duplicate.isError).toBe(true);
  } finally {
    await second.close();
  }
});

test('SIGKILL after the effect: the respawned server replays the recorded result', async () => {
  const file = tmp.file('kill-after.json');
  const first = await connectStdio(scripts.admin, file);
  const key = 'turn-kill/step-2/call-7';
  const result = await callTool(first.client, 'add_user', { name: 'Kai Killed', role: 'student' }, { key });
  process.kill(first.pid, 'SIGKILL');
  await waitForPidExit(first.pid, 5_000);
  await first.client.close().catch(() => undefined);

  const second = await connectStdio(scripts.admin, file);
  try {
    expect(await callTool(second.client, 'add_user', { name: 'Kai Killed', role: 'student' }, { key })).toEqual(result);
    expect(readStore(file).users.filter((u) => u.name === 'Kai Killed')).toHaveLength(1);
  } finally {
    await second.close();
  }
});

test('SIGKILL during a delayed process_payment: nothing charged; the retry charges exactly once', async () => {
  const file = tmp.file('kill-during.json');
  const slow = await connectStdio(scripts.payments, file, { SCHOOL_TOOL_DELAY_MS: 'process_payment=5000' });
  const key = 'turn-chaos/step-3/call-pay';
  let progressCount = 0;
  const pending = callTool(slow.client, 'process_payment', { invoiceId: 'INV-1001', amount: 250 }, { key, onprogress: () => (progressCount += 1) });
  const outcome = pending.then(
    () => 'resolved',
    (error: Error) => error.message,
  );
  await waitFor('a progress notification', () => progressCount > 0, 10_000);
  process.kill(slow.pid, 'SIGKILL');
  expect(await outcome).not.toBe('resolved');
  await waitForPidExit(slow.pid, 5_000);
  await slow.client.close().catch(() => undefined);
  expect(readStore(file).transactions.filter((t) => t.invoiceId === 'INV-1001')).toEqual([]);

  const respawned = await connectStdio(scripts.payments, file);
  try {
    const first = await callTool(respawned.client, 'process_payment', { invoiceId: 'INV-1001', amount: 250 }, { key });
    expect(first.isError).toBeFalsy();
    expect(await callTool(respawned.client, 'process_payment', { invoiceId: 'INV-1001', amount: 250 }, { key })).toEqual(first);
    expect(readStore(file).transactions.filter((t) => t.invoiceId === 'INV-1001')).toHaveLength(1);
  } finally {
    await respawned.close();
  }
});

test('two admin processes, 20 parallel add_user calls: no update is lost', async () => {
  const file = tmp.file('concurrent.json');
  const a = await connectStdio(scripts.admin, file);
  const b = await connectStdio(scripts.admin, file);
  try {
    const before = readStore(file).users.length;
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        callTool(i % 2 === 0 ? a.client : b.client, 'add_user', { name: `Parallel Person ${i}`, role: 'student' }, { key: `turn-par/step-1/call-${i}` }),
      ),
    );
    const ids = results.map((r) => bodyOf<{ user: UserRow }>(r).user.id);
    expect(new Set(ids).size).toBe(20);
    const store = readStore(file);
    expect(store.users).toHaveLength(before + 20);
    expect(store.users.filter((u) => u.name.startsWith('Parallel Person')).map((u) => u.id).sort()).toEqual([...ids].sort());
    expect(Object.keys(store.idempotency).filter((k) => k.startsWith('admin/add_user/demo/turn-par/'))).toHaveLength(20);
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
});

test('the same key sent to two processes at once is applied once', async () => {
  const file = tmp.file('same-key.json');
  const a = await connectStdio(scripts.admin, file);
  const b = await connectStdio(scripts.admin, file);
  try {
    const key = 'turn-race/step-1/call-1';
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) => callTool(i % 2 === 0 ? a.client : b.client, 'add_user', { name: 'Rae Race', role: 'student' }, { key })),
    );
    const texts = new Set(results.map(textOf));
    expect(texts.size).toBe(1);
    expect(readStore(file).users.filter((u) => u.name === 'Rae Race')).toHaveLength(1);
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
});

test('admin and payments processes share one store without losing writes', async () => {
  const file = tmp.file('mixed.json');
  const admin = await connectStdio(scripts.admin, file);
  const payments = await connectStdio(scripts.payments, file);
  try {
    // Ten invoices issued by admin while payments charges each as soon as it exists.
    const invoiceIds: string[] = [];
    await Promise.all(
      Array.from({ length: 10 }, async (_, i) => {
        const { invoice } = bodyOf<{ invoice: { id: string } }>(
          await callTool(admin.client, 'issue_invoice', { userId: SEED.users.dan, amount: 10 + i, description: `Item ${i}` }),
        );
        invoiceIds.push(invoice.id);
        bodyOf(await callTool(payments.client, 'process_payment', { invoiceId: invoice.id, amount: 10 + i }));
      }),
    );
    const store = readStore(file);
    expect(new Set(invoiceIds).size).toBe(10);
    for (const id of invoiceIds) {
      expect(store.invoices.filter((i) => i.id === id)).toHaveLength(1);
      expect(store.transactions.filter((t) => t.invoiceId === id)).toHaveLength(1);
    }
  } finally {
    await Promise.all([admin.close(), payments.close()]);
  }
});
