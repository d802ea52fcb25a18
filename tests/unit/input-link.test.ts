import { QueryNotRegisteredError, type Client } from '@temporalio/client';
import { createInputLink } from '../../src/input-link';

/**
 * Whether the attempt before held a question, asked of the turn by a later attempt. Right after a
 * worker died the turn may fail to answer for a while: that is asked again, never read as "no
 * question held" (which would end the call as outcome unknown while the user is about to answer).
 */
function clientAnswering(answers: Array<() => unknown>): { client: Pick<Client, 'workflow'>; asked: () => number } {
  let n = 0;
  const handle = { query: async () => (answers[Math.min(n++, answers.length - 1)] as () => unknown)() };
  return { client: { workflow: { getHandle: () => handle } } as unknown as Pick<Client, 'workflow'>, asked: () => n };
}

test('a turn that cannot answer at first is asked again until it does', async () => {
  const unavailable = () => {
    throw new Error('14 UNAVAILABLE: the turn has no worker yet');
  };
  const { client, asked } = clientAnswering([unavailable, unavailable, () => ({ answer: null, taken: false })]);
  await expect(createInputLink(client).heldUntaken('turn-1', 'call-1')).resolves.toBe(true);
  expect(asked()).toBe(3);
});

test('a held question already taken, none held, or a turn without the handler: no question waits', async () => {
  await expect(createInputLink(clientAnswering([() => ({ answer: { action: 'accept' }, taken: true })]).client).heldUntaken('t', 'c')).resolves.toBe(false);
  await expect(createInputLink(clientAnswering([() => null]).client).heldUntaken('t', 'c')).resolves.toBe(false);
  const older = () => {
    throw new QueryNotRegisteredError('query handler not registered', 3);
  };
  await expect(createInputLink(clientAnswering([older]).client).heldUntaken('t', 'c')).resolves.toBe(false);
});

test('a turn that never answers fails the attempt (retryably) after a few seconds, with its error', async () => {
  const { client } = clientAnswering([
    () => {
      throw new Error('4 DEADLINE_EXCEEDED');
    },
  ]);
  await expect(createInputLink(client).heldUntaken('t', 'c')).rejects.toThrow('DEADLINE_EXCEEDED');
}, 20_000);
