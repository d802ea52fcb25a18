import { transcriptOf } from '../../src/core/session-transcript';
import type { SessionCarry } from '../../src/shared/session';

function emptyCarry(): SessionCarry {
  return { summarizedUpTo: 0, transcript: [], totalMessages: 0, turnsCompleted: 0, recentTurnIds: [], run: 1 };
}

describe("the session's transcript", () => {
  test('a message and its answer: indexes stay dense, the status follows the turn, completed turns are counted', () => {
    const carry = emptyCarry();
    let clock = 0;
    const t = transcriptOf(carry, () => `t${clock++}`);
    t.append({ role: 'user', content: 'hi', turnId: 'a', status: 'queued' });
    t.setStatus('a', 'running');
    t.ended('a', 'completed', 'hello');
    t.append({ role: 'user', content: 'again', turnId: 'b', status: 'running' });
    t.ended('b', 'cancelled', 'The turn was cancelled.');
    expect(carry.transcript).toEqual([
      { role: 'user', content: 'hi', turnId: 'a', status: 'completed', index: 0, at: 't0' },
      { role: 'assistant', content: 'hello', turnId: 'a', status: 'completed', index: 1, at: 't1' },
      { role: 'user', content: 'again', turnId: 'b', status: 'cancelled', index: 2, at: 't2' },
      { role: 'assistant', content: 'The turn was cancelled.', turnId: 'b', status: 'cancelled', index: 3, at: 't3' },
    ]);
    expect(carry.totalMessages).toBe(4);
    expect(carry.turnsCompleted).toBe(1);
  });

  test('a turn that never ran is answered once, and only when its message is there', () => {
    const carry = emptyCarry();
    const t = transcriptOf(carry, () => 'now');
    t.notStarted('ghost', 'no message, no answer');
    expect(carry.transcript).toHaveLength(0);
    t.append({ role: 'user', content: 'x', turnId: 'c', status: 'running' });
    t.notStarted('c', 'The turn could not be started.');
    t.notStarted('c', 'said twice');
    expect(carry.transcript.map((m) => [m.role, m.content, m.status])).toEqual([
      ['user', 'x', 'failed'],
      ['assistant', 'The turn could not be started.', 'failed'],
    ]);
    expect(t.has('c', 'assistant')).toBe(true);
  });

  test('the newest 200 turn ids are remembered; the transcript is read from the carry each time (it is replaced when trimmed)', () => {
    const carry = emptyCarry();
    const t = transcriptOf(carry, () => 'now');
    for (let i = 0; i < 205; i++) t.remember(`turn-${i}`);
    expect(carry.recentTurnIds).toHaveLength(200);
    expect(carry.recentTurnIds[0]).toBe('turn-5');
    carry.transcript = [];
    t.append({ role: 'user', content: 'after a trim', turnId: 'd', status: 'running' });
    expect(carry.transcript).toHaveLength(1);
  });
});
