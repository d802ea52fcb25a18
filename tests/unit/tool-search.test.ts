import { HostConfigSchema } from '../../src/config/host-schema';
import { decideTool } from '../../src/core/policy';
import { DEFAULT_TOOL_SEARCH, firstSet, offeredTools, searchTools, SEARCH_TOOL_REF, toolsMetInTurn } from '../../src/core/tool-search';
import type { Policy } from '../../src/shared/policy';
import type { CatalogTool } from '../../src/shared/tool-types';
import type { ChatMessage } from '../../src/shared/turn';

const tool = (server: string, name: string, description?: string): CatalogTool => ({ name: `${server}__${name}`, server, tool: name, inputSchema: { type: 'object' }, ...(description ? { description } : {}) });
const TOOLS = [
  tool('billing', 'create_invoice', 'Creates an invoice for a customer.'),
  tool('billing', 'refund_payment', 'Refunds a payment.'),
  tool('crm', 'getContact', 'Reads a contact of the CRM.'),
  tool('shipping', 'list_parcels', 'Lists parcels in transit.'),
];
const search = (name: string, found: string[]) => ({ id: `s-${name}`, name: SEARCH_TOOL_REF.name, arguments: JSON.stringify({ query: name, found }) });

describe('searchTools', () => {
  test('ranks names over servers over descriptions, folds plurals and verb endings, keeps catalog order on ties', () => {
    expect(searchTools('refund the payments', TOOLS, 5).map((t) => t.tool)).toEqual(['refund_payment']);
    expect(searchTools('parcel', TOOLS, 5).map((t) => t.tool)).toEqual(['list_parcels']);
    expect(searchTools('contact', TOOLS, 5).map((t) => t.tool)).toEqual(['getContact']);
    // "billing" names the server of two tools: both, in catalog order; the limit cuts.
    expect(searchTools('billing', TOOLS, 5).map((t) => t.tool)).toEqual(['create_invoice', 'refund_payment']);
    expect(searchTools('billing', TOOLS, 1).map((t) => t.tool)).toEqual(['create_invoice']);
  });

  test('a query without words, or matching nothing, finds nothing', () => {
    expect(searchTools('', TOOLS, 5)).toEqual([]);
    expect(searchTools('?!', TOOLS, 5)).toEqual([]);
    expect(searchTools('weather forecast', TOOLS, 5)).toEqual([]);
  });
});

describe('the offered tools', () => {
  const visible = [...TOOLS.map((t) => t.name), SEARCH_TOOL_REF.name];
  const settings = { threshold: 2, offered: 1, results: 3 };
  const first = (c: readonly string[]) => firstSet(c, new Map(), settings.offered);

  test('at most the threshold: every tool, without the search tool', () => {
    const few = offeredTools({ visible, settings: { ...settings, threshold: 4 }, first, messages: [] });
    expect(few).toEqual({ names: TOOLS.map((t) => t.name), searching: false });
  });

  test('past it: the search tool, the first set, then what the turn found or called, in that order', () => {
    const messages: ChatMessage[] = [
      // An earlier turn's calls are not this turn's.
      { role: 'user', content: 'before' },
      { role: 'assistant', content: null, toolCalls: [{ id: 'old', name: 'crm__getContact', arguments: '{}' }] },
      { role: 'user', content: 'now' },
      { role: 'assistant', content: null, toolCalls: [search('ship', ['shipping__list_parcels', 'hidden__tool'])] },
      { role: 'tool', toolCallId: 's-ship', content: 'found' },
      { role: 'assistant', content: null, toolCalls: [{ id: 'c1', name: 'billing__refund_payment', arguments: '{}' }, { id: 'c2', name: 'billing__create_invoice', arguments: '{}' }] },
    ];
    expect(offeredTools({ visible, settings, first, messages })).toEqual({
      names: [SEARCH_TOOL_REF.name, 'billing__create_invoice', 'shipping__list_parcels', 'billing__refund_payment'],
      searching: true,
    });
    // A name that is not visible (a forged `found`, a hidden tool) is never offered.
    expect(toolsMetInTurn(messages, new Set(['shipping__list_parcels']))).toEqual(['shipping__list_parcels']);
  });

  test("the host's resource tools (adaptive context) are always offered, in the prefix, and not counted", () => {
    const host = ['host__list_resources', 'host__read_resource'];
    const withHost = [...TOOLS.map((t) => t.name), SEARCH_TOOL_REF.name, ...host];
    expect(offeredTools({ visible: withHost, settings: { ...settings, threshold: 4 }, first, messages: [] })).toEqual({ names: [...TOOLS.map((t) => t.name), ...host], searching: false });
    expect(offeredTools({ visible: withHost, settings, first, messages: [] })).toEqual({ names: [SEARCH_TOOL_REF.name, ...host, 'billing__create_invoice'], searching: true });
  });

  test('without the search tool among the visible ones (an older catalog), every tool', () => {
    expect(offeredTools({ visible: TOOLS.map((t) => t.name), settings, first, messages: [] }).searching).toBe(false);
  });

  test('the first set: the most used, topped up in catalog order, listed in catalog order', () => {
    const names = TOOLS.map((t) => t.name);
    expect(firstSet(names, new Map([['shipping__list_parcels', 3], ['crm__getContact', 1]]), 3)).toEqual(['billing__create_invoice', 'crm__getContact', 'shipping__list_parcels']);
    expect(firstSet(names, new Map(), 2)).toEqual(['billing__create_invoice', 'billing__refund_payment']);
  });
});

test("policy: the host's search tool for every role with tool access, no other host tool", () => {
  const policy: Policy = { roles: { clerk: { servers: { crm: { tools: ['get*'] } } } }, toolScopes: { '*/*': ['tools'] } };
  const clerk = { id: 'c', role: 'clerk', tenant: 't', scopes: [] };
  expect(decideTool(policy, clerk, 'host', 'search_tools')).toEqual({ allowed: true, needsApproval: false });
  expect(decideTool(policy, clerk, 'host', 'other')).toMatchObject({ allowed: false });
  expect(decideTool(policy, { ...clerk, role: 'nobody' }, 'host', 'search_tools')).toMatchObject({ allowed: false });
});

test('host config: toolSearch defaults and limits', () => {
  expect(HostConfigSchema.parse({}).toolSearch).toEqual(DEFAULT_TOOL_SEARCH);
  expect(HostConfigSchema.parse({ toolSearch: { threshold: 100 } }).toolSearch).toEqual({ ...DEFAULT_TOOL_SEARCH, threshold: 100 });
  expect(HostConfigSchema.safeParse({ toolSearch: { threshold: 10, offered: 20 } }).success).toBe(false);
  expect(HostConfigSchema.safeParse({ toolSearch: { threshold: 0 } }).success).toBe(false);
  expect(HostConfigSchema.safeParse({ toolSearch: { thresold: 10 } }).success).toBe(false);
});
