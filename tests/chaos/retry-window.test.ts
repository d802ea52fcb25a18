import { tsToMs } from '@temporalio/common/lib/time';
import type { ManagedProcess } from '../../src/cli/processes';
import { getJson, postMessage, readSse, type SseEvent } from '../helpers/http';
import { startSchoolSystem, type SchoolSystem } from '../helpers/school';

/**
 * How long a crashed worker stalls a tool call, with the host's default tool profile (the other chaos
 * tests shorten every timeout): of two workers, the one running process_payment is SIGKILLed. Its
 * peer sees it die (worker liveness, src/liveness) and fails the attempt, so the next attempt starts
 * on the peer well inside the 10 s heartbeat timeout, says so on the stream, and charges nothing twice.
 * Measured before and after in docs/SCALING.md ("A crashed worker").
 */
jest.setTimeout(180_000);

/** Half the 10 s heartbeat timeout: only liveness gets there; generous for a busy machine (about 1 s measured). */
const RETRY_WITHIN_MS = 5_000;

let sys: SchoolSystem;
let workers: ManagedProcess[];

beforeAll(async () => {
  // `timeouts` left to the host config's defaults.
  sys = await startSchoolSystem({ toolDelays: 'process_payment=2500', host: { timeouts: undefined } });
  workers = [sys.worker, await sys.startWorker()];
}, 120_000);
afterAll(async () => {
  await sys?.stop();
});

test('SIGKILL of the worker running process_payment: the next attempt starts on its peer within about a second, says so, one charge', async () => {
  const invoiceId = sys.store().invoices.find((i) => i.userId === 'u-bob' && i.status === 'unpaid')?.id;
  expect(invoiceId).toBeDefined();
  const post = await postMessage(sys.apiUrl, 'chaos', "Process payment for student Bob's invoice");
  const turnId = post.body.turnId as string;

  // One stream for the whole turn, each event stamped as it arrives.
  const seen: Array<{ e: SseEvent; at: number }> = [];
  const paymentCall = (id: string) => seen.some(({ e }) => e.event === 'tool_call_started' && e.data.name === 'payments__process_payment' && e.data.toolCallId === id);
  let paymentStarted: () => void = () => undefined;
  const started = new Promise<void>((resolve) => (paymentStarted = resolve));
  const stream = readSse(`${sys.apiUrl}/v1/turns/${turnId}/events`, {
    timeoutMs: 150_000,
    stopAfter: (e) => {
      seen.push({ e, at: Date.now() });
      // The server reports progress on the charge: the request is there, and its answer not yet back.
      if (e.event === 'tool_progress' && typeof e.data.toolCallId === 'string' && paymentCall(e.data.toolCallId)) paymentStarted();
      return e.event === 'done';
    },
  });
  await Promise.race([started, stream.then((events) => Promise.reject(new Error(`the turn ended before process_payment reported progress: ${events.map((e) => e.event).join(',')}`)))]);
  // The worker the server handed the attempt to (its identity is pid@host, the SDK's default).
  const pending = (await sys.client.workflow.getHandle(turnId).describe()).raw.pendingActivities ?? [];
  const identity = pending.find((a) => a.activityType?.name === 'callTool')?.lastWorkerIdentity ?? '';
  const victim = workers.find((w) => identity.startsWith(`${w.pid}@`));
  expect({ identity, victim: victim !== undefined }).toEqual({ identity, victim: true });
  const killedAt = Date.now();
  await victim?.kill();
  const events = await stream;
  expect(events.at(-1)?.event).toBe('done');

  // When attempt 2 of the payment started, as the server recorded it.
  const history = await sys.client.workflow.getHandle(turnId).fetchHistory();
  const secondStart = (history.events ?? []).find((ev) => ev.activityTaskStartedEventAttributes?.attempt === 2);
  const startedAtMs = secondStart?.eventTime ? tsToMs(secondStart.eventTime) : undefined;
  const scheduledId = String(secondStart?.activityTaskStartedEventAttributes?.scheduledEventId ?? '');
  const completed = (history.events ?? []).find((ev) => String(ev.activityTaskCompletedEventAttributes?.scheduledEventId ?? '') === scheduledId);
  const completedAtMs = completed?.eventTime ? tsToMs(completed.eventTime) : undefined;
  const retry = seen.find(({ e }) => e.event === 'notice' && e.data.code === 'tool_retry');
  const finished = seen.find(({ e }) => e.event === 'tool_call_finished' && e.data.name === 'payments__process_payment');
  const timings = `kill → attempt 2 started (history) ${startedAtMs !== undefined ? startedAtMs - killedAt : '?'} ms, kill → announced ${retry ? retry.at - killedAt : 'never announced'} ms, kill → attempt 2 completed (history) ${completedAtMs !== undefined ? completedAtMs - killedAt : '?'} ms, kill → call finished ${finished ? finished.at - killedAt : '?'} ms, kill → done ${(seen.at(-1)?.at ?? 0) - killedAt} ms`;
  // CHAOS_TIMINGS=1 prints the measurement (docs/SCALING.md records it).
  if (process.env.CHAOS_TIMINGS) process.stderr.write(`${timings}\n`);
  // The timings ride along so that a failure shows them.
  const within = (at: number | undefined) => at !== undefined && at - killedAt < RETRY_WITHIN_MS;
  expect({ timings, started: within(startedAtMs), announced: within(retry?.at) }).toEqual({ timings, started: true, announced: true });
  expect(retry?.e.data.message).toBe('retrying payments__process_payment on another worker (attempt 2)');
  expect(paymentCall(String(retry?.e.data.toolCallId))).toBe(true);

  const turn = await getJson(`${sys.apiUrl}/v1/turns/${turnId}`);
  expect(turn.body.status).toBe('completed');
  const store = sys.store();
  expect(store.transactions.filter((t) => t.invoiceId === invoiceId)).toHaveLength(1);
  expect(store.invoices.find((i) => i.id === invoiceId)?.status).toBe('paid');
});
