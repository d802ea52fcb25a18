import { WebSocketServer, type WebSocket } from 'ws';
import type { AddressInfo } from 'node:net';
import { effectFigures } from '../../soak/effects';
import { turnFigures } from '../../soak/figures';
import { WsSession, type TurnSeen } from '../../soak/streams';
import type { TurnRecord } from '../../soak/users';
import type { readStore } from '../../examples/servers/school/store';

/**
 * The soak's WebSocket client as a careful frontend: an `unavailable` answer to a message is not a
 * refusal (the turn may have started), so the same message goes again with the same key; and the
 * effect count lets a message cut at the deadline without an answer have charged once.
 */
type Frame = { type: string; payload: Record<string, unknown> };

async function fakeApi(onMessage: (ws: WebSocket, n: number, payload: Record<string, unknown>) => void): Promise<{ base: string; keys: string[]; close: () => Promise<void> }> {
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  await new Promise<void>((r) => wss.once('listening', () => r()));
  const keys: string[] = [];
  wss.on('connection', (ws) => {
    ws.on('message', (data) => {
      const f = JSON.parse(String(data)) as Frame;
      if (f.type !== 'message') return;
      keys.push(String(f.payload.idempotencyKey));
      onMessage(ws, keys.length, f.payload);
    });
  });
  return {
    base: `http://127.0.0.1:${(wss.address() as AddressInfo).port}`,
    keys,
    close: () => new Promise<void>((r) => wss.close(() => r())),
  };
}

const send = (ws: WebSocket, f: Frame) => ws.send(JSON.stringify(f));

/** One message sent through a WsSession against `api` and followed until `deadlineMs` from now; the API closed after. */
async function turnThrough(api: { base: string; close: () => Promise<void> }, key: string, deadlineMs: number): Promise<TurnSeen> {
  const session = new WsSession(api.base, 'token', `session-${key}`);
  const rec = seen();
  try {
    await session.turn('Process payment for student Soakaad', key, rec, Date.now() + deadlineMs, false);
  } finally {
    session.close();
    await api.close();
  }
  return rec;
}
const event = (ws: WebSocket, turnId: string, id: number, name: string) => send(ws, { type: 'event', payload: { turnId, id, event: name, data: name === 'done' ? { text: 'Done.' } : {} } });
const seen = (): TurnSeen => ({ outcome: 'lost', ids: [], reconnects: 0 });

test('an unavailable answer whose turn started anyway: the same key again, the same turn, each event once', async () => {
  const api = await fakeApi((ws, n) => {
    if (n === 1) {
      // The start reached Temporal, its answer did not reach the API: 503, yet the turn runs and its first event streams.
      send(ws, { type: 'error', payload: { code: 'unavailable', message: 'try again shortly' } });
      event(ws, 'turn-1', 1, 'status');
      return;
    }
    // The same key: the same turn, and (it has ended meanwhile) its events once more.
    send(ws, { type: 'status', payload: { message: 'Working on it', turnId: 'turn-1', created: false } });
    for (const [id, name] of [[1, 'status'], [2, 'text'], [3, 'done']] as const) event(ws, 'turn-1', id, name);
  });
  const rec = await turnThrough(api, 'key-1', 60_000);
  expect(api.keys).toEqual(['key-1', 'key-1']);
  expect(rec).toMatchObject({ turnId: 'turn-1', outcome: 'completed', ids: [1, 2, 3] });
  expect(rec.unanswered).toBeUndefined();
});

test('an event sent again after the resend must be the event first sent with that id: another one is a stream fault', async () => {
  const api = await fakeApi((ws, n) => {
    if (n === 1) {
      send(ws, { type: 'error', payload: { code: 'unavailable', message: 'try again shortly' } });
      event(ws, 'turn-2', 1, 'status');
      return;
    }
    send(ws, { type: 'status', payload: { message: 'Working on it', turnId: 'turn-2', created: false } });
    // Id 1 again, but another event than the one it brought first.
    for (const [id, name] of [[1, 'text'], [2, 'text'], [3, 'done']] as const) event(ws, 'turn-2', id, name);
  });
  const rec = await turnThrough(api, 'key-4', 60_000);
  expect(rec).toMatchObject({ turnId: 'turn-2', outcome: 'completed', ids: [1, 2, 3], replayConflicts: [1] });
  const f = turnFigures([{ ...rec, user: 1, kind: 'pay', via: 'ws', sessionId: 's', submittedAt: 0, lastEventId: 3, streamEnded: true } as TurnRecord]);
  expect(f.streamFaults).toEqual([{ turnId: 'turn-2', via: 'ws', problem: 'sent again after a resend with other content: ids 1' }]);
});

test('a refusal ends the message at once; a message never answered is refused at the deadline as unanswered', async () => {
  const busy = await fakeApi((ws) => send(ws, { type: 'error', payload: { code: 'session_busy', message: 'too many' } }));
  const refused = await turnThrough(busy, 'key-2', 60_000);
  expect(busy.keys).toEqual(['key-2']);
  expect(refused).toMatchObject({ outcome: 'refused', reason: 'session_busy too many' });
  expect(refused.unanswered).toBeUndefined();

  const down = await fakeApi((ws) => send(ws, { type: 'error', payload: { code: 'unavailable', message: 'down' } }));
  const cut = await turnThrough(down, 'key-3', 2_500);
  expect(down.keys.length).toBeGreaterThanOrEqual(1);
  expect(new Set(down.keys)).toEqual(new Set(['key-3']));
  expect(cut).toMatchObject({ outcome: 'refused', unanswered: true });
});

test('a charge from a message cut unanswered is allowed once; a second one is a duplicate', () => {
  const store = (charges: number) =>
    ({
      users: [{ id: 'u1', name: 'Soakaab', email: 'b@school.test' }],
      transactions: Array.from({ length: charges }, (_, i) => ({ id: `tx${i}`, userId: 'u1', status: 'completed' })),
      outbox: [],
    }) as unknown as ReturnType<typeof readStore>;
  const rec = (over: Partial<TurnRecord>): TurnRecord => ({ user: 1, kind: 'pay', via: 'ws', sessionId: 's', submittedAt: 0, outcome: 'completed', ids: [], reconnects: 0, ...over }) as TurnRecord;
  const turns = [
    rec({ turnId: 't1', text: 'Done.' }),
    rec({ outcome: 'refused', reason: 'no API accepted the message before the deadline', unanswered: true }),
    rec({ outcome: 'refused', reason: 'session_busy too many' }),
  ];
  expect(effectFigures(store(2), 2, turns).extraCharges).toBe(0);
  const three = effectFigures(store(3), 2, turns);
  expect(three.extraCharges).toBe(1);
  expect(three.details).toEqual(['Soakaab: 3 charges for 2 turns']);
});
