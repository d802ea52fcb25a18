import { truncate, truncateWithin } from '../../src/core/host-loop';
import { boundToolOutcome, toToolOutcome } from '../../src/mcp/render';

/**
 * A tool result enters the turn's history as the model will see it: the activity cuts it to the
 * host config's maxToolResultChars (the turn's own cut, src/workflows/turn.ts, then finds nothing to
 * cut), so a server answering 5 MiB costs the history maxToolResultChars, not 5 MiB.
 */
const MAX = 20_000;
/** What the turn hands the model (src/workflows/turn.ts). */
const modelSees = (o: { isError: boolean; text: string }) => truncate(o.isError ? `Error: ${o.text}` : o.text, MAX);

test('a 5 MiB result is cut to what the model sees, with the count of what was cut', () => {
  const text = `${'a'.repeat(MAX)}${'b'.repeat(5 * 1024 * 1024)}`;
  const outcome = boundToolOutcome(toToolOutcome({ content: [{ type: 'text', text }] })!, MAX);
  expect(outcome.text.length).toBeLessThanOrEqual(MAX);
  expect(modelSees(outcome)).toBe(outcome.text);
  const kept = /^(a+)\n\[truncated: (\d+) more characters\]$/.exec(outcome.text);
  expect(kept).not.toBeNull();
  expect(kept![1]!.length + Number(kept![2])).toBe(text.length);
  expect(kept![1]!.length).toBeGreaterThan(MAX - 50);
});

test('an error is cut so that the turn\'s "Error: " prefix still fits', () => {
  const outcome = boundToolOutcome({ isError: true, text: 'e'.repeat(MAX * 3) }, MAX);
  expect(modelSees(outcome).length).toBe(`Error: ${outcome.text}`.length);
  expect(`Error: ${outcome.text}`.length).toBeLessThanOrEqual(MAX);
});

test('a result within the bound is unchanged, structured content included', () => {
  const raw = { content: [{ type: 'text', text: 'saved' }], structuredContent: { id: 7 } };
  expect(boundToolOutcome(toToolOutcome(raw)!, MAX)).toEqual({ isError: false, text: 'saved', structuredContent: { id: 7 } });
});

test('structured content larger than the bound stays out of the history; a result of only structured content is its text', () => {
  const rows = Array.from({ length: 5_000 }, (_, i) => ({ id: i, name: `row ${i}` }));
  const withText = boundToolOutcome(toToolOutcome({ content: [{ type: 'text', text: '5000 rows' }], structuredContent: { rows } })!, MAX);
  expect(withText).toEqual({ isError: false, text: '5000 rows' });
  const onlyStructured = boundToolOutcome(toToolOutcome({ content: [], structuredContent: { rows } })!, MAX);
  expect(onlyStructured.structuredContent).toBeUndefined();
  expect(onlyStructured.text.startsWith('{"rows":[{"id":0,"name":"row 0"}')).toBe(true);
  expect(onlyStructured.text.length).toBeLessThanOrEqual(MAX);
});

test('truncateWithin keeps the note inside the limit at every size', () => {
  for (const len of [99, 100, 101, 1_000, 123_456]) {
    const cut = truncateWithin('x'.repeat(len), 100);
    expect(cut.length).toBeLessThanOrEqual(100);
    if (len > 100) expect(cut).toMatch(new RegExp(`^x+\\n\\[truncated: ${len - cut.indexOf('\n')} more characters\\]$`));
    else expect(cut).toBe('x'.repeat(len));
  }
});
