import { mayReadResource, mayReadServer, readableResources, readArguments, renderListing, resourceReadNotice, LIST_RESOURCES_REF, READ_RESOURCE_REF } from '../../src/core/adaptive-context';
import { decideTool } from '../../src/core/policy';
import { PolicySchema } from '../../src/config/policy';
import { HostConfigSchema } from '../../src/config/host-schema';
import type { Policy } from '../../src/shared/policy';
import type { UserContext } from '../../src/shared/user';

/** Adaptive context's pure parts (docs/decisions/0036): who may read what, the listing, the trace. */
const POLICY: Policy = {
  roles: {
    member: { servers: { docs: { tools: '*', resources: '*' }, billing: { tools: [], resources: ['billing://invoices/*', 'billing://terms'] }, crm: { tools: '*' } } },
    admin: { servers: { '*': { tools: '*', resources: '*' } } },
  },
  toolScopes: {},
};
const user = (role: string): UserContext => ({ id: `u-${role}`, role, tenant: 't', scopes: [] });

test("a role's readable resources come from its server rules' `resources`; none without", () => {
  const member = readableResources(POLICY, user('member'));
  expect(member).toEqual({ docs: '*', billing: ['billing://invoices/*', 'billing://terms'] });
  expect(mayReadResource(member, 'docs', 'docs://anything')).toBe(true);
  expect(mayReadResource(member, 'billing', 'billing://invoices/1042')).toBe(true);
  expect(mayReadResource(member, 'billing', 'billing://terms')).toBe(true);
  expect(mayReadResource(member, 'billing', 'billing://terms/old')).toBe(false);
  expect(mayReadResource(member, 'billing', 'billing://secrets')).toBe(false);
  // A rule without `resources` gives none; an unknown role and a missing set give none.
  expect(mayReadResource(member, 'crm', 'crm://contacts')).toBe(false);
  expect(mayReadServer(member, 'crm')).toBe(false);
  expect(readableResources(POLICY, user('guest'))).toEqual({});
  expect(mayReadResource(undefined, 'docs', 'docs://x')).toBe(false);
  // `*` as the server covers every server but the host's own.
  const admin = readableResources(POLICY, user('admin'));
  expect(mayReadResource(admin, 'payments', 'payments://ledger')).toBe(true);
  expect(mayReadServer(admin, 'host')).toBe(false);
});

test("the host's resource tools are allowed to any role with a rule; unknown host tools are not", () => {
  expect(decideTool(POLICY, user('member'), 'host', LIST_RESOURCES_REF.tool)).toEqual({ allowed: true, needsApproval: false });
  expect(decideTool(POLICY, user('member'), 'host', READ_RESOURCE_REF.tool)).toEqual({ allowed: true, needsApproval: false });
  expect(decideTool(POLICY, user('member'), 'host', 'write_resource')).toEqual({ allowed: false, reason: 'the host has no tool write_resource' });
  expect(decideTool(POLICY, user('guest'), 'host', READ_RESOURCE_REF.tool).allowed).toBe(false);
});

test('the listing: one line each, at most max, saying what was left out and what could not be listed', () => {
  const listed = [1, 2, 3].map((i) => ({ server: 'docs', uri: `docs://${i}`, name: `doc ${i}` }));
  expect(renderListing(listed, 2, ['billing'])).toBe(
    '3 resources you may read with host__read_resource:\n- docs docs://1: doc 1\n- docs docs://2: doc 2\n(1 more not shown: list one server at a time)\n(not listed: billing unavailable)',
  );
  expect(renderListing([], 2, [])).toBe('There are no resources you may read.');
  expect(renderListing([], 2, ['docs'])).toBe('No resource could be listed (docs unavailable).');
});

test("a read's arguments are checked, and its notice says what was read and why", () => {
  expect(readArguments({ server: 'docs' })).toEqual({ error: expect.stringMatching(/needs "server" and "uri"/) });
  expect(readArguments({ server: 'docs', uri: 'docs://1' })).toEqual({ server: 'docs', uri: 'docs://1', reason: 'not given' });
  expect(resourceReadNotice(READ_RESOURCE_REF, { server: 'docs', uri: 'docs://1', reason: 'terms' }, { isError: false }, 'c1')).toEqual({
    code: 'context_chosen',
    message: 'Context: docs://1 from docs (model: terms)',
    toolCallId: 'c1',
    pieces: [{ kind: 'resource', server: 'docs', ref: 'docs://1', because: 'model: terms', read: true }],
  });
  expect(resourceReadNotice(LIST_RESOURCES_REF, {}, { isError: false }, 'c0')).toBeUndefined();
  expect(resourceReadNotice({ name: 'docs__read', server: 'docs', tool: 'read_resource' }, { server: 'docs', uri: 'x' }, { isError: false }, 'c2')).toBeUndefined();
});

test('config: the policy validates `resources`, the host config `adaptiveContext`', () => {
  const bad = PolicySchema.safeParse({ roles: { member: { servers: { docs: { tools: '*', resources: ['docs://*/x'] } } } } });
  expect(bad.success).toBe(false);
  expect(JSON.stringify(bad.error?.issues)).toMatch(/prefix ending in/);
  expect(PolicySchema.safeParse({ roles: { member: { servers: { docs: { tools: '*', resources: 'all' } } } } }).success).toBe(false);
  expect(PolicySchema.parse({ roles: { member: { servers: { docs: { tools: [], resources: ['docs://*'] } } } } }).roles['member']?.servers['docs']?.resources).toEqual(['docs://*']);
  expect(HostConfigSchema.parse({}).adaptiveContext).toEqual({ enabled: false, maxListed: 50, maxResourceChars: 8_000 });
  expect(HostConfigSchema.parse({ adaptiveContext: { enabled: true } }).adaptiveContext.enabled).toBe(true);
  expect(HostConfigSchema.safeParse({ adaptiveContext: { enabled: 'yes' } }).success).toBe(false);
  expect(HostConfigSchema.safeParse({ adaptiveContext: { enabled: true, maxResourceChars: 10 } }).success).toBe(false);
  expect(HostConfigSchema.safeParse({ adaptiveContext: { enabled: true, extra: 1 } }).success).toBe(false);
});
