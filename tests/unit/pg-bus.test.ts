import { MAX_PAYLOAD_BYTES, toPayloads } from '../../src/live/pg-bus';
import { LiveBatchSchema, type LiveChunk } from '../../src/live/chunk';

/** NOTIFY payloads: each under PostgreSQL's limit, and together the same text at the same offsets. */
const delta = (offset: number, text: string): LiveChunk => ({ turnId: 't-1', step: 1, attempt: 1, kind: 'delta', offset, text });

function replay(payloads: string[]): string {
  let text = '';
  for (const p of payloads) {
    for (const c of LiveBatchSchema.parse(JSON.parse(p)).chunks) {
      if (c.kind !== 'delta') continue;
      expect(c.offset).toBe(text.length);
      text += c.text;
    }
  }
  return text;
}

test('small chunks share a payload; many are cut into several, in order', () => {
  expect(toPayloads([delta(0, 'a'), delta(1, 'b')])).toHaveLength(1);
  const many = Array.from({ length: 400 }, (_, i) => delta(i * 40, 'x'.repeat(40)));
  const payloads = toPayloads(many);
  expect(payloads.length).toBeGreaterThan(1);
  for (const p of payloads) expect(Buffer.byteLength(p)).toBeLessThanOrEqual(MAX_PAYLOAD_BYTES);
  expect(replay(payloads)).toBe('x'.repeat(16_000));
});

test('one oversized delta is split at offsets, never inside a code point, even when every character escapes', () => {
  const text = '€😀"\n'.repeat(3_000);
  const payloads = toPayloads([delta(0, text), { turnId: 't-1', step: 1, attempt: 1, kind: 'end', offset: text.length, text: '' }]);
  for (const p of payloads) expect(Buffer.byteLength(p)).toBeLessThanOrEqual(MAX_PAYLOAD_BYTES);
  expect(replay(payloads)).toBe(text);
  expect(JSON.parse(payloads.at(-1) ?? '{}').chunks.at(-1).kind).toBe('end');
});
