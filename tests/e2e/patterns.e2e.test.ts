import { bearer, getJson, postJson, postMessage, readSse, type SseEvent } from '../helpers/http';
import { startSchoolSystem, type SchoolSystem } from '../helpers/school';
import { connectWs } from '../helpers/ws';
import { PROVIDER_ROWS, sentTo } from '../helpers/providers';

/**
 * Seed 000 §9.3, the five interaction patterns, through the real host: HTTP API → Temporal → worker →
 * demo model → the school MCP servers (payments over Streamable HTTP, the rest over stdio). Each test
 * checks the shared store afterwards, not only the reply. Once per model provider: the worker's
 * adapter (OpenAI-compatible, Anthropic, Gemini) against the demo model's stand-in for its wire format.
 */
describe.each(PROVIDER_ROWS)('the five patterns on %s', (_name, provider) => {
  let sys: SchoolSystem;
  beforeAll(async () => {
    sys = await startSchoolSystem({ provider: provider.provider });
  }, 120_000);
  afterAll(async () => {
    await sys?.stop();
  });

  async function turn(text: string, as?: string) {
    const headers = as ? bearer(as) : {};
    const post = await postMessage(sys.apiUrl, 'school', text, headers);
    expect(post.status).toBe(202);
    const events = await readSse(`${sys.apiUrl}${post.body.eventsUrl as string}`, { timeoutMs: 90_000, headers });
    const state = await getJson(`${sys.apiUrl}/v1/turns/${post.body.turnId}`, headers);
    return { events, state: state.body as { status: string; text: string; toolCalls: Array<{ name: string; state: string; step: number }> }, turnId: post.body.turnId };
  }

  const started = (events: SseEvent[]) => events.filter((e) => e.event === 'tool_call_started').map((e) => e.data.name);

  test(`live text after a rate limit (429, retry-after) and an overload (HTTP ${provider.overloaded}), each retried with a notice`, async () => {
    sys.model.setFaults([{ status: 429, retryAfter: 1, times: 1 }, { status: provider.overloaded, times: 1 }, { chunkDelayMs: 5, times: 1 }]);
    const { state, events } = await turn('How many students do we have?');
    expect(state.status).toBe('completed');
    const notices = events.filter((e) => e.event === 'notice' && e.data.code === 'llm_retry');
    expect(notices.map((n) => n.data.attempt)).toEqual([1, 2]);
    expect(notices[0]?.data.message).toMatch(/HTTP 429/);
    expect(notices[1]?.data.message).toMatch(new RegExp(`HTTP ${provider.overloaded}`));
    // Live: text arrived before the durable final text event (deltas may be batched on their way), and adds up to it.
    const deltas = events.filter((e) => e.event === 'text_delta');
    expect(events.findIndex((e) => e.event === 'text_delta')).toBeGreaterThanOrEqual(0);
    expect(events.findIndex((e) => e.event === 'text_delta')).toBeLessThan(events.findIndex((e) => e.event === 'text'));
    expect(deltas.map((d) => d.data.text as string).join('')).toBe(state.text);
  });

  test('a turn cancelled while its answer streams ends cancelled', async () => {
    // Slow words: the answer is still streaming when the first one arrives and the turn is cancelled.
    sys.model.setFaults([{ chunkDelayMs: 400, times: 1 }]);
    const post = await postMessage(sys.apiUrl, 'cancel-stream', 'Give me a full system status report');
    const url = `${sys.apiUrl}${post.body.eventsUrl as string}`;
    await readSse(url, { timeoutMs: 60_000, stopAfter: (e) => e.event === 'text_delta' });
    expect((await postJson(`${sys.apiUrl}/v1/turns/${post.body.turnId as string}/cancel`, {})).status).toBe(202);
    const events = await readSse(url, { timeoutMs: 60_000 });
    expect(events.at(-1)?.event).toBe('cancelled');
    sys.model.setFaults([]);
  });

  test('pattern 1, simple query: answered from admin resources without a tool call', async () => {
    const { state, events } = await turn('How many students do we have?');
    expect(state.status).toBe('completed');
    expect(state.toolCalls).toEqual([]);
    expect(started(events)).toEqual([]);
    const students = sys.store().users.filter((u) => u.tenantId === 'demo' && u.role === 'student').length;
    expect(state.text).toContain(`We have ${students} students`);
  });

  test('pattern 2, single tool: "Add a teacher named Alice Johnson" adds exactly one teacher', async () => {
    const { state } = await turn('Add a teacher named Alice Johnson');
    expect(state.status).toBe('completed');
    expect(state.toolCalls.map((c) => [c.name, c.state])).toEqual([['admin__add_user', 'completed']]);
    const alice = sys.store().users.filter((u) => u.name === 'Alice Johnson');
    expect(alice).toHaveLength(1);
    expect(alice[0]).toMatchObject({ role: 'teacher', tenantId: 'demo' });
    expect(state.text).toMatch(/Alice Johnson/);
  });

  test('pattern 3, multi-server sequence: Bob\'s invoice is paid once, with one transaction and one receipt', async () => {
    const before = sys.store();
    const bobId = before.users.find((u) => u.name === 'Bob Brown')?.id;
    const unpaid = before.invoices.filter((i) => i.userId === bobId && i.status === 'unpaid');
    expect(unpaid).toHaveLength(1);

    const { state } = await turn("Process payment for student Bob's invoice");
    expect(state.status).toBe('completed');
    // Sequential across three servers, then record + receipt in parallel in one step.
    expect(state.toolCalls.map((c) => [c.step, c.name])).toEqual([
      [1, 'admin__find_user'],
      [2, 'admin__get_invoice'],
      [3, 'payments__process_payment'],
      [4, 'admin__record_payment'],
      [4, 'comms__send_bulk'],
    ]);
    expect(state.toolCalls.every((c) => c.state === 'completed')).toBe(true);

    const after = sys.store();
    const invoice = after.invoices.find((i) => i.id === unpaid[0]?.id);
    expect(invoice?.status).toBe('paid');
    const txs = after.transactions.filter((t) => t.invoiceId === invoice?.id);
    expect(txs).toHaveLength(1);
    expect(invoice?.transactionId).toBe(txs[0]?.id);
    expect(after.outbox.filter((m) => m.to === 'bob@school.example' && m.subject.includes(invoice?.id ?? '?'))).toHaveLength(1);

    // Asking again charges nothing: the invoice is already paid, and the answer says so (issue 10: it
    // used to be "I stopped because a step failed" after an argument error).
    const again = await turn("Process payment for student Bob's invoice");
    expect(again.state.status).toBe('completed');
    expect(again.state.text).toBe('Bob Brown has no unpaid invoice: nothing to pay, and nothing was charged.');
    expect(again.state.toolCalls.map((c) => c.name)).toEqual(['admin__find_user', 'admin__get_invoice']);
    expect(sys.store().transactions.filter((t) => t.invoiceId === invoice?.id)).toHaveLength(1);
  });

  test('a refund waits for approval (the policy says so), then runs once; asked again there is nothing to refund', async () => {
    const store = sys.store();
    const carolId = store.users.find((u) => u.name === 'Carol Chen')?.id;
    const txId = store.invoices.find((i) => i.userId === carolId && i.status === 'paid')?.transactionId as string;
    expect(txId).toEqual(expect.any(String));
    // Its own session: a turn waiting for approval holds back the turns queued behind it in its session.
    const post = await postMessage(sys.apiUrl, 'refunds', "Refund Carol's payment");
    const waiting = await readSse(`${sys.apiUrl}${post.body.eventsUrl as string}`, { timeoutMs: 60_000, stopAfter: (e) => e.event === 'approval_required' });
    const asked = waiting.find((e) => e.event === 'approval_required');
    expect(asked?.data).toMatchObject({ name: 'payments__refund_payment', arguments: { transactionId: txId } });
    expect(sys.store().transactions.find((t) => t.id === txId)?.status).toBe('succeeded');

    // A later message of the session queues behind it, and its streams say why, with the way out.
    const socket = await connectWs(`${sys.apiUrl.replace(/^http/, 'ws')}/ws?sessionId=refunds`, bearer(await sys.token('admin')));
    const later = await postMessage(sys.apiUrl, 'refunds', 'hello');
    expect(later.body.position).toBe(1);
    const held = await readSse(`${sys.apiUrl}${later.body.eventsUrl as string}`, { timeoutMs: 30_000, stopAfter: (e) => e.event === 'waiting' });
    const why = held.find((e) => e.event === 'waiting')?.data as { pendingApprovals: Array<{ deadline: string; decideUrl: string }> } | undefined;
    const toolCallId = asked?.data.toolCallId as string;
    expect(why).toMatchObject({
      turnId: later.body.turnId,
      behind: post.body.turnId,
      status: 'awaiting_approval',
      cancelUrl: `/v1/turns/${post.body.turnId as string}/cancel`,
      pendingApprovals: [{ toolCallId, name: 'payments__refund_payment', arguments: { transactionId: txId }, decideUrl: `/v1/turns/${post.body.turnId as string}/approvals/${toolCallId}` }],
    });
    expect(Date.parse(why?.pendingApprovals[0]?.deadline ?? '')).toBeGreaterThan(Date.now());
    const frame = await socket.next((f) => f.type === 'waiting' && f.payload.turnId === later.body.turnId, 30_000);
    expect(frame.payload).toEqual(why);
    socket.ws.close();
    const session = await getJson(`${sys.apiUrl}/v1/sessions/refunds/messages`);
    expect(session.body).toMatchObject({ activeTurnId: post.body.turnId, queuedTurnIds: [later.body.turnId], pendingApprovals: [{ toolCallId }] });

    const decided = await postJson(`${sys.apiUrl}${why?.pendingApprovals[0]?.decideUrl ?? ''}`, { approve: true });
    expect(decided.body.decision).toBe('approved');
    const events = await readSse(`${sys.apiUrl}${post.body.eventsUrl as string}`, { timeoutMs: 60_000 });
    expect(events.at(-1)?.event).toBe('done');
    expect(sys.store().transactions.find((t) => t.id === txId)?.status).toBe('refunded');
    const released = await readSse(`${sys.apiUrl}${later.body.eventsUrl as string}`, { timeoutMs: 60_000 });
    expect(released.at(-1)?.event).toBe('done');
    expect((await getJson(`${sys.apiUrl}/v1/sessions/refunds/messages`)).body.pendingApprovals).toBeUndefined();

    const again = await turn("Refund Carol's payment");
    expect(again.state.text).toBe('Carol Chen has no paid invoice: nothing to refund.');
  });

  test('pattern 4, fan-out/fan-in: a status report from context gathered from several servers in parallel', async () => {
    const { state } = await turn('Give me a full system status report');
    expect(state.status).toBe('completed');
    expect(state.text).toMatch(/School: \d+ students/);
    expect(state.text).toMatch(/"collected"/);
    expect(state.text).toMatch(/English 101/);
    // The three resources were read by one activity in one step, concurrently.
    const conversation = sentTo(provider, sys.model).at(-1)?.conversation ?? [];
    const contexts = conversation.map((m) => (typeof m.content === 'string' ? m.content : '')).filter((c) => /^Resource \S+ from /.test(c)).map((c) => c.split(' ')[1]);
    // The admin's context (examples/host.json), read concurrently by one activity.
    expect(contexts.slice(0, 3)).toEqual(['admin://system_status', 'payments://revenue_summary', 'admin://classes']);
  });

  test('pattern 5, shared service delegation: homework assigned, every enrolled student emailed once by comms', async () => {
    // A teacher's request: the teacher server acts for the caller it is told about in `_meta`.
    const { state } = await turn('Assign homework Essay on Hamlet to English 101 due 2026-12-01', await sys.token('teacher'));
    expect(state.status).toBe('completed');
    expect(state.toolCalls.map((c) => c.name)).toEqual(['teacher__assign_homework', 'comms__send_bulk']);
    const store = sys.store();
    const cls = store.classes.find((c) => c.name === 'English 101');
    expect(store.homework.filter((h) => h.title === 'Essay on Hamlet' && h.classId === cls?.id)).toHaveLength(1);
    const enrolled = store.enrolments
      .filter((e) => e.classId === cls?.id)
      .map((e) => store.users.find((u) => u.id === e.studentId)?.email)
      .sort();
    const mailed = store.outbox.filter((m) => m.subject === 'New homework: Essay on Hamlet').map((m) => m.to).sort();
    expect(enrolled.length).toBeGreaterThan(0);
    expect(mailed).toEqual(enrolled);
  });
});
