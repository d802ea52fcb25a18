/**
 * Misbehaving MCP servers through whole turns on a real worker (issue 26 §2): a server that never
 * answers the call, and one that answers 50 MB. The user sees a clear failed tool outcome (the
 * `tool_outcome_unknown` notice and the call's error), and the turn finishes; the worker goes on
 * serving the same server. The fixture is tests/fixtures/misbehaving-server.ts, a stdio child of the worker.
 */
import { readFileSync } from 'node:fs';
import type { DemoRules } from '../../src/demo-model/rules';
import { getJson, postMessage, readSse } from '../helpers/http';
import { MISBEHAVING_SERVER } from '../helpers/misbehaving';
import { EXAMPLE_RULES, startSystem, type TestSystem } from '../helpers/system';

const CALL_MS = 3_000;
const MAX_BYTES = 1024 * 1024;
let sys: TestSystem;

/** "misbehave <tool>" calls bad__<tool> and says what came back. */
const scripts = ['hang', 'huge', 'ok'].map((tool) => ({
  name: `misbehave-${tool}`,
  match: `(?i)^misbehave ${tool}$`,
  steps: [{ toolCalls: [{ name: `bad__${tool}`, arguments: {} }] }, { text: 'tool said: {{result.last}}' }],
}));

beforeAll(async () => {
  const base = JSON.parse(readFileSync(EXAMPLE_RULES, 'utf8')) as DemoRules;
  sys = await startSystem({
    rules: { ...base, scripts: [...scripts, ...(base.scripts ?? [])] },
    servers: () => ({
      bad: { command: process.execPath, args: [MISBEHAVING_SERVER, '--stdio'], timeouts: { callMs: CALL_MS }, maxMessageBytes: MAX_BYTES },
    }),
  });
}, 120_000);

afterAll(async () => {
  await sys?.stop();
});

let sessions = 0;
async function turn(text: string) {
  const post = await postMessage(sys.apiUrl, `misbehave-${++sessions}`, text);
  expect(post.status).toBe(202);
  const events = await readSse(`${sys.apiUrl}/v1/turns/${post.body.turnId as string}/events`, { timeoutMs: 90_000 });
  const final = (await getJson(`${sys.apiUrl}/v1/turns/${post.body.turnId as string}`)).body;
  return { events, final };
}

test.each([
  ['hang', new RegExp(`request timed out after ${CALL_MS} ms`)],
  ['huge', new RegExp(`larger than ${MAX_BYTES} bytes \\(maxMessageBytes\\)`)],
])('a server that misbehaves (%s): a clear failed tool outcome, and the turn finishes', async (tool, why) => {
  const { events, final } = await turn(`misbehave ${tool}`);
  expect(events.at(-1)?.event).toBe('done');
  const notice = events.find((e) => e.event === 'notice' && e.data.code === 'tool_outcome_unknown');
  expect(notice?.data).toMatchObject({ server: 'bad', tool });
  expect(notice?.data.message).toMatch(why);
  expect(final).toMatchObject({ status: 'completed', toolCalls: [{ name: `bad__${tool}`, isError: true }] });
  expect(final.text).toMatch(why);
  // The same server still answers on the same worker.
  const ok = await turn('misbehave ok');
  expect(ok.final).toMatchObject({ status: 'completed', toolCalls: [{ name: 'bad__ok', isError: false }] });
  expect(ok.final.text).toBe('tool said: ok');
}, 180_000);
