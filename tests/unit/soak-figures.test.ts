import { turnFigures } from '../../soak/figures';
import type { TurnRecord } from '../../soak/users';

const turn = (over: Partial<TurnRecord>): TurnRecord =>
  ({ user: 1, kind: 'pay', via: 'sse', sessionId: 's', submittedAt: 0, outcome: 'completed', ids: [1, 2, 3], reconnects: 0, turnId: 't', lastEventId: 3, streamEnded: true, ...over }) as TurnRecord;

test("the soak judges a stream whole when it brought the turn's end, and up to its last event when the client stopped at the run's deadline", () => {
  const f = turnFigures([
    turn({ turnId: 'whole' }),
    turn({ turnId: 'tail-missed', ids: [1, 2], lastEventId: 3 }),
    turn({ turnId: 'cut', ids: [1, 2], lastEventId: 5, streamEnded: false }),
    turn({ turnId: 'cut-with-gap', ids: [1, 3], lastEventId: 5, streamEnded: false }),
    turn({ turnId: 'repeat', ids: [1, 2, 2, 3] }),
  ]);
  expect(f.streamFaults.map((s) => [s.turnId, s.problem])).toEqual([
    ['tail-missed', 'missed 3'],
    ['cut-with-gap', 'missed 2'],
    ['repeat', 'repeated 2'],
  ]);
  expect(f.streamsCutAtDeadline).toBe(2);
});
