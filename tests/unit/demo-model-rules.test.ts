import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  answer,
  compilePattern,
  DemoRulesError,
  parseDemoRules,
  type ChatMessageLike,
  type DemoAnswer,
  type DemoRules,
} from '../../src/demo-model/rules';
import { demoSuggestions, loadRulesFile } from '../../src/demo-model/rules-file';

const rules = parseDemoRules({
  fallback: '(demo model) nothing scripted',
  scripts: [
    {
      name: 'notes',
      match: '(?i)remember that (.+)',
      steps: [
        {
          toolCalls: [
            { name: 'notes__add_note', arguments: { text: '{{match.1}}' } },
            { name: 'everything__echo', arguments: { message: 'saved {{match.1}}' } },
          ],
        },
        { text: 'Saved. notes: {{result.0}} / echo: {{result.1}} / last: {{result.last}}' },
      ],
    },
    {
      name: 'invoice',
      match: 'invoice for (\\w+) of (\\d+)',
      steps: [
        { toolCalls: [{ name: 'billing__create', arguments: { customer: '{{match.1}}', amount: '{{number:match.2}}' } }] },
        {
          text: 'Sending invoice {{json:result.0:invoice.id}}',
          toolCalls: [
            {
              name: 'billing__send',
              arguments: { id: '{{json:result.0:invoice.id}}', lines: ['{{json:tool:billing__create:invoice.lines.0}}'] },
            },
          ],
        },
        { text: 'Sent: {{tool:billing__send}} (created: {{tool:billing__create}})' },
      ],
    },
    {
      name: 'context',
      match: '^context$',
      steps: [{ text: 'user={{user}} system={{system}} whole={{match.0}}' }],
    },
    {
      name: 'broken-args',
      match: '^broken$',
      steps: [{ toolCalls: [{ name: 'does_not_exist', rawArguments: '{"oops": ' }] }, { text: 'ok' }],
    },
    {
      name: 'markers',
      match: '^markers( x)?$',
      steps: [
        {
          text: 'a={{result.3}} b={{match.1}} c={{tool:nope}} d={{json:user:x}} e={{number:user}}',
          toolCalls: [{ name: 't', arguments: { n: '{{number:user}}', nested: { deep: ['{{result.last}}'] }, keep: 7 } }],
        },
      ],
    },
  ],
});

const user = (content: string): ChatMessageLike => ({ role: 'user', content });
const toolMsg = (id: string, content: string): ChatMessageLike => ({ role: 'tool', tool_call_id: id, content });
function assistantCalls(reply: DemoAnswer): ChatMessageLike {
  if (!reply.ok) throw new Error(reply.message);
  return {
    role: 'assistant',
    content: reply.text,
    tool_calls: reply.toolCalls.map((c) => ({ id: c.id, function: { name: c.name, arguments: c.arguments } })),
  };
}
function ok(reply: DemoAnswer): Extract<DemoAnswer, { ok: true }> {
  if (!reply.ok) throw new Error(`expected an answer, got ${reply.message}`);
  return reply;
}

describe('demo model rules: validation', () => {
  function issuesOf(input: unknown): string[] {
    try {
      parseDemoRules(input);
    } catch (err) {
      if (err instanceof DemoRulesError) return err.issues;
      throw err;
    }
    throw new Error('expected the rules to be rejected');
  }

  it('fills defaults', () => {
    const r = parseDemoRules({});
    expect(r.model).toBe('demo-model');
    expect(r.fallback.startsWith('(demo model)')).toBe(true);
    expect(r.scripts).toEqual([]);
  });

  it('names the bad field by path', () => {
    expect(issuesOf({ scripts: [{ name: 'x', match: '(unclosed', steps: [{ text: 'hi' }] }] })).toEqual([
      expect.stringMatching(/^scripts\[0\]\.match: invalid regular expression/),
    ]);
    expect(issuesOf({ scripts: [{ name: 'x', match: 'a', steps: [{}] }] })).toEqual([
      expect.stringMatching(/^scripts\[0\]\.steps\[0\]: a step needs text, toolCalls, or both/),
    ]);
    expect(issuesOf({ scripts: [{ name: 'x', match: 'a', steps: [] }] })[0]).toMatch(/^scripts\[0\]\.steps:/);
    expect(issuesOf({ model: 3 })[0]).toMatch(/^model:/);
  });

  it('rejects unknown templates and missing capture groups at load time', () => {
    const issues = issuesOf({
      scripts: [
        {
          name: 'x',
          match: 'a(b)',
          steps: [{ text: '{{reslt.0}}', toolCalls: [{ name: 't', arguments: { deep: [{ v: '{{match.2}}' }] } }] }],
        },
      ],
    });
    expect(issues).toEqual([
      'scripts[0].steps[0].text: unknown template {{reslt.0}}',
      expect.stringMatching(/^scripts\[0\]\.steps\[0\]\.toolCalls\[0\]\.arguments\.deep\[0\]\.v: \{\{match\.2\}\} refers to a capture group/),
    ]);
  });

  it('rejects duplicate names, stateful flags and arguments given twice', () => {
    const step = [{ text: 'x' }];
    expect(issuesOf({ scripts: [{ name: 'a', match: 'a', steps: step }, { name: 'a', match: 'b', steps: step }] })).toEqual([
      "scripts[1].name: duplicate script name 'a'",
    ]);
    expect(issuesOf({ scripts: [{ name: 'a', match: 'a', flags: 'g', steps: step }] })[0]).toMatch(/unsupported regex flag 'g'/);
    expect(
      issuesOf({ scripts: [{ name: 'a', match: 'a', steps: [{ toolCalls: [{ name: 't', arguments: {}, rawArguments: '{}' }] }] }] })[0],
    ).toMatch(/either arguments or rawArguments/);
  });

  it('supports inline (?i) and explicit flags', () => {
    expect(compilePattern('(?i)hello').test('HeLLo')).toBe(true);
    expect(compilePattern('hello').test('HELLO')).toBe(false);
    expect(compilePattern('a.b', 's').test('a\nb')).toBe(true);
    expect(compilePattern('(?is)a.b').flags).toBe('is');
  });
});

describe('demo model rules: answering', () => {
  it('answers the fallback when nothing matches or there is no user message', () => {
    expect(answer(rules, [user('what is the weather')])).toEqual({
      ok: true,
      script: null,
      step: 0,
      text: '(demo model) nothing scripted',
      toolCalls: [],
      finishReason: 'stop',
    });
    expect(ok(answer(rules, [{ role: 'system', content: 'be nice' }])).script).toBeNull();
  });

  it('walks a script: parallel tool calls, then a text answer built from the results', () => {
    const convo: ChatMessageLike[] = [{ role: 'system', content: 'sys' }, user('Please REMEMBER THAT milk is low')];
    const step0 = ok(answer(rules, convo));
    expect(step0.script).toBe('notes');
    expect(step0.step).toBe(0);
    expect(step0.finishReason).toBe('tool_calls');
    expect(step0.text).toBeNull();
    expect(step0.toolCalls.map((c) => [c.name, JSON.parse(c.arguments)])).toEqual([
      ['notes__add_note', { text: 'milk is low' }],
      ['everything__echo', { message: 'saved milk is low' }],
    ]);
    const [a, b] = step0.toolCalls;
    if (!a || !b) throw new Error('two calls expected');
    expect(a.id).toMatch(/^call_[0-9a-f]{8}_0_0$/);
    expect(b.id).toMatch(/^call_[0-9a-f]{8}_0_1$/);

    convo.push(assistantCalls(step0), toolMsg(a.id, 'note 1 added'), toolMsg(b.id, 'Echo: saved milk is low'));
    const step1 = ok(answer(rules, convo));
    expect(step1).toMatchObject({ script: 'notes', step: 1, toolCalls: [], finishReason: 'stop' });
    expect(step1.text).toBe('Saved. notes: note 1 added / echo: Echo: saved milk is low / last: Echo: saved milk is low');

    // Text-only assistant turns do not advance the script; only another tool round does.
    convo.push({ role: 'assistant', content: step1.text });
    expect(ok(answer(rules, convo)).step).toBe(1);
    convo.push(
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_x', function: { name: 'x', arguments: '{}' } }] },
      toolMsg('call_x', 'more'),
    );
    expect(answer(rules, convo)).toEqual({
      ok: false,
      code: 'script_exhausted',
      message: "demo model: script 'notes' has no step 2",
      script: 'notes',
      step: 2,
    });
  });

  it('only counts tool rounds after the last user message, and ids differ between turns', () => {
    const first = ok(answer(rules, [user('remember that a')]));
    const convo: ChatMessageLike[] = [
      user('remember that a'),
      assistantCalls(first),
      toolMsg(first.toolCalls[0]?.id ?? '', 'old result'),
      { role: 'assistant', content: 'done' },
      user('remember that b'),
    ];
    const again = ok(answer(rules, convo));
    expect(again.step).toBe(0);
    expect(JSON.parse(again.toolCalls[0]?.arguments ?? '')).toEqual({ text: 'b' });
    expect(again.toolCalls[0]?.id).not.toBe(first.toolCalls[0]?.id);
  });

  it('is deterministic: the same request yields the same ids', () => {
    const convo = [user('remember that x')];
    expect(answer(rules, convo)).toEqual(answer(rules, structuredClone(convo)));
  });

  it('threads JSON fields and typed numbers between steps', () => {
    const convo: ChatMessageLike[] = [user('invoice for acme of 120')];
    const s0 = ok(answer(rules, convo));
    expect(JSON.parse(s0.toolCalls[0]?.arguments ?? '')).toEqual({ customer: 'acme', amount: 120 });

    const created = JSON.stringify({ invoice: { id: 42, lines: ['widget'] } });
    convo.push(assistantCalls(s0), toolMsg(s0.toolCalls[0]?.id ?? '', created));
    const s1 = ok(answer(rules, convo));
    expect(s1.text).toBe('Sending invoice 42');
    expect(s1.finishReason).toBe('tool_calls');
    // A whole-value json: template keeps the JSON type (number 42, not "42").
    expect(JSON.parse(s1.toolCalls[0]?.arguments ?? '')).toEqual({ id: 42, lines: ['widget'] });
    expect(s1.toolCalls[0]?.id).toMatch(/_1_0$/);

    convo.push(assistantCalls(s1), toolMsg(s1.toolCalls[0]?.id ?? '', 'sent!'));
    expect(ok(answer(rules, convo)).text).toBe(`Sent: sent! (created: ${created})`);
  });

  it('exposes the user and system messages, including content-part arrays', () => {
    const reply = ok(
      answer(rules, [
        { role: 'system', content: [{ type: 'text', text: 'be ' }, { type: 'text', text: 'brief' }] },
        { role: 'system', content: 'second system ignored' },
        { role: 'user', content: [{ type: 'text', text: 'context' }] },
      ]),
    );
    expect(reply.text).toBe('user=context system=be brief whole=context');
    expect(ok(answer(rules, [user('context')])).text).toBe('user=context system= whole=context');
  });

  it('renders unresolvable templates as visible markers instead of throwing', () => {
    const reply = ok(answer(rules, [user('markers')]));
    expect(reply.text).toBe(
      'a=<missing result.3> b=<missing match.1> c=<missing tool:nope> d=<missing json:user:x> e=<missing number:user>',
    );
    expect(JSON.parse(reply.toolCalls[0]?.arguments ?? '')).toEqual({
      n: '<missing number:user>',
      nested: { deep: ['<missing result.last>'] },
      keep: 7,
    });
  });

  it('sends rawArguments verbatim and any tool name, known or not', () => {
    const reply = ok(answer(rules, [user('broken')]));
    expect(reply.toolCalls).toEqual([{ id: expect.stringMatching(/^call_/), name: 'does_not_exist', arguments: '{"oops": ' }]);
  });
});

describe('demo model rules: the example rules file', () => {
  const file = join(__dirname, '../../examples/demo-model/rules.json');
  const example = loadRulesFile(file);

  function firstStep(text: string) {
    return ok(answer(example, [user(text)]));
  }

  it('loads and uses the demo model naming', () => {
    expect(example.model).toBe('demo-model');
    expect(example.fallback.startsWith('(demo model)')).toBe(true);
  });

  it.each([
    ['hello', 'hello', []],
    ['Hi there', 'hello', []],
    ['remember that the milk is low.', 'remember', [['notes__add_note', { text: 'the milk is low' }], ['everything__echo', { message: 'saved: the milk is low' }]]],
    ['list notes', 'list-notes', [['notes__list_notes', {}]]],
    ['What are my notes?', 'list-notes', [['notes__list_notes', {}]]],
    ['add 2 and 3', 'add', [['everything__get-sum', { a: 2, b: 3 }]]],
    ['please add 2.5 + -1', 'add', [['everything__get-sum', { a: 2.5, b: -1 }]]],
    ['echo hi there', 'echo', [['everything__echo', { message: 'hi there' }]]],
    ['tell me a joke', null, []],
  ])('%s -> %s', (text, script, calls) => {
    const reply = firstStep(text);
    expect(reply.script).toBe(script);
    expect(reply.toolCalls.map((c) => [c.name, JSON.parse(c.arguments)])).toEqual(calls);
  });

  it('finishes the remember script with both results', () => {
    const s0 = firstStep('remember that eggs');
    const [a, b] = s0.toolCalls;
    const s1 = ok(
      answer(example, [user('remember that eggs'), assistantCalls(s0), toolMsg(b?.id ?? '', 'Echo: saved: eggs'), toolMsg(a?.id ?? '', 'added #1')]),
    );
    expect(s1.text).toBe('Done. The notes server said: added #1. The everything server echoed: Echo: saved: eggs');
  });

  it('rejects a broken rules file with the field named', () => {
    const bad: DemoRules = { scripts: [{ name: 'x', match: '[', steps: [{ text: 'y' }] }] };
    const tmp = join(tmpdir(), `demo-rules-${process.pid}.json`);
    writeFileSync(tmp, JSON.stringify(bad));
    expect(() => loadRulesFile(tmp)).toThrow(/scripts\[0\]\.match: invalid regular expression/);
    writeFileSync(tmp, '{ nope');
    expect(() => loadRulesFile(tmp)).toThrow(/is not valid JSON/);
    expect(() => loadRulesFile(`${tmp}.missing`)).toThrow(/cannot read rules file/);
  });

  it('only suggests sentences in the fallback that a script understands', () => {
    const suggestions = [...example.fallback.matchAll(/"([^"]+)"/g)].map((m) => (m[1] ?? '').replace(/<[^>]+>/g, 'x'));
    expect(suggestions.length).toBeGreaterThanOrEqual(5);
    for (const sentence of suggestions) expect(firstStep(sentence).script).not.toBeNull();
  });

  it("offers each script's example as a suggestion, and the example is answered by that very script", () => {
    const offered = demoSuggestions(example);
    expect(offered.length).toBeGreaterThanOrEqual(10);
    expect(offered).toEqual(expect.arrayContaining(['hello', 'list notes', 'ask me for my details']));
    for (const script of example.scripts.filter((s) => s.example !== undefined && s.systemMatch === undefined && s.systemNotMatch === undefined)) {
      expect([script.example, firstStep(script.example ?? '').script]).toEqual([script.example, script.name]);
    }
  });

  it('refuses an example its script does not match', () => {
    expect(() => parseDemoRules({ scripts: [{ name: 'hi', match: '^hello', example: 'goodbye', steps: [{ text: 'hi' }] }] })).toThrow(/scripts\[0\]\.example: "goodbye" does not match/);
  });
});

describe('context templates and system conditions', () => {
  const rules = parseDemoRules({
    scripts: [
      {
        name: 'degraded',
        match: 'pay',
        systemMatch: 'unavailable.*payments',
        steps: [{ text: 'payments down; last known: {{context:payments://revenue_summary}}' }],
      },
      { name: 'normal', match: 'pay', systemNotMatch: 'unavailable.*payments', steps: [{ text: 'total {{json:context:admin://system_status:students}}' }] },
    ],
  });

  test('{{context:URI}} reads a gathered resource; json paths work on it', () => {
    const out = answer(rules, [
      { role: 'system', content: 'You are helpful.' },
      { role: 'system', content: 'Resource admin://system_status from admin:\n{"students":3}' },
      { role: 'user', content: 'pay' },
    ]);
    expect(out).toMatchObject({ ok: true, script: 'normal', text: 'total 3' });
  });

  test('systemMatch selects the degraded script when a server is reported unavailable', () => {
    const out = answer(rules, [
      { role: 'system', content: 'These tool servers are currently unavailable; ...: payments.' },
      { role: 'system', content: 'Resource payments://revenue_summary from payments:\n{"total":100}' },
      { role: 'user', content: 'pay' },
    ]);
    expect(out).toMatchObject({ ok: true, script: 'degraded', text: 'payments down; last known: {"total":100}' });
  });
});

test('json paths map over arrays with *', () => {
  const rules = parseDemoRules({
    scripts: [
      {
        name: 'bulk',
        match: 'go',
        steps: [{ toolCalls: [{ name: 'a__b', arguments: {} }] }, { toolCalls: [{ name: 'c__d', arguments: { to: '{{json:result.0:students.*.email}}' } }] }, { text: 'ok' }],
      },
    ],
  });
  const out = answer(rules, [
    { role: 'user', content: 'go' },
    { role: 'assistant', content: null, tool_calls: [{ id: 'x', function: { name: 'a__b', arguments: '{}' } }] },
    { role: 'tool', tool_call_id: 'x', content: JSON.stringify({ students: [{ email: 'a@x' }, { email: 'b@x' }] }) },
  ]);
  expect(out.ok && JSON.parse(out.toolCalls[0]?.arguments ?? '{}')).toEqual({ to: ['a@x', 'b@x'] });
});

test('onToolError answers as soon as a tool result is an error', () => {
  const rules = parseDemoRules({
    scripts: [{ name: 's', match: 'go', onToolError: 'stopped: {{error}}', steps: [{ toolCalls: [{ name: 'a__b', arguments: {} }] }, { toolCalls: [{ name: 'c__d', arguments: {} }] }, { text: 'all good' }] }],
  });
  const out = answer(rules, [
    { role: 'user', content: 'go' },
    { role: 'assistant', content: null, tool_calls: [{ id: 'x', function: { name: 'a__b', arguments: '{}' } }] },
    { role: 'tool', tool_call_id: 'x', content: 'Error: no unpaid invoice' },
  ]);
  expect(out).toMatchObject({ ok: true, text: 'stopped: Error: no unpaid invoice', toolCalls: [] });
});

test('a step whose required value is missing answers with its otherwise text instead of calling with <missing> arguments', () => {
  const rules = parseDemoRules({
    scripts: [
      {
        name: 'pay',
        match: 'pay (\\w+)',
        steps: [
          { toolCalls: [{ name: 'admin__get_invoice', arguments: { user: '{{match.1}}' } }] },
          {
            requires: '{{json:tool:admin__get_invoice:invoices.0.id}}',
            otherwise: '{{match.1}} has nothing to pay.',
            toolCalls: [{ name: 'payments__pay', arguments: { invoiceId: '{{json:tool:admin__get_invoice:invoices.0.id}}' } }],
          },
        ],
      },
    ],
  });
  const turnWith = (result: string) =>
    answer(rules, [
      { role: 'user', content: 'pay bob' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'x', function: { name: 'admin__get_invoice', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'x', content: result },
    ]);
  expect(turnWith('{"invoices":[]}')).toMatchObject({ ok: true, text: 'bob has nothing to pay.', toolCalls: [], finishReason: 'stop' });
  const paying = turnWith('{"invoices":[{"id":"INV-1"}]}');
  expect(paying).toMatchObject({ ok: true, finishReason: 'tool_calls' });
  expect(paying.ok && paying.toolCalls[0]?.arguments).toBe('{"invoiceId":"INV-1"}');

  expect(() => parseDemoRules({ scripts: [{ name: 's', match: 'x', steps: [{ text: 'a', requires: '{{user}}' }] }] })).toThrow(/requires and otherwise together/);
  expect(() => parseDemoRules({ scripts: [{ name: 's', match: 'x', steps: [{ text: 'a', requires: 'not a template', otherwise: 'b' }] }] })).toThrow(/one template/);
});
