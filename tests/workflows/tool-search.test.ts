import type { Policy } from '../../src/shared/policy';
import type { UserContext } from '../../src/shared/user';
import { REQUESTS, SERVERS, TOOL_COUNT } from '../helpers/many-tools';
import { startToolSearchRig, type ToolSearchRig } from '../helpers/tool-search-rig';
import { OWNER, STRANGER, turnOptions } from './harness';
import { contextFor } from '../../src/core/intents';

/**
 * Hundreds of tools (docs/decisions/0032): the real turn workflow and the real activities over 12
 * stand-in MCP servers with 300 tools, and a scripted model that searches with the user's words and
 * calls the first tool found. Each of twenty requests finds and calls its tool; the model is offered
 * the search tool and a first set, never the whole catalog; policy bounds what search returns.
 */
jest.setTimeout(300_000);

let rig: ToolSearchRig;

/** Every tool for members; clerks only crm and support. */
const POLICY: Policy = {
  roles: { member: { servers: { '*': { tools: '*' } } }, clerk: { servers: { crm: { tools: '*' }, support: { tools: '*' } } } },
  toolScopes: {},
};
const CLERK: UserContext = { id: 'u-clerk', role: 'clerk', tenant: 't-one', scopes: [] };

beforeAll(async () => {
  rig = await startToolSearchRig();
}, 180_000);
afterAll(async () => {
  await rig?.stop();
});

const runTurn = (label: string, text: string, user: UserContext = OWNER) => rig.runTurn(label, text, user, POLICY);

const perTurn: number[] = [];

test('the stand-ins serve 300 tools over 12 servers', async () => {
  expect(Object.keys(SERVERS)).toHaveLength(12);
  expect(TOOL_COUNT).toBe(300);
  expect((await rig.hub.catalog()).tools).toHaveLength(300);
});

test.each(REQUESTS.map((r, i) => [i + 1, r.text, r] as const))('request %i (%s) finds and calls its tool', async (i, _text, r) => {
  const { state, requests, tokens } = await runTurn(`search-${i}`, r.text);
  expect(state.status).toBe('completed');
  // Searched, then called the right tool, which ran.
  expect(state.toolCalls.map((c) => c.name)).toEqual(['host__search_tools', `${r.server}__${r.tool}`]);
  expect(state.text).toBe(`done: ${r.server}/${r.tool} ran with {"ref":"x"}`);
  // Offered the search tool and a first set, then the tools found appended after them.
  const [first, second] = requests.map((q) => q.tools.map((t) => t.name));
  expect(first?.[0]).toBe('host__search_tools');
  expect(first).toHaveLength(1 + rig.settings.offered);
  expect(second?.slice(0, first?.length)).toEqual(first);
  expect(second).toContain(`${r.server}__${r.tool}`);
  expect(requests.every((q) => q.tools.length < 40)).toBe(true);
  // The caller, whose most used tools lead the list, and the session the step is charged to.
  expect(requests[0]?.caller).toEqual({ id: OWNER.id, tenant: OWNER.tenant, sessionId: expect.any(String) });
  perTurn.push(tokens);
});

test("the caller's most used tools lead the next turn; a new caller gets the catalog's first tools", async () => {
  const again = await runTurn('usage-owner', REQUESTS[0]?.text ?? '');
  const offered = again.requests[0]?.tools.map((t) => t.name) ?? [];
  // Twenty tools used once each: exactly the first set, in catalog order.
  expect(new Set(offered.slice(1))).toEqual(new Set(REQUESTS.map((r) => `${r.server}__${r.tool}`)));
  const fresh = await runTurn('usage-stranger', REQUESTS[0]?.text ?? '', STRANGER);
  const first = (await rig.hub.catalog()).tools.slice(0, rig.settings.offered).map((t) => t.name);
  expect(fresh.requests[0]?.tools.map((t) => t.name)).toEqual(['host__search_tools', ...first]);
});

test('policy decides what search returns: a clerk never hears of billing', async () => {
  const { state, requests } = await runTurn('clerk-refund', 'Please create a refund for order 1042', CLERK);
  expect(state.status).toBe('completed');
  const search = state.toolCalls[0];
  expect(search?.name).toBe('host__search_tools');
  const found = (search?.arguments as { found: string[] }).found;
  expect(found.length).toBeGreaterThan(0);
  expect(found.every((n) => n.startsWith('crm__') || n.startsWith('support__'))).toBe(true);
  expect(search?.result).not.toMatch(/billing/);
  for (const q of requests) expect(q.tools.some((t) => t.name.startsWith('billing__'))).toBe(false);
});

test('tokens per turn: offering all 300 tools against search', async () => {
  rig.settings.threshold = 1_000;
  const all: number[] = [];
  for (const [i, r] of REQUESTS.slice(0, 5).entries()) {
    const { state, requests, tokens } = await runTurn(`all-${i}`, r.text);
    expect(state.toolCalls.map((c) => c.name)).toEqual([`${r.server}__${r.tool}`]);
    expect(requests[0]?.tools).toHaveLength(300);
    all.push(tokens);
  }
  const mean = (xs: number[]) => Math.round(xs.reduce((a, b) => a + b, 0) / xs.length);
  process.stdout.write(`tool tokens per turn: all tools ${mean(all)}, search ${mean(perTurn)} (${perTurn.length} turns)\n`);
  expect(perTurn).toHaveLength(20);
  expect(mean(perTurn) * 4).toBeLessThan(mean(all));
});

test("context by intent: the turn's context_chosen notice says why each piece was read, and whether it could be", async () => {
  const context = contextFor({
    role: OWNER.role,
    text: 'Get the quarterly report',
    byRole: {},
    base: { resources: [{ server: 'docs', uri: 'docs://index' }], prompts: [] },
    intents: [{ name: 'reporting', match: 'report', flags: 'i', resources: [{ server: 'analytics', uri: 'analytics://kpis' }], prompts: [] }],
  });
  const { state } = await rig.runTurn('intent', 'Get the quarterly report', OWNER, POLICY, { options: turnOptions({ context }) });
  const notices = state.events.filter((e) => e.type === 'notice').map((e) => e.data);
  // The stand-ins serve no resources: both reads fail, and the reasons are there all the same.
  expect(notices.filter((n) => n['code'] === 'context_unavailable')).toHaveLength(2);
  expect(notices.find((n) => n['code'] === 'context_chosen')).toEqual({
    code: 'context_chosen',
    message: 'Context: docs://index from docs (default context); analytics://kpis from analytics (intent reporting)',
    pieces: [
      { kind: 'resource', server: 'docs', ref: 'docs://index', because: 'default context', read: false },
      { kind: 'resource', server: 'analytics', ref: 'analytics://kpis', because: 'intent reporting', read: false },
    ],
  });
  // Without a matching rule, no reasons and no notice.
  const plain = await rig.runTurn('no-intent', 'Get the quarterly report', OWNER, POLICY, { options: turnOptions({ context: { resources: [{ server: 'docs', uri: 'docs://index' }], prompts: [] } }) });
  expect(plain.state.events.some((e) => e.data['code'] === 'context_chosen')).toBe(false);
});
