import { getJson, postJson, postMessage, readSse } from '../helpers/http';
import { startSchoolSystem, type SchoolSystem } from '../helpers/school';

/**
 * Cancelling a turn on real parts: while process_payment runs (held 10 s by the server's fault hook),
 * POST /cancel. The MCP request is cancelled (the server sees notifications/cancelled and applies
 * nothing), no further tool call starts, the turn ends `cancelled`, and nothing was charged.
 */
jest.setTimeout(120_000);

let sys: SchoolSystem;
beforeAll(async () => {
  sys = await startSchoolSystem({ toolDelays: 'process_payment=10000' });
}, 120_000);
afterAll(async () => {
  await sys?.stop();
});

test('cancel during a tool call: the call is cancelled at the server, no effect, status cancelled', async () => {
  const post = await postMessage(sys.apiUrl, 'cancel', "Process payment for student Bob's invoice");
  const url = `${sys.apiUrl}${post.body.eventsUrl as string}`;
  const before = await readSse(url, { stopAfter: (e) => e.event === 'tool_call_started' && e.data.name === 'payments__process_payment', timeoutMs: 60_000 });
  const cancel = await postJson(`${sys.apiUrl}/v1/turns/${post.body.turnId}/cancel`, {});
  expect(cancel.status).toBe(202);

  const rest = await readSse(url, { lastEventId: before.at(-1)?.id, timeoutMs: 60_000 });
  expect(rest.at(-1)?.event).toBe('cancelled');
  expect(rest.some((e) => e.event === 'tool_call_started')).toBe(false);
  const turn = (await getJson(`${sys.apiUrl}/v1/turns/${post.body.turnId}`)).body;
  expect(turn).toMatchObject({ status: 'cancelled' });
  expect(turn.toolCalls.map((c: { name: string }) => c.name)).toEqual(['admin__find_user', 'admin__get_invoice', 'payments__process_payment']);

  // The server was told and applied nothing.
  for (let i = 0; i < 40 && !/process_payment: cancelled/.test(sys.payments().output()); i++) await new Promise((r) => setTimeout(r, 250));
  expect(sys.payments().output()).toMatch(/process_payment: cancelled after \d+ progress notifications; no effect applied/);
  await new Promise((r) => setTimeout(r, 11_000)); // past the held call's deadline: still nothing
  const store = sys.store();
  expect(store.transactions.filter((t) => t.invoiceId === 'INV-1001')).toHaveLength(0);
  expect(store.invoices.find((i) => i.id === 'INV-1001')?.status).toBe('unpaid');

  // A finished turn cannot be cancelled again.
  expect((await postJson(`${sys.apiUrl}/v1/turns/${post.body.turnId}/cancel`, {})).status).toBe(409);
});

test('cancel during the LLM call: the request is aborted and no tool call starts', async () => {
  sys.model.setFaults([{ delayMs: 8_000, times: 1 }]);
  const before = sys.model.requests().length;
  const post = await postMessage(sys.apiUrl, 'cancel', "Process payment for student Bob's invoice");
  for (let i = 0; i < 200 && sys.model.requests().length === before; i++) await new Promise((r) => setTimeout(r, 25));
  expect((await postJson(`${sys.apiUrl}/v1/turns/${post.body.turnId}/cancel`, {})).status).toBe(202);
  const events = await readSse(`${sys.apiUrl}${post.body.eventsUrl as string}`, { timeoutMs: 60_000 });
  expect(events.at(-1)?.event).toBe('cancelled');
  expect(events.some((e) => e.event === 'tool_call_started')).toBe(false);
  sys.model.setFaults([]);
});
