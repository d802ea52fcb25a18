import { comparable, contextOf, PATTERNS, promptTokens } from '../../bench/lib/context-strategies';

/** The bench's context section (bench/lib/context-strategies.ts): what each strategy gathers, and how answers and tokens are compared. */

const uris = (strategy: 'role' | 'intent' | 'adaptive', i: number) => contextOf(strategy, PATTERNS[i]?.as ?? '', PATTERNS[i]?.text ?? '').resources.map((r) => r.uri);

test('role gathers what examples/host.json gives the role, intent what the message asks for, adaptive nothing', () => {
  expect(uris('role', 0)).toEqual(['admin://system_status', 'payments://revenue_summary', 'admin://classes', 'notes://all']);
  expect(contextOf('role', 'admin', 'anything').prompts.map((p) => p.name)).toEqual(['admin_persona']);
  expect(uris('role', 4)).toEqual(['teacher://my_classes', 'teacher://my_timetable', 'notes://all']);
  expect(uris('intent', 0)).toEqual(['admin://system_status']);
  expect(uris('intent', 1)).toEqual([]);
  expect(uris('intent', 3)).toEqual(['admin://system_status', 'payments://revenue_summary', 'admin://classes']);
  expect(contextOf('intent', 'admin', 'How many students?').resources[0]?.because).toBe('intent counts');
  for (const i of PATTERNS.keys()) expect(contextOf('adaptive', PATTERNS[i]?.as ?? '', PATTERNS[i]?.text ?? '')).toEqual({ resources: [], prompts: [] });
});

test('answers compare without generated ids and times, and with everything else', () => {
  const a = 'Charged 250.00 EUR for invoice INV-1001: transaction TX-E7DDAF526D at 2026-11-26T03:57:01.123Z, id 0b7c1e4a-1f2d-4c3b-9a8e-1234567890ab';
  const b = 'Charged 250.00 EUR for invoice INV-1001: transaction TX-6C357A8060 at 2026-11-26T04:00:00Z, id 9f7c1e4a-1f2d-4c3b-9a8e-1234567890cd';
  expect(comparable(a)).toBe(comparable(b));
  expect(comparable(a)).not.toBe(comparable(b.replace('250.00', '25.00')));
  expect(comparable(a)).not.toBe(comparable(a.replace('INV-1001', 'INV-1002')));
  expect(comparable('Added teacher Alice Johnson')).toBe('Added teacher Alice Johnson');
});

test('a request counts all of its body, tools included, at JSON characters / 4', () => {
  const body = { model: 'demo-model', messages: [{ role: 'user', content: 'x'.repeat(100) }], tools: [] };
  expect(promptTokens(body)).toBe(Math.ceil(JSON.stringify(body).length / 4));
  expect(promptTokens({ ...body, tools: [{ type: 'function', function: { name: 'a'.repeat(400) } }] })).toBeGreaterThan(promptTokens(body) + 100);
});
