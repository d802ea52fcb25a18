import { turnFigures } from '../../soak/figures';
import { awaitLate, settleLate, turnRow } from '../../soak/late';
import { failures, lateRow, markdown, overall, type SoakFigures } from '../../soak/report';
import type { TurnRead } from '../../soak/streams';
import type { TurnRecord } from '../../soak/users';

/** Lost or late (decision 0030): a turn the clients gave up on at the drain deadline, read again after it. */
const turn = (over: Partial<TurnRecord>): TurnRecord =>
  ({ user: 1, kind: 'pay', via: 'sse', sessionId: 's', submittedAt: 0, outcome: 'completed', ids: [1, 2, 3], reconnects: 0, turnId: 't', lastEventId: 3, streamEnded: true, endedAt: 10, ...over }) as TurnRecord;
const lost = (over: Partial<TurnRecord>): TurnRecord => turn({ outcome: 'lost', ids: [1], lastEventId: 4, streamEnded: false, endedAt: 300, serverStatus: 'running', ...over });

test('a turn counted lost is late once its record shows it ended, with the time it was read; running, it stays lost', () => {
  const running = lost({ turnId: 'a' });
  expect(settleLate(running, { status: 'running', lastEventId: 6 }, 400)).toBe(false);
  expect([running.outcome, running.serverStatus, running.lastEventId, running.endedAt]).toEqual(['lost', 'running', 6, 300]);

  const done = lost({ turnId: 'b' });
  expect(settleLate(done, { status: 'completed', lastEventId: 9 }, 450)).toBe(true);
  expect([done.outcome, done.serverStatus, done.lastEventId, done.endedAt]).toEqual(['late', 'completed', 9, 450]);

  const failed = lost({ turnId: 'c' });
  expect(settleLate(failed, { status: 'failed', lastEventId: 7, error: { message: 'The language model is unavailable' } }, 460)).toBe(true);
  expect([failed.outcome, failed.serverStatus, failed.reason]).toEqual(['late', 'failed', 'The language model is unavailable']);

  // Only a turn counted lost can be late.
  const completed = turn({ turnId: 'd' });
  expect(settleLate(completed, { status: 'completed', lastEventId: 3 }, 500)).toBe(false);
  expect([completed.outcome, completed.endedAt]).toEqual(['completed', 10]);
});

test('the extra window reads the lost turns with an id until each ended or the window is over; the rest stay lost', async () => {
  // A clock that moves only when the window pauses: no timing in the test.
  let clock = 1_000;
  const script: Record<string, Array<TurnRead | undefined>> = {
    second: [{ status: 'running' }, undefined, { status: 'completed', lastEventId: 8 }],
    first: [{ status: 'failed', lastEventId: 2, error: { message: 'boom' } }],
    never: [],
  };
  const reads: string[] = [];
  const turns = [
    lost({ turnId: 'second' }),
    lost({ turnId: 'first' }),
    lost({ turnId: 'never' }),
    lost({ turnId: undefined }),
    turn({ turnId: 'done' }),
    turn({ turnId: undefined, outcome: 'refused' }),
  ];
  const late = await awaitLate(turns, {
    read: async (t) => {
      reads.push(t.turnId ?? '(none)');
      return script[t.turnId ?? '']?.shift() ?? { status: 'running', lastEventId: 1 };
    },
    until: 1_000 + 5 * 2_000,
    everyMs: 2_000,
    now: () => clock,
    pause: async (ms) => {
      clock += ms;
    },
  });
  expect(late).toBe(2);
  expect(turns.map((t) => t.outcome)).toEqual(['late', 'late', 'lost', 'lost', 'completed', 'refused']);
  expect(turns[0]?.endedAt).toBe(1_000 + 2 * 2_000);
  expect(turns[1]?.endedAt).toBe(1_000);
  // A round every 2 s of the clock, the last at the window's end (1 s, 3 s, ..., 11 s): 'never' is read in each of the six.
  expect(reads.filter((r) => r === 'never')).toHaveLength(6);
  expect(reads.filter((r) => r === 'second')).toHaveLength(3);
  expect(reads.filter((r) => r === 'first')).toHaveLength(1);
  expect(reads).not.toContain('done');
  expect(reads).not.toContain('(none)');
});

test('a window already over still reads each lost turn once', async () => {
  const turns = [lost({ turnId: 'x' }), lost({ turnId: 'y' })];
  const read = jest.fn(async (t: TurnRecord): Promise<TurnRead> => ({ status: t.turnId === 'x' ? 'completed' : 'running' }));
  expect(await awaitLate(turns, { read, until: 0, everyMs: 2_000, now: () => 10, pause: () => Promise.reject(new Error('no pause expected')) })).toBe(1);
  expect(read).toHaveBeenCalledTimes(2);
  expect(turns.map((t) => t.outcome)).toEqual(['late', 'lost']);
});

const figuresOf = (turns: TurnRecord[]): SoakFigures => ({
  users: 2, minutes: 10, allocator: 'jemalloc', start: 0, end: 600_000, drainMs: 300_000, lateMs: 300_000,
  turns: turnFigures(turns),
  effects: { charges: 0, refunds: 0, receipts: 0, extraCharges: 0, extraRefunds: 0, extraReceipts: 0, missingCharges: 0, details: [] },
  latency: [],
  overall: overall(turns),
  growth: [],
  faults: [],
  crashes: [],
  approvals: 0,
  histories: { turns: 0, eventsP50: 0, eventsMax: 0, bytesP50: 0, bytesMax: 0 },
});

test('late turns are their own figure and row, count in latency and are no failure; lost ones fail the run', () => {
  const turns = [
    turn({ turnId: 'ok', submittedAt: 0, endedAt: 10_000 }),
    turn({ turnId: 'late-ok', outcome: 'late', serverStatus: 'completed', submittedAt: 0, endedAt: 400_000, streamEnded: false, ids: [1, 2], lastEventId: 5 }),
    turn({ turnId: 'late-failed', outcome: 'late', serverStatus: 'failed', reason: 'The language model is unavailable: activity Heartbeat timeout', submittedAt: 0, endedAt: 420_000, streamEnded: false, ids: [1] }),
  ];
  const f = turnFigures(turns);
  expect([f.submitted, f.completed, f.failed, f.lost, f.late]).toEqual([3, 1, 0, 0, 2]);
  expect(f.lateEnded).toEqual({ completed: 1, failed: 1 });
  expect(f.reasons).toEqual({ '(late) The language model is unavailable: activity Heartbeat timeout': 1 });
  // Judged up to the last event their clients received, as streams cut at the deadline.
  expect([f.streamFaults, f.streamsCutAtDeadline]).toEqual([[], 2]);
  // The late completed turn counts in latency with the time it took; the failed one does not (as failed turns do not).
  expect(overall(turns)).toEqual({ p50: 10_000, p99: 400_000 });
  expect(lateRow(f)).toBe('2 (1 completed, 1 failed)');

  const passing = figuresOf(turns);
  expect(failures(passing)).toEqual([]);
  expect(markdown(passing, [], 'jest')).toContain('| late (ended after the 300.0 s drain, within the next 300.0 s; not a failure) | 2 (1 completed, 1 failed) |');
  expect(markdown(passing, [], 'jest')).toContain('| lost | 0 |');
  // The V8 cap the run set is stated beside the allocator; a run without one says nothing of it.
  expect(markdown(passing, [], 'jest')).not.toContain('V8 old generation');
  expect(markdown({ ...passing, oldSpaceMb: { api: 96, worker: 160 } }, [], 'jest')).toContain('| V8 old generation cap (API replicas / workers) | 96 MB / 160 MB |');

  const failing = figuresOf([...turns, lost({ turnId: 'gone' }), lost({ turnId: undefined }), turn({ turnId: 'mute', outcome: 'late', serverStatus: 'failed', ids: [1], streamEnded: false })]);
  expect(failures(failing)).toEqual(["2 turns lost (no end seen by the client nor by the turn's record, even 300.0 s after the drain)", '1 turns failed without a reason']);
  expect(markdown(failing, failures(failing), 'jest')).toContain('| late (ended after the 300.0 s drain, within the next 300.0 s; not a failure) | 3 (1 completed, 2 failed) |');
});

test("result.json keeps each turn: a late one with the time it was seen ended, a lost one with when its client stopped", () => {
  expect(turnRow(turn({ turnId: 'l', outcome: 'late', serverStatus: 'completed', endedAt: 420_000, submittedAt: 5, reconnects: 2, ids: [1, 2], streamEnded: false }))).toEqual({
    turnId: 'l', user: 1, kind: 'pay', via: 'sse', outcome: 'late', submittedAt: 5, endedAt: 420_000, serverStatus: 'completed', lastEventId: 3, eventsReceived: 2, streamEnded: false, reconnects: 2, reason: undefined,
  });
  const row = turnRow(lost({ turnId: 'g', reason: undefined }));
  expect(row).toMatchObject({ turnId: 'g', outcome: 'lost', followedUntil: 300, serverStatus: 'running', lastEventId: 4 });
  expect(row).not.toHaveProperty('endedAt');
});
