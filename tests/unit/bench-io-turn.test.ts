import { ioTurnFrom } from '../../bench/floor/io-turn';

/** The I/O floor's input (bench/floor/io-turn.ts): a direct turn's two chat requests and tool calls, read from what the demo model recorded. */

const tools = [{ type: 'function', function: { name: 'notes__add_note', parameters: { type: 'object' } } }];
const system = { role: 'system', content: 'You are a test assistant.' };
const user = { role: 'user', content: 'bench1 k1' };
const assistant = {
  role: 'assistant',
  content: null,
  tool_calls: [
    { id: 'c0', type: 'function', function: { name: 'notes__add_note', arguments: '{"text":"k1 step 1"}' } },
    { id: 'c1', type: 'function', function: { name: 'everything__echo', arguments: '{"message":"k1 step 1"}' } },
  ],
};
const chat = (messages: unknown[], extra: Record<string, unknown> = {}) => ({
  path: '/v1/chat/completions',
  body: { model: 'demo-model', messages, tools, stream: true, stream_options: { include_usage: true }, ...extra },
});
const step2 = [system, user, assistant, { role: 'tool', tool_call_id: 'c0', content: 'Saved' }, { role: 'tool', tool_call_id: 'c1', content: 'Echo: k1 step 1' }];

test('takes both requests without their tool list, the tool list once, and the tool calls split into server and tool', () => {
  const turn = ioTurnFrom([{ path: '/v1/models', body: undefined }, chat([system, user]), chat(step2)]);
  expect(turn.requests).toEqual([
    { model: 'demo-model', messages: [system, user], stream: true, stream_options: { include_usage: true } },
    { model: 'demo-model', messages: step2, stream: true, stream_options: { include_usage: true } },
  ]);
  expect(turn.tools).toEqual(tools);
  expect(turn.calls).toEqual([
    { server: 'notes', tool: 'add_note', arguments: { text: 'k1 step 1' } },
    { server: 'everything', tool: 'echo', arguments: { message: 'k1 step 1' } },
  ]);
});

test('refuses what is not one 1-tool-step turn, with the reason', () => {
  expect(() => ioTurnFrom([chat([system, user])])).toThrow('the model recorded 1');
  expect(() => ioTurnFrom([chat([system, user]), chat(step2, { stream: false })])).toThrow('chat request 2 is not a streamed');
  expect(() => ioTurnFrom([chat([system, user]), chat([system, user])])).toThrow('no assistant tool calls');
  expect(() => ioTurnFrom([chat([system, user]), chat(step2, { tools: [] })])).toThrow('same tool list');
  const unnamed = { ...assistant, tool_calls: [{ id: 'c0', type: 'function', function: { name: 'add_note', arguments: '{}' } }] };
  expect(() => ioTurnFrom([chat([system, user]), chat([system, user, unnamed])])).toThrow('is not server__tool');
  const notObject = { ...assistant, tool_calls: [{ id: 'c0', type: 'function', function: { name: 'notes__add_note', arguments: '[1]' } }] };
  expect(() => ioTurnFrom([chat([system, user]), chat([system, user, notObject])])).toThrow('arguments are not a JSON object');
});
