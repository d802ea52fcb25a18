/**
 * A 2026-07-28 MCP server beside the 2025-11-25 ones, through whole turns on real parts (decision
 * 0024): the worker's pool discovers the new server (`protocol` left at `auto`) and speaks its
 * revision; the turn reads its resource as context, calls its tools, and its `input_required` question
 * becomes the turn's question (decision 0011): answered by the owner through the API, the re-issued
 * call carries the answer and the order is placed once. The 2025 servers of the same config (notes and
 * server-everything over stdio) keep working in the same turn. A worker SIGKILLed while a call to the
 * 2026 server is in flight: the next worker sends it again with the same idempotency key, one effect.
 */
import { readFileSync } from 'node:fs';
import type { DemoRules } from '../../src/demo-model/rules';
import { getJson, postJson, postMessage, readSse, waitFor } from '../helpers/http';
import { MENU_TEXT, MENU_URI, startModernServer } from '../helpers/modern-server';
import { EXAMPLE_RULES, startSystem, type TestSystem } from '../helpers/system';

const exampleRules = JSON.parse(readFileSync(EXAMPLE_RULES, 'utf8')) as DemoRules & { scripts: unknown[] };
const rules: DemoRules = {
  ...exampleRules,
  scripts: [
    {
      name: 'both-revisions',
      match: '(?i)^greet (\\w+) and note it',
      steps: [
        {
          toolCalls: [
            { name: 'menu__greet', arguments: { name: '{{match.1}}' } },
            { name: 'notes__add_note', arguments: { text: 'greeted {{match.1}}' } },
          ],
        },
        { text: 'menu: {{tool:menu__greet}} | notes: {{tool:notes__add_note}} | context: {{context:menu://today}}' },
      ],
    },
    {
      name: 'order',
      match: '(?i)^order (\\w+)',
      steps: [{ toolCalls: [{ name: 'menu__order', arguments: { item: '{{match.1}}' } }] }, { text: 'menu said: {{tool:menu__order}}' }],
    },
    {
      name: 'brew',
      match: '(?i)^brew (\\w+)',
      steps: [{ toolCalls: [{ name: 'menu__brew', arguments: { drink: '{{match.1}}' } }] }, { text: 'menu said: {{tool:menu__brew}}' }],
    },
    ...(exampleRules.scripts as NonNullable<DemoRules['scripts']>),
  ],
};

let menu: Awaited<ReturnType<typeof startModernServer>>;
let sys: TestSystem;

beforeAll(async () => {
  menu = await startModernServer();
  sys = await startSystem({
    rules,
    extraServers: { menu: { url: menu.url, description: 'A 2026-07-28 server (protocol: auto)', honoursIdempotencyKey: true } },
    host: { context: { resources: [{ server: 'menu', uri: MENU_URI }], prompts: [] } },
  });
}, 120_000);

afterAll(async () => {
  await sys?.stop();
  await menu?.close();
});

test('one turn: the 2026-07-28 server’s resource as context and its tool, a 2025 server’s tool beside it', async () => {
  const post = await postMessage(sys.apiUrl, 'rev-both', 'greet Ada and note it');
  expect(post.status).toBe(202);
  const events = await readSse(`${sys.apiUrl}${post.body.eventsUrl as string}`, { timeoutMs: 90_000 });
  expect(events.at(-1)?.event).toBe('done');
  const text = (await getJson(`${sys.apiUrl}/v1/turns/${post.body.turnId}`)).body.text as string;
  expect(text).toContain('menu: Hello, Ada, from a 2026-07-28 server.');
  expect(text).toContain('notes: ');
  expect(text).toContain('greeted Ada');
  expect(text).toContain(MENU_TEXT);
  // The worker spoke 2026-07-28 to it, never 2025 (no initialize, no legacy request).
  expect(menu.state.eras.length).toBeGreaterThan(0);
  expect(menu.state.eras.filter((e) => !e.startsWith('modern'))).toEqual([]);
  // The catalog lists both revisions' servers as connected.
  const tools = (await getJson(`${sys.apiUrl}/v1/tools`)).body as { servers: Array<{ server: string; state: string }> };
  expect(tools.servers.filter((s) => ['menu', 'notes', 'everything'].includes(s.server)).map((s) => s.state)).toEqual(['connected', 'connected', 'connected']);
});

test("the server's input_required question is the turn's question; the owner's answer places the order once", async () => {
  const before = menu.state.orders.size;
  const post = await postMessage(sys.apiUrl, 'rev-order', 'order soup');
  const eventsUrl = `${sys.apiUrl}/v1/turns/${post.body.turnId}/events`;
  const seen = await readSse(eventsUrl, { stopAfter: (e) => e.event === 'input_required', timeoutMs: 90_000 });
  const asked = seen.find((e) => e.event === 'input_required')?.data;
  expect(asked).toMatchObject({ server: 'menu', name: 'menu__order', message: 'Which size of soup?' });
  expect((asked?.requestedSchema as { required: string[] }).required).toEqual(['size']);
  expect(menu.state.orders.size).toBe(before);

  const answerUrl = `${sys.apiUrl}/v1/turns/${post.body.turnId}/inputs/${String(asked?.toolCallId)}`;
  // Checked against the server's schema before the turn hears it.
  expect((await postJson(answerUrl, { action: 'accept', content: { size: 'huge' } })).status).toBe(400);
  expect((await postJson(answerUrl, { action: 'accept', content: { size: 'large' } })).status).toBe(200);

  const all = await readSse(eventsUrl, { timeoutMs: 90_000 });
  expect(all.at(-1)?.event).toBe('done');
  const text = (await getJson(`${sys.apiUrl}/v1/turns/${post.body.turnId}`)).body.text as string;
  expect(text).toMatch(/^menu said: Ordered a large soup \(order \d+\)\.$/);
  expect(menu.state.orders.size).toBe(before + 1);
  expect([...menu.state.orders.values()].filter((o) => o.item === 'soup')).toEqual([{ item: 'soup', size: 'large' }]);
});

test("a worker SIGKILLed while the 2026-07-28 server's question waits: the owner's answer, given to the next worker, places the order once", async () => {
  const before = menu.state.orders.size;
  const post = await postMessage(sys.apiUrl, 'rev-order-kill', 'order pie');
  const eventsUrl = `${sys.apiUrl}/v1/turns/${post.body.turnId}/events`;
  const seen = await readSse(eventsUrl, { stopAfter: (e) => e.event === 'input_required', timeoutMs: 90_000 });
  const asked = seen.find((e) => e.event === 'input_required')?.data;
  expect(asked).toMatchObject({ server: 'menu', message: 'Which size of pie?' });
  // The question is held by the call in flight (decision 0043); its worker dies with it.
  await sys.worker.kill();
  sys.worker = await sys.startWorker();
  const answerUrl = `${sys.apiUrl}/v1/turns/${post.body.turnId}/inputs/${String(asked?.toolCallId)}`;
  const answered = await postJson(answerUrl, { action: 'accept', content: { size: 'small' } });
  expect(`${answered.status} ${JSON.stringify(answered.body)}`).toMatch(/^200 /);

  const all = await readSse(eventsUrl, { timeoutMs: 150_000 });
  expect(all.at(-1)?.event).toBe('done');
  // Shown once and answered once, whichever worker took the answer to the server.
  expect(all.filter((e) => e.event === 'input_required')).toHaveLength(1);
  expect(all.filter((e) => e.event === 'input_provided')).toHaveLength(1);
  expect((await getJson(`${sys.apiUrl}/v1/turns/${post.body.turnId}`)).body.text).toMatch(/^menu said: Ordered a small pie \(order \d+\)\.$/);
  expect(menu.state.orders.size).toBe(before + 1);
  expect([...menu.state.orders.values()].filter((o) => o.item === 'pie')).toEqual([{ item: 'pie', size: 'small' }]);
}, 240_000);

test('a worker SIGKILLed mid-call on the 2026-07-28 server: the next worker calls again with the same key, one drink', async () => {
  menu.state.brewMs = 4_000;
  const callsBefore = menu.state.brewCalls;
  const post = await postMessage(sys.apiUrl, 'rev-kill', 'brew tea');
  expect(post.status).toBe(202);
  // The call reached the server: the worker dies while it is in flight.
  await waitFor(async () => (menu.state.brewCalls > callsBefore ? true : undefined), 60_000);
  await sys.worker.kill();
  sys.worker = await sys.startWorker();

  const events = await readSse(`${sys.apiUrl}/v1/turns/${post.body.turnId}/events`, { timeoutMs: 150_000 });
  expect(events.at(-1)?.event).toBe('done');
  expect((await getJson(`${sys.apiUrl}/v1/turns/${post.body.turnId}`)).body.text).toBe('menu said: Brewed tea.');
  // Sent twice (once by each worker), applied once: the server dedupes on the call's idempotency key.
  expect(menu.state.brewCalls - callsBefore).toBe(2);
  const keys = [...menu.state.brews.entries()].filter(([, drink]) => drink === 'tea').map(([key]) => key);
  expect(keys).toHaveLength(1);
  expect(keys[0]).toMatch(new RegExp(`^${post.body.turnId}/step-1/call_`));
}, 240_000);
