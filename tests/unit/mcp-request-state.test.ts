import { randomBytes } from 'node:crypto';
import { mintState, openState } from '../../src/api/mcp-server/request-state';
import type { UserContext } from '../../src/shared/user';

/** The `requestState` of /mcp's input_required answers travels through the client: it must not be forgeable. */
const key = randomBytes(32).toString('hex');
const bob: UserContext = { id: 'u-bob', role: 'student', tenant: 'school', scopes: [] };
const state = { turnId: 'turn-s1-abc', sessionId: 's1', kind: 'approval' as const, toolCallId: 'call-1', after: 7 };

test('a state opens for the caller it was minted for', () => {
  expect(openState(key, bob, mintState(key, bob, state))).toEqual(state);
});

test('a state is refused for another caller, under another key, altered, or expired', () => {
  const sealed = mintState(key, bob, state);
  expect(openState(key, { ...bob, id: 'u-eve' }, sealed)).toBeUndefined();
  expect(openState(key, { ...bob, tenant: 'other' }, sealed)).toBeUndefined();
  expect(openState(randomBytes(32).toString('hex'), bob, sealed)).toBeUndefined();
  // One character of the seal changed (the last but one: the last may carry only padding bits), always to another one.
  const flipped = `${sealed.slice(0, -2)}${sealed.at(-2) === 'A' ? 'B' : 'A'}${sealed.slice(-1)}`;
  expect(flipped).not.toBe(sealed);
  expect(openState(key, bob, flipped)).toBeUndefined();
  expect(openState(key, bob, 'not-a-state')).toBeUndefined();
  const now = Date.now();
  expect(openState(key, bob, mintState(key, bob, state, now), now + 2 * 60 * 60 * 1000)).toBeUndefined();
});
