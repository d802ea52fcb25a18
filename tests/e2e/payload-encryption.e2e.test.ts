import { randomBytes } from 'node:crypto';
import { startSystem, temporalDatabaseBytes, type TestSystem } from '../helpers/system';
import { getJson, postMessage, readSse } from '../helpers/http';

/**
 * With payload keys configured, the Temporal service stores no user text, tool argument or tool result
 * in clear: after a turn, its SQLite file (and write-ahead log) is searched byte by byte. The control
 * runs the same turn without keys and finds all of them. Search attributes stay in clear either way.
 * Failure messages too: a model endpoint that rejects a request quoting the user's words.
 */
const SECRET = `zebra-quartz-${randomBytes(4).toString('hex')}`;
const MESSAGE = `remember that the vault code is ${SECRET}`;

/** A turn the model endpoint rejects (HTTP 400) with an error that quotes the user's words. */
async function rejectedTurn(sys: TestSystem, sessionId: string, quote: string): Promise<void> {
  sys.model.setFaults([{ status: 400, message: `content policy: "${quote}" is not allowed` }]);
  const { body } = await postMessage(sys.apiUrl, sessionId, `hello ${quote}`);
  await readSse(`${sys.apiUrl}${body.eventsUrl as string}`, { timeoutMs: 60_000 });
  await sys.client.workflow.getHandle(body.turnId).result().catch(() => undefined);
  const turn = await getJson(`${sys.apiUrl}/v1/turns/${body.turnId}`);
  expect(turn.body.status).toBe('failed');
  // Read back through the codec: the message is whole.
  expect(JSON.stringify(turn.body.error)).toContain(quote);
}

/** Runs the turn; returns the note's id, which only the notes server's result holds (not the user's text). */
async function runTurn(sys: TestSystem, sessionId: string): Promise<string> {
  const { status, body } = await postMessage(sys.apiUrl, sessionId, MESSAGE);
  expect(status).toBe(202);
  await readSse(`${sys.apiUrl}${body.eventsUrl as string}`, { timeoutMs: 60_000 });
  // The turn's record as the API reads it back from Temporal (through its codec, when it has one).
  await sys.client.workflow.getHandle(body.turnId).result();
  const turn = await getJson(`${sys.apiUrl}/v1/turns/${body.turnId}`);
  expect(turn.body.status).toBe('completed');
  expect(turn.body.text).toContain(SECRET);
  const saved = /^Saved note ([0-9a-f-]{36}): /.exec((turn.body.toolCalls as Array<{ result?: string }>)[0]?.result ?? '');
  expect(saved).not.toBeNull();
  return saved![1]!;
}

describe('with PAYLOAD_KEYS', () => {
  let sys: TestSystem;
  beforeAll(async () => {
    sys = await startSystem({ payloadKeys: `k2:${randomBytes(32).toString('base64')},k1:${randomBytes(32).toString('base64')}` });
  }, 120_000);
  afterAll(async () => await sys?.stop());

  test('no user text, tool argument or tool result is in Temporal\'s database; search attributes are', async () => {
    const noteId = await runTurn(sys, 'sealed-session');
    const db = temporalDatabaseBytes(sys.dir);
    expect(db.includes(SECRET)).toBe(false);
    expect(db.includes(noteId)).toBe(false);
    expect(db.includes('binary/encrypted')).toBe(true);
    // Search attributes and summaries: ids, in clear.
    expect(db.includes('sealed-session')).toBe(true);
    expect(db.includes('notes: add_note')).toBe(true);
  }, 120_000);

  test('a failure\'s message (the model endpoint quoting the user) is sealed too', async () => {
    const quote = `walrus-${randomBytes(4).toString('hex')}`;
    await rejectedTurn(sys, 'sealed-failure', quote);
    expect(temporalDatabaseBytes(sys.dir).includes(quote)).toBe(false);
  }, 120_000);
});

describe('control: without keys', () => {
  let sys: TestSystem;
  beforeAll(async () => {
    sys = await startSystem();
  }, 120_000);
  afterAll(async () => await sys?.stop());

  test('the same turn leaves the user\'s text and the tool result in clear', async () => {
    const noteId = await runTurn(sys, 'clear-session');
    const db = temporalDatabaseBytes(sys.dir);
    expect(db.includes(SECRET)).toBe(true);
    expect(db.includes(noteId)).toBe(true);
    expect(db.includes('binary/encrypted')).toBe(false);
  }, 120_000);

  test('the rejected turn\'s failure message is in clear', async () => {
    const quote = `walrus-${randomBytes(4).toString('hex')}`;
    await rejectedTurn(sys, 'clear-failure', quote);
    expect(temporalDatabaseBytes(sys.dir).includes(quote)).toBe(true);
  }, 120_000);
});
