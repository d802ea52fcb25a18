import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import type { DemoRules } from '../../src/demo-model/rules';
import { turnStateQuery } from '../../src/workflows/definitions';
import { startBigServer, markedText, type BigServer } from '../helpers/big-server';
import { bearer, getJson, postMessage, readSse } from '../helpers/http';
import { startSystem, temporalDatabaseBytes, type TestSystem } from '../helpers/system';

/**
 * Issue 24 §2: a 5 MiB tool result, a 3 MiB resource read as context and a 1 MiB model answer each
 * complete a turn, with payload keys set. The model sees what maxToolResultChars allows of the tool
 * result (the activity cuts it) and the whole context; each turn's history, as Temporal stores it,
 * stays under HISTORY_BOUND (README, docs/decisions/0022-claim-check.md): the large payloads are in
 * the claim-check directory by reference, sealed (the clear text is not on disk), and Temporal's
 * database holds none of it.
 */
const MiB = 1024 * 1024;
const MAX_TOOL_RESULT_CHARS = 20_000;
/** What one turn's history may weigh, serialized as Temporal stores it (its events, payloads included). */
const HISTORY_BOUND = 256 * 1024;

const tag = () => randomBytes(4).toString('hex');
const TOOL_HEAD = `TOOL-HEAD-${tag()}`;
const TOOL_TAIL = `TOOL-TAIL-${tag()}`;
const CONTEXT_HEAD = `CONTEXT-HEAD-${tag()}`;
const CONTEXT_TAIL = `CONTEXT-TAIL-${tag()}`;
const ANSWER_HEAD = `ANSWER-HEAD-${tag()}`;
const ANSWER_TAIL = `ANSWER-TAIL-${tag()}`;
const ANSWER = markedText(ANSWER_HEAD, ANSWER_TAIL, MiB);

const rules: DemoRules = {
  model: 'demo-model',
  fallback: 'no script',
  scripts: [
    { name: 'dump', match: '^dump the big result$', steps: [{ toolCalls: [{ name: 'big__dump', arguments: {} }] }, { text: 'The dump is in.' }] },
    { name: 'context', match: '^what does the context say\\?$', steps: [{ text: 'The context is long.' }] },
    { name: 'long', match: '^write a long answer$', steps: [{ text: ANSWER }] },
  ],
};

let sys: TestSystem;
let big: BigServer;

beforeAll(async () => {
  big = await startBigServer({ toolText: markedText(TOOL_HEAD, TOOL_TAIL, 5 * MiB), resourceText: markedText(CONTEXT_HEAD, CONTEXT_TAIL, 3 * MiB) });
  sys = await startSystem({
    rules,
    payloadKeys: `k1:${randomBytes(32).toString('base64')}`,
    extraServers: { big: { url: big.url, transport: 'streamable-http' } },
    // Teachers' turns read the 3 MiB resource as context; the admin's do not.
    host: { maxToolResultChars: MAX_TOOL_RESULT_CHARS, contextByRole: { teacher: { resources: [{ server: 'big', uri: 'big://context' }], prompts: [] } } },
  });
}, 180_000);

afterAll(async () => {
  await sys?.stop();
  await big?.close();
});

let answerTurnId = '';

/** Runs a turn to its end; returns its record as the API reads it back and its history's serialized size. */
async function turn(sessionId: string, text: string, headers: Record<string, string> = {}) {
  sys.model.resetRequests();
  const { status, body } = await postMessage(sys.apiUrl, sessionId, text, headers);
  expect(status).toBe(202);
  await readSse(`${sys.apiUrl}${body.eventsUrl as string}`, { timeoutMs: 120_000, headers, stopAfter: (e) => e.event === 'done' || e.event === 'error' });
  await sys.client.workflow.getHandle(body.turnId).result();
  const record = await getJson(`${sys.apiUrl}/v1/turns/${body.turnId}`, headers);
  expect(record.body.status).toBe('completed');
  const history = await sys.client.workflow.getHandle(body.turnId).fetchHistory();
  const historyBytes = temporal.api.history.v1.History.encode(history).finish().length;
  return { record: record.body, historyBytes, turnId: body.turnId };
}

/** The contents of the chat requests the model got during the last turn. */
function modelMessages(): Array<{ role: string; content?: unknown }> {
  return sys.model.requests().flatMap((r) => ((r.body as { messages?: Array<{ role: string; content?: unknown }> } | undefined)?.messages ?? []));
}

function claimCheckFiles(): string[] {
  const root = path.join(sys.dir, 'claim-check');
  if (!existsSync(root)) return [];
  return readdirSync(root, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => path.join(e.parentPath, e.name));
}

test('a 5 MiB tool result: the model sees maxToolResultChars of it, the history stays small', async () => {
  const { record, historyBytes } = await turn('big-tool', 'dump the big result');
  expect(record.text).toBe('The dump is in.');
  const toolMessages = modelMessages().filter((m) => m.role === 'tool');
  expect(toolMessages.length).toBeGreaterThan(0);
  const seen = String(toolMessages[0]!.content);
  expect(seen.length).toBeLessThanOrEqual(MAX_TOOL_RESULT_CHARS);
  expect(seen.length).toBeGreaterThan(MAX_TOOL_RESULT_CHARS - 100);
  expect(seen.startsWith(TOOL_HEAD)).toBe(true);
  const cut = /\n\[truncated: (\d+) more characters\]$/.exec(seen);
  expect(Number(cut?.[1])).toBe(5 * MiB - seen.indexOf('\n[truncated:'));
  expect(JSON.stringify(modelMessages())).not.toContain(TOOL_TAIL);
  expect(historyBytes).toBeLessThan(HISTORY_BOUND);
}, 180_000);

test('a 3 MiB resource read as context: the model gets all of it, the history holds a reference', async () => {
  const before = claimCheckFiles().length;
  const { record, historyBytes } = await turn('big-context', 'what does the context say?', bearer(await sys.token('teacher')));
  expect(record.text).toBe('The context is long.');
  const all = JSON.stringify(modelMessages());
  expect(all).toContain(CONTEXT_HEAD);
  expect(all).toContain(CONTEXT_TAIL);
  expect(historyBytes).toBeLessThan(HISTORY_BOUND);
  expect(claimCheckFiles().length).toBeGreaterThan(before);
}, 180_000);

test('a 1 MiB model answer: the turn completes, the API reads it back whole, the history stays small', async () => {
  const { record, historyBytes, turnId } = await turn('big-answer', 'write a long answer');
  answerTurnId = turnId;
  expect(record.text).toBe(ANSWER);
  expect(historyBytes).toBeLessThan(HISTORY_BOUND);
}, 180_000);

test('with keys, neither the claim-check store nor Temporal\'s database holds the clear text', () => {
  const files = claimCheckFiles();
  expect(files.length).toBeGreaterThan(0);
  const disk = Buffer.concat(files.map((f) => readFileSync(f)));
  const db = temporalDatabaseBytes(sys.dir);
  for (const marker of [TOOL_HEAD, CONTEXT_HEAD, CONTEXT_TAIL, ANSWER_HEAD, ANSWER_TAIL]) {
    expect(disk.includes(marker)).toBe(false);
    expect(db.includes(marker)).toBe(false);
  }
  // Temporal's database never saw the large payloads: far smaller than any one of them.
  expect(db.length).toBeLessThan(3 * MiB);
});

test('blobs gone: reading the turn fails with an error naming the store, and the worker goes on serving', async () => {
  // Before: a fresh worker replays the closed turn to answer a query, reading its blobs.
  await sys.worker.stop();
  const replaying = await sys.startWorker();
  expect((await sys.client.workflow.getHandle(answerTurnId).query(turnStateQuery)).text).toBe(ANSWER);
  rmSync(path.join(sys.dir, 'claim-check'), { recursive: true, force: true });
  // The client decodes the turn's result: the reference has no blob behind it.
  await expect(sys.client.workflow.getHandle(answerTurnId).result()).rejects.toThrow(/payload stored by reference \(sha256:[0-9a-f]{64}, \d+ bytes\) is missing from the directory/);
  // After: another fresh worker's replay cannot decode, and the query fails (its message travels
  // sealed, decision 0019: this client reads "Encoded failure").
  await replaying.stop();
  const worker = await sys.startWorker();
  await expect(sys.client.workflow.getHandle(answerTurnId).query(turnStateQuery)).rejects.toThrow();
  // The worker is still there and serves the next turn.
  expect(worker.child.exitCode).toBeNull();
  const { record } = await turn('after-missing', 'dump the big result');
  expect(record.text).toBe('The dump is in.');
}, 180_000);
