import { sealToken, unsealToken } from '../../src/security/seal';

const KEY = 'k'.repeat(40);

test('a sealed token opens with its key only, and is not readable in between', () => {
  const sealed = sealToken('eyJ.header.signature', KEY);
  expect(sealed).not.toContain('eyJ');
  expect(sealed).not.toBe(sealToken('eyJ.header.signature', KEY));
  expect(unsealToken(sealed, KEY)).toBe('eyJ.header.signature');
  expect(unsealToken(sealed, 'x'.repeat(40))).toBeUndefined();
});

test('altered or foreign values do not open', () => {
  const sealed = sealToken('secret-token', KEY);
  const body = sealed.slice(3);
  const flipped = `v1.${body.slice(0, 20)}${body[20] === 'A' ? 'B' : 'A'}${body.slice(21)}`;
  expect(unsealToken(flipped, KEY)).toBeUndefined();
  expect(unsealToken('v2.abc', KEY)).toBeUndefined();
  expect(unsealToken('nonsense', KEY)).toBeUndefined();
  expect(() => sealToken('t', 'short')).toThrow(/at least 32/);
});
