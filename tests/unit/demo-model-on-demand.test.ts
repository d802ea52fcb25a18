/** Context on demand in the demo model (src/demo-model/on-demand.ts, decision 0036): list, read what a step needs, then answer. */
import { answer, parseDemoRules, type ChatMessageLike, type DemoAnswer } from '../../src/demo-model/rules';

const rules = parseDemoRules({
  scripts: [
    { name: 'status', match: '(?i)status', steps: [{ text: 'S={{json:context:admin://status:students}} R={{context:pay://revenue}}' }] },
    {
      name: 'fetches-itself',
      match: '^what do my notes say',
      steps: [
        { toolCalls: [{ name: 'host__list_resources', arguments: {} }] },
        { toolCalls: [{ name: 'host__read_resource', arguments: { server: 'notes', uri: 'notes://all' } }] },
        { text: 'your notes: {{result.last}} / {{context:notes://all}}' },
      ],
    },
    { name: 'lookup-then-context', match: '(?i)^look up (\\w+)', steps: [{ toolCalls: [{ name: 'admin__find', arguments: { q: '{{match.1}}' } }] }, { text: 'found {{result.0}}; {{context:pay://revenue}}' }] },
  ],
});
const HOST_TOOLS = ['admin__find', 'host__list_resources', 'host__read_resource'];
const LISTING = '2 resources you may read with host__read_resource:\n- admin admin://status: status\n- payments pay://revenue';

const ok = (a: DemoAnswer) => {
  if (!a.ok) throw new Error(a.message);
  return a;
};
const calls = (a: DemoAnswer) => ok(a).toolCalls.map((c) => [c.name, JSON.parse(c.arguments) as unknown]);
/** The conversation after the model's calls and the host's answers to them. */
function after(convo: ChatMessageLike[], a: DemoAnswer, results: string[]): ChatMessageLike[] {
  const tc = ok(a).toolCalls;
  return [
    ...convo,
    { role: 'assistant', content: null, tool_calls: tc.map((c) => ({ id: c.id, function: { name: c.name, arguments: c.arguments } })) },
    ...tc.map((c, i): ChatMessageLike => ({ role: 'tool', tool_call_id: c.id, content: results[i] ?? '' })),
  ];
}

test('a step missing its context lists, reads what the listing names, then answers with it', () => {
  let convo: ChatMessageLike[] = [{ role: 'user', content: 'status please' }];
  const list = answer(rules, convo, HOST_TOOLS);
  expect(calls(list)).toEqual([['host__list_resources', {}]]);
  convo = after(convo, list, [LISTING]);
  const read = answer(rules, convo, HOST_TOOLS);
  expect(calls(read)).toEqual([
    ['host__read_resource', { server: 'admin', uri: 'admin://status', reason: 'script status needs it' }],
    ['host__read_resource', { server: 'payments', uri: 'pay://revenue', reason: 'script status needs it' }],
  ]);
  // Ids differ from the listing round's and stay unique within the turn.
  expect(new Set([...ok(list).toolCalls, ...ok(read).toolCalls].map((c) => c.id)).size).toBe(3);
  convo = after(convo, read, ['admin://status from admin:\n{"students":7}', 'pay://revenue from payments:\n120 EUR']);
  expect(ok(answer(rules, convo, HOST_TOOLS))).toMatchObject({ step: 0, text: 'S=7 R=120 EUR', toolCalls: [] });
});

test('context in a system message, or no resource tools offered: no fetching', () => {
  const gathered: ChatMessageLike[] = [
    { role: 'system', content: 'Resource admin://status from admin:\n{"students":3}' },
    { role: 'system', content: 'Resource pay://revenue from payments:\n9 EUR' },
    { role: 'user', content: 'status' },
  ];
  expect(ok(answer(rules, gathered, HOST_TOOLS)).text).toBe('S=3 R=9 EUR');
  expect(ok(answer(rules, [{ role: 'user', content: 'status' }], ['admin__find'])).text).toBe('S=<missing json:context:admin://status:students> R=<missing context:pay://revenue>');
});

test('a URI the listing lacks, or a read that failed, is not asked for again', () => {
  let convo: ChatMessageLike[] = [{ role: 'user', content: 'status' }];
  convo = after(convo, answer(rules, convo, HOST_TOOLS), ['1 resource you may read with host__read_resource:\n- payments pay://revenue']);
  const read = answer(rules, convo, HOST_TOOLS);
  expect(calls(read)).toEqual([['host__read_resource', { server: 'payments', uri: 'pay://revenue', reason: 'script status needs it' }]]);
  convo = after(convo, read, ['Error: the server is down']);
  expect(ok(answer(rules, convo, HOST_TOOLS)).text).toBe('S=<missing json:context:admin://status:students> R=<missing context:pay://revenue>');
});

test('fetching rounds neither advance the script nor shift {{result.N}}', () => {
  let convo: ChatMessageLike[] = [{ role: 'user', content: 'look up Bob' }];
  const find = answer(rules, convo, HOST_TOOLS);
  expect(calls(find)).toEqual([['admin__find', { q: 'Bob' }]]);
  convo = after(convo, find, ['Bob #2']);
  convo = after(convo, answer(rules, convo, HOST_TOOLS), [LISTING]);
  const read = answer(rules, convo, HOST_TOOLS);
  expect(ok(read).step).toBe(1);
  convo = after(convo, read, ['pay://revenue from payments:\n5 EUR']);
  expect(ok(answer(rules, convo, HOST_TOOLS))).toMatchObject({ step: 1, text: 'found Bob #2; 5 EUR' });
});

test('a script that calls the resource tools itself runs as written: its steps advance and their results are {{result.N}}', () => {
  let convo: ChatMessageLike[] = [{ role: 'user', content: 'what do my notes say?' }];
  const list = answer(rules, convo, HOST_TOOLS);
  expect(calls(list)).toEqual([['host__list_resources', {}]]);
  convo = after(convo, list, ['1 resource you may read with host__read_resource:\n- notes notes://all']);
  const read = answer(rules, convo, HOST_TOOLS);
  expect(ok(read).step).toBe(1);
  expect(calls(read)).toEqual([['host__read_resource', { server: 'notes', uri: 'notes://all' }]]);
  convo = after(convo, read, ['notes://all from notes:\n[]']);
  expect(ok(answer(rules, convo, HOST_TOOLS))).toMatchObject({ step: 2, text: 'your notes: notes://all from notes:\n[] / []' });
});
