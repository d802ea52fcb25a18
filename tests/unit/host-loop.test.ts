import { buildInitialMessages, parseArguments, planToolCalls, toLlmTools, truncate } from '../../src/core/host-loop';
import { fnv1a32, sessionOfTurn, toolCallIdempotencyKey, turnId } from '../../src/shared/ids';
import type { CatalogTool } from '../../src/shared/tool-types';

const tools: CatalogTool[] = [
  { name: 'notes__add_note', server: 'notes', tool: 'add_note', description: 'Add a note', inputSchema: { type: 'object', properties: { text: { type: 'string' } } } },
  { name: 'weird_server__x', server: 'weird.server', tool: 'x', inputSchema: {} },
];

describe('planToolCalls', () => {
  test('resolves names through the catalog, never by splitting strings', () => {
    const [a, b] = planToolCalls(
      [
        { id: 'c1', name: 'notes__add_note', arguments: '{"text":"hi"}' },
        { id: 'c2', name: 'weird_server__x', arguments: '' },
      ],
      tools,
    );
    expect(a).toMatchObject({ kind: 'call', tool: { server: 'notes', tool: 'add_note' }, arguments: { text: 'hi' } });
    // The sanitized name maps back to the real server name, which splitting could not recover.
    expect(b).toMatchObject({ kind: 'call', tool: { server: 'weird.server', tool: 'x' }, arguments: {} });
  });

  test('unknown tools, bad JSON, non-objects and duplicate ids become rejections for the model', () => {
    const planned = planToolCalls(
      [
        { id: 'c1', name: 'nope__tool', arguments: '{}' },
        { id: 'c2', name: 'notes__add_note', arguments: '{"text": ' },
        { id: 'c3', name: 'notes__add_note', arguments: '[1,2]' },
        { id: 'c3', name: 'notes__add_note', arguments: '{}' },
      ],
      tools,
    );
    expect(planned.map((p) => p.kind)).toEqual(['reject', 'reject', 'reject', 'reject']);
    expect(planned[0]).toMatchObject({ reason: expect.stringMatching(/Unknown tool "nope__tool".*notes__add_note/) });
    expect(planned[1]).toMatchObject({ reason: expect.stringMatching(/not valid JSON/) });
    expect(planned[2]).toMatchObject({ reason: 'Tool arguments must be a JSON object.' });
    expect(planned[3]).toMatchObject({ reason: expect.stringMatching(/Duplicate tool call id/) });
  });
});

test('toLlmTools labels descriptions with the server and forces object schemas', () => {
  const specs = toLlmTools(tools);
  expect(specs[0]).toEqual({ name: 'notes__add_note', description: '[notes] Add a note', parameters: tools[0]?.inputSchema });
  expect(specs[1]?.parameters).toEqual({ type: 'object', properties: {} });
});

test('parseArguments treats empty as {} and rejects null', () => {
  expect(parseArguments('  ')).toEqual({ ok: true, value: {} });
  expect(parseArguments('null')).toMatchObject({ ok: false });
});

test('truncate marks what it cut', () => {
  expect(truncate('abc', 5)).toBe('abc');
  expect(truncate('abcdefgh', 3)).toBe('abc\n[truncated: 5 more characters]');
});

test('buildInitialMessages orders system prompt, context, availability notice, history, user', () => {
  const msgs = buildInitialMessages({
    systemPrompt: 'sys',
    context: [{ kind: 'resource', server: 'notes', ref: 'notes://all', text: '[]' }],
    unavailableServers: [{ server: 'payments' }],
    history: [{ role: 'user', content: 'earlier' }, { role: 'assistant', content: 'reply' }],
    userText: 'now',
  });
  expect(msgs.map((m) => m.role)).toEqual(['system', 'system', 'system', 'user', 'assistant', 'user']);
  expect(msgs[1]?.content).toContain('Resource notes://all from notes');
  expect(msgs[2]?.content).toContain('payments');
  expect(msgs.at(-1)).toEqual({ role: 'user', content: 'now' });
});

describe('ids', () => {
  test('turn ids round-trip the session id, including dashes', () => {
    const id = turnId('my-session_1', 'k9z');
    expect(id).toBe('turn-my-session_1-k9z');
    expect(sessionOfTurn(id)).toBe('my-session_1');
    expect(sessionOfTurn('turn-bad')).toBeUndefined();
    expect(sessionOfTurn('session-x')).toBeUndefined();
  });

  test('idempotency keys are stable and distinct per step and call', () => {
    const a = toolCallIdempotencyKey('turn-s-1', 1, 'call_a');
    expect(a).toBe(toolCallIdempotencyKey('turn-s-1', 1, 'call_a'));
    expect(a).not.toBe(toolCallIdempotencyKey('turn-s-1', 2, 'call_a'));
    expect(a).not.toBe(toolCallIdempotencyKey('turn-s-2', 1, 'call_a'));
  });

  test('fnv1a32 is stable', () => {
    expect(fnv1a32('')).toBe('811c9dc5');
    expect(fnv1a32('hello')).toBe('4f9f2cab');
  });
});
