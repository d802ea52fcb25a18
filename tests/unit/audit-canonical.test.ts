import { createHash } from 'node:crypto';
import { canonicalJson, CanonicalJsonError } from '../../src/audit/canonical';
import { computeEntryHash, GENESIS_HASH } from '../../src/audit/schema';

describe('canonicalJson', () => {
  it('sorts keys recursively, keeps array order and has no whitespace', () => {
    const value = { b: [3, { z: 1, a: [true, null] }], a: 'x y', c: { y: -1.5, x: 0 } };
    expect(canonicalJson(value)).toBe('{"a":"x y","b":[3,{"a":[true,null],"z":1}],"c":{"x":0,"y":-1.5}}');
  });

  it('is independent of insertion order', () => {
    expect(canonicalJson({ a: 1, b: { c: 2, d: 3 } })).toBe(canonicalJson({ b: { d: 3, c: 2 }, a: 1 }));
  });

  it('escapes strings as JSON does and round-trips through JSON.parse', () => {
    const value = { 'k"ey': 'line\nbreak \u2028 ünï 😀', n: 1e21, m: 0.1 };
    expect(JSON.parse(canonicalJson(value))).toEqual(value);
  });

  it('omits undefined object properties, like JSON', () => {
    expect(canonicalJson({ a: undefined, b: 1 })).toBe('{"b":1}');
  });

  it.each([
    ['NaN', { a: NaN }, 'non-finite number at $.a'],
    ['Infinity', [1, -Infinity], 'non-finite number at $[1]'],
    ['undefined in an array', [undefined], 'unsupported undefined at $[0]'],
    ['a function', { f: () => 1 }, 'unsupported function at $.f'],
    ['a bigint', { n: BigInt(1) }, 'unsupported bigint at $.n'],
    ['a Date', { d: new Date(0) }, 'unsupported object (Date) at $.d'],
    ['a Map', new Map(), 'unsupported object (Map) at $'],
  ])('rejects %s', (_name, value, message) => {
    expect(() => canonicalJson(value)).toThrow(CanonicalJsonError);
    expect(() => canonicalJson(value)).toThrow(message);
  });

  it('rejects cycles but accepts a shared, non-circular object', () => {
    const shared = { x: 1 };
    expect(canonicalJson({ a: shared, b: [shared] })).toBe('{"a":{"x":1},"b":[{"x":1}]}');
    const loop: Record<string, unknown> = {};
    loop.self = loop;
    expect(() => canonicalJson(loop)).toThrow('circular reference at $.self');
  });

  it('accepts null-prototype objects (what some parsers produce)', () => {
    const o = Object.create(null) as Record<string, unknown>;
    o.b = 2;
    o.a = 1;
    expect(canonicalJson(o)).toBe('{"a":1,"b":2}');
  });
});

describe('computeEntryHash', () => {
  it('is sha256(prevHash + "\\n" + canonical entry without hash), whatever the key order', () => {
    const body = { seq: 1, prevHash: GENESIS_HASH, kind: 'tool_call', actor: { id: 'u', role: 'r', tenant: 't' }, at: '2026-01-01T00:00:00.000Z' };
    const expected = createHash('sha256').update(`${GENESIS_HASH}\n${canonicalJson(body)}`).digest('hex');
    expect(computeEntryHash(body)).toBe(expected);
    expect(computeEntryHash({ ...body, hash: 'ignored' })).toBe(expected);
    const reordered = { at: body.at, actor: { tenant: 't', role: 'r', id: 'u' }, kind: body.kind, prevHash: body.prevHash, seq: 1 };
    expect(computeEntryHash(reordered)).toBe(expected);
  });
});
