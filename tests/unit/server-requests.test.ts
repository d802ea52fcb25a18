import { RELATED_TASK_META_KEY } from '@modelcontextprotocol/sdk/types.js';
import { ElicitationSession } from '../../src/mcp/elicitation';
import { CallsInFlight, connectionContext } from '../../src/mcp/server-requests';
import type { CallerContext } from '../../src/mcp/user-token';

const alice: CallerContext = { principal: 'alice', turnId: 'turn-a', elicitation: new ElicitationSession() };
const bob: CallerContext = { principal: 'bob', turnId: 'turn-b', elicitation: new ElicitationSession() };
const task = (taskId: string) => ({ [RELATED_TASK_META_KEY]: { taskId } });

test("a request in a call's own context is that call's, whatever the transport", () => {
  const calls = new CallsInFlight();
  calls.add(alice);
  calls.add(bob);
  expect(calls.callerOf(undefined, bob)).toBe(bob);
});

test("the stream of a call no longer in flight is nobody's: the re-issued call is not given the old one's question", () => {
  const calls = new CallsInFlight();
  const reissued: CallerContext = { ...alice, elicitation: new ElicitationSession() };
  calls.add(reissued);
  expect(calls.callerOf(undefined, alice)).toBeUndefined();
});

test("a connection's own stream (Streamable HTTP's GET stream, legacy SSE, stdio): the only call in flight, and nobody once there are two", () => {
  const calls = new CallsInFlight();
  expect(calls.callerOf(undefined, connectionContext(alice))).toBeUndefined();
  calls.add(alice);
  expect(calls.callerOf(undefined, connectionContext(alice))).toBe(alice);
  calls.add(bob);
  expect(calls.callerOf(undefined, connectionContext(alice))).toBeUndefined();
  calls.delete(alice);
  expect(calls.callerOf(undefined, undefined)).toBe(bob);
});

test('a request naming the task of a call in flight is that call’s; an unknown task or a contradiction is nobody’s', () => {
  const calls = new CallsInFlight();
  calls.add(alice);
  calls.add(bob);
  calls.noteTask('t-bob', bob);
  expect(calls.callerOf(task('t-bob'), undefined)).toBe(bob);
  expect(calls.callerOf(task('t-bob'), bob)).toBe(bob);
  expect(calls.callerOf(task('t-bob'), alice)).toBeUndefined();
  calls.delete(alice);
  // Alice's call is gone and Bob's is alone, but the request names a task that is not his.
  expect(calls.callerOf(task('t-other'), undefined)).toBeUndefined();
  calls.delete(bob);
  calls.add(alice);
  expect(calls.callerOf(task('t-bob'), undefined)).toBeUndefined();
});

test('a task is noted only for a call in flight', () => {
  const calls = new CallsInFlight();
  calls.noteTask('t-1', alice);
  calls.add(alice);
  expect(calls.callerOf(task('t-1'), undefined)).toBeUndefined();
});

test('the connection context keeps the credentials the handshake needs and none of the call', () => {
  const context = connectionContext({ ...alice, token: 'tok' });
  expect(context).toEqual({ token: 'tok', principal: 'alice', turnId: 'turn-a' });
  expect(connectionContext(undefined)).toEqual({});
});
