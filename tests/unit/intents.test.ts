import { HostConfigSchema } from '../../src/config/host-schema';
import { crossCheck } from '../../src/config/cross-check';
import { contextFor, contextReasons, type IntentRule } from '../../src/core/intents';
import type { ContextSpec } from '../../src/shared/turn';

const base: ContextSpec = { resources: [{ server: 'notes', uri: 'notes://all' }], prompts: [] };
const byRole: Record<string, ContextSpec> = { accountant: { resources: [{ server: 'payments', uri: 'payments://summary' }], prompts: [] } };
const intents: IntentRule[] = [
  {
    name: 'financial-report',
    match: '\\b(financial|finance) report\\b',
    flags: 'i',
    resources: [{ server: 'payments', uri: 'payments://invoices' }, { server: 'payments', uri: 'payments://summary' }, { server: 'payments', uri: 'payments://aging' }],
    prompts: [{ server: 'payments', name: 'report_style', arguments: { tone: 'brief' } }],
  },
  { name: 'notes', match: 'my notes', flags: 'i', resources: [{ server: 'notes', uri: 'notes://all' }], prompts: [] },
];

test('no intent matches: the role context (or the default) as before, without reasons', () => {
  expect(contextFor({ role: 'accountant', text: 'hello', byRole, base, intents })).toBe(byRole['accountant']);
  expect(contextFor({ role: 'clerk', text: 'hello', byRole, base, intents })).toBe(base);
  // A role named like an object's own property is no role rule.
  expect(contextFor({ role: 'constructor', text: 'hello', byRole, base, intents })).toBe(base);
  expect(contextReasons(base)).toEqual([]);
});

test('a matching intent adds its resources and prompts after the role, each once, each with its reason', () => {
  const spec = contextFor({ role: 'accountant', text: 'Please prepare the Financial Report for May', byRole, base, intents });
  expect(spec).toEqual({
    resources: [
      { server: 'payments', uri: 'payments://summary', because: 'role accountant' },
      { server: 'payments', uri: 'payments://invoices', because: 'intent financial-report' },
      { server: 'payments', uri: 'payments://aging', because: 'intent financial-report' },
    ],
    prompts: [{ server: 'payments', name: 'report_style', arguments: { tone: 'brief' }, because: 'intent financial-report' }],
  });
  expect(contextReasons(spec).map((r) => `${r.kind} ${r.ref}: ${r.because}`)).toEqual([
    'resource payments://summary: role accountant',
    'resource payments://invoices: intent financial-report',
    'resource payments://aging: intent financial-report',
    'prompt report_style: intent financial-report',
  ]);
  const notes = contextFor({ role: 'clerk', text: 'what is in MY NOTES', byRole, base, intents });
  expect(notes.resources).toEqual([{ server: 'notes', uri: 'notes://all', because: 'default context' }]);
});

test('host config: intents are validated (name, pattern, flags, no unknown keys)', () => {
  const parsed = HostConfigSchema.parse({ intents: [{ name: 'notes', match: 'my notes', resources: [{ server: 'notes', uri: 'notes://all' }] }] });
  expect(parsed.intents).toEqual([{ name: 'notes', match: 'my notes', flags: 'i', resources: [{ server: 'notes', uri: 'notes://all' }], prompts: [] }]);
  expect(HostConfigSchema.parse({}).intents).toEqual([]);
  const issues = (intent: Record<string, unknown>) => {
    const r = HostConfigSchema.safeParse({ intents: [{ name: 'x', match: 'y', ...intent }] });
    return r.success ? [] : r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
  };
  expect(issues({ match: '(unclosed' })[0]).toMatch(/^intents\.0\.match: not a regular expression/);
  expect(issues({ flags: 'g' })[0]).toMatch(/^intents\.0\.flags: flags from i, m, s, u/);
  expect(issues({ name: 'has space' })[0]).toMatch(/^intents\.0\.name:/);
  expect(issues({ context: [] })[0]).toMatch(/^intents\.0: /);
  expect(issues({})).toEqual([]);
});

test('the cross-check names an intent reading from a server that is not configured', () => {
  const problems = crossCheck({ servers: ['notes'], host: { context: base, contextByRole: {}, intents }, policy: { roles: {}, toolScopes: {} }, hostSource: 'host.json', policySource: 'policy.json' });
  expect(problems).toHaveLength(4);
  expect(problems[0]).toBe('host.json: intents[0] (financial-report).resources[0]: server "payments" (payments://invoices) is not configured (configured servers: notes)');
});
