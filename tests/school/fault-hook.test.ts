/**
 * The SCHOOL_TOOL_DELAY_MS fault hook: a delayed tool reports progress while it waits, honours
 * cancellation (no effect, a log line), and is off by default. SCHOOL_TOOL_HOLD_MS: an applied
 * effect's answer held until the caller is gone.
 */
import { parseDelays } from '../../examples/servers/school/core';
import { readStore } from '../../examples/servers/school/store';
import { bodyOf, buildSchoolServers, callTool, connectStdio, tempDir, waitFor, type Connected, type SchoolServerName } from './helpers';

jest.setTimeout(60_000);

const tmp = tempDir();
let scripts: Record<SchoolServerName, string>;

beforeAll(async () => {
  scripts = await buildSchoolServers();
}, 180_000);

afterAll(() => tmp.remove());

test('parseDelays reads tool=ms pairs and rejects anything else', () => {
  expect([...parseDelays('process_payment=3000, send_bulk=500')]).toEqual([
    ['process_payment', 3000],
    ['send_bulk', 500],
  ]);
  expect(parseDelays(undefined).size).toBe(0);
  expect(parseDelays('').size).toBe(0);
  expect(() => parseDelays('process_payment')).toThrow(/tool=milliseconds/);
  expect(() => parseDelays('process_payment=soon')).toThrow(/tool=milliseconds/);
});

describe('payments with process_payment delayed', () => {
  const file = tmp.file('delay.json');
  let payments: Connected;

  beforeAll(async () => {
    payments = await connectStdio(scripts.payments, file, { SCHOOL_TOOL_DELAY_MS: 'process_payment=2000' });
  });

  afterAll(async () => {
    await payments?.close();
  });

  test('sends progress every ~200 ms while waiting, then applies the effect', async () => {
    const progress: Array<{ progress: number; total?: number }> = [];
    const started = Date.now();
    const result = await callTool(payments.client, 'process_payment', { invoiceId: 'INV-1001', amount: 250 }, { onprogress: (p) => progress.push(p) });
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_950);
    bodyOf(result);
    // Every ~200 ms: about ten; fewer on a very busy machine, never none.
    expect(progress.length).toBeGreaterThanOrEqual(3);
    expect(progress.at(-1)).toMatchObject({ total: 2000 });
    for (let i = 1; i < progress.length; i++) expect(progress[i]!.progress).toBeGreaterThan(progress[i - 1]!.progress);
  });

  test('a cancelled call stops waiting, applies nothing, and the same key later applies once', async () => {
    const { invoice } = await (async () => {
      // A fresh invoice to charge (issued straight in the store through the admin server).
      const admin = await connectStdio(scripts.admin, file);
      try {
        return bodyOf<{ invoice: { id: string } }>(await callTool(admin.client, 'issue_invoice', { userId: 'u-carol', amount: 75, description: 'Exam fee' }));
      } finally {
        await admin.close();
      }
    })();
    const key = 'turn-cancel/step-1/call-pay';
    const controller = new AbortController();
    let ticks = 0;
    const pending = callTool(payments.client, 'process_payment', { invoiceId: invoice.id, amount: 75 }, {
      key,
      signal: controller.signal,
      onprogress: () => {
        ticks += 1;
        if (ticks === 2) controller.abort('user pressed stop');
      },
    });
    await expect(pending).rejects.toThrow();
    await waitFor('the server to log the cancellation', () => payments.stderr.some((l) => /process_payment: cancelled after \d+ progress notifications/.test(l)));
    // The handler has returned without touching the store: nothing charged, no result recorded.
    const store = readStore(file);
    expect(store.transactions.filter((t) => t.invoiceId === invoice.id)).toEqual([]);
    expect(Object.keys(store.idempotency).some((k) => k.endsWith(key))).toBe(false);

    const retried = bodyOf<{ transaction: { id: string } }>(await callTool(payments.client, 'process_payment', { invoiceId: invoice.id, amount: 75 }, { key }));
    expect(readStore(file).transactions.filter((t) => t.invoiceId === invoice.id).map((t) => t.id)).toEqual([retried.transaction.id]);
  });

  test('tools that are not listed are not delayed', async () => {
    let progress = 0;
    bodyOf(await callTool(payments.client, 'refund_payment', { transactionId: 'TX-SEED0001', reason: 'test' }, { onprogress: () => (progress += 1) }));
    expect(progress).toBe(0);
    expect(payments.stderr.filter((l) => l.includes('fault hook delaying')).every((l) => l.includes('process_payment'))).toBe(true);
  });
});

test('send_bulk cancelled during its delay sends nothing', async () => {
  const file = tmp.file('bulk-delay.json');
  const comms = await connectStdio(scripts.comms, file, { SCHOOL_TOOL_DELAY_MS: 'send_bulk=2000' });
  try {
    const controller = new AbortController();
    const pending = callTool(
      comms.client,
      'send_bulk',
      { recipients: ['bob@school.example'], template: 'announcement', variables: { message: 'Hi' } },
      { signal: controller.signal, onprogress: () => controller.abort() },
    );
    await expect(pending).rejects.toThrow();
    await waitFor('the cancellation log line', () => comms.stderr.some((l) => /send_bulk: cancelled/.test(l)));
    expect(readStore(file).outbox).toEqual([]);
  } finally {
    await comms.close();
  }
});

test('SCHOOL_TOOL_HOLD_MS: the effect is applied before the held answer; a cancelled hold keeps it; a replay is not held', async () => {
  const file = tmp.file('hold.json');
  const payments = await connectStdio(scripts.payments, file, { SCHOOL_TOOL_HOLD_MS: 'process_payment=600000' });
  try {
    const key = 'turn-hold/step-3/call-pay';
    const controller = new AbortController();
    // Held until cancelled: the caller gives up once the server reports progress on the held answer.
    const pending = callTool(payments.client, 'process_payment', { invoiceId: 'INV-1001', amount: 250 }, { key, signal: controller.signal, onprogress: () => controller.abort() });
    await expect(pending).rejects.toThrow();
    await waitFor('the held answer to be dropped', () => payments.stderr.some((l) => l.endsWith('process_payment: cancelled while its result was held; the effect stays applied')));
    const charged = readStore(file).transactions.filter((t) => t.invoiceId === 'INV-1001');
    expect(charged).toHaveLength(1);
    // The same key again: the first result at once, no second hold (no progress), no second charge.
    let progress = 0;
    const replayed = bodyOf<{ transaction: { id: string } }>(await callTool(payments.client, 'process_payment', { invoiceId: 'INV-1001', amount: 250 }, { key, onprogress: () => (progress += 1) }));
    expect(replayed.transaction.id).toBe(charged[0]?.id);
    expect(progress).toBe(0);
    expect(payments.stderr.filter((l) => l.includes('fault hook holding the result'))).toHaveLength(1);
  } finally {
    await payments.close();
  }
});
