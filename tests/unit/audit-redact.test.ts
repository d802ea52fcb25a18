import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { argsDigest } from '../../src/audit/log';
import {
  DEFAULT_REDACTION,
  loadRedactionRules,
  parseRedactionRules,
  redact,
  redactText,
  redactionToken,
  RedactionError,
  RedactionRulesError,
  type RedactionRules,
} from '../../src/audit/redact';

const REPO_ROOT = path.resolve(__dirname, '../..');
const TOKEN = /^\[redacted:[0-9a-f]{12}\]$/;

function token(value: string): string {
  return `[redacted:${createHash('sha256').update(value).digest('hex').slice(0, 12)}]`;
}

describe('redact', () => {
  it('replaces listed keys at any depth, inside arrays, case-insensitively', () => {
    const input = {
      user: { name: 'Bob', EMAIL: 'bob@school.example', profile: { Phone: '+1 555 0100' } },
      payments: [
        { amount: 120, CardNumber: '4111 1111 1111 1111', cvv: 123 },
        { amount: 80, card_number: '5500 0000 0000 0004' },
      ],
      headers: { Authorization: 'Bearer abc.def' },
    };
    const out = redact(input);
    expect(out).toEqual({
      user: { name: 'Bob', EMAIL: token('bob@school.example'), profile: { Phone: token('+1 555 0100') } },
      payments: [
        { amount: 120, CardNumber: token('4111 1111 1111 1111'), cvv: token('123') },
        { amount: 80, card_number: token('5500 0000 0000 0004') },
      ],
      headers: { Authorization: token('Bearer abc.def') },
    });
  });

  it('replaces a listed key whose value is an object or array as a whole', () => {
    const out = redact({ secret: { a: 1, b: [2] }, token: ['x', 'y'] });
    expect(out.secret).toBe(token('{"a":1,"b":[2]}'));
    expect(out.token).toMatch(TOKEN);
  });

  it('does not modify its input', () => {
    const input = { password: 'hunter2', nested: { text: 'mail me at a@b.io' } };
    const snapshot = JSON.parse(JSON.stringify(input)) as unknown;
    redact(input);
    expect(input).toEqual(snapshot);
  });

  it('redacts e-mail addresses inside free text, and only them', () => {
    const out = redact({ note: 'Ask Alice.Smith+hw@School.Example.org, then bob@x.io; not @handles or a@b.', n: 3 });
    expect(out.note).toBe(
      `Ask ${token('Alice.Smith+hw@School.Example.org')}, then ${token('bob@x.io')}; not @handles or a@b.`,
    );
    expect(out.n).toBe(3);
  });

  it('gives equal values equal tokens, so calls stay correlatable without being readable', () => {
    const a = redact({ email: 'bob@x.io', text: 'cc bob@x.io' });
    const b = redact({ contact: [{ email: 'bob@x.io' }] });
    expect(a.email).toBe(a.text.slice(3));
    expect(b.contact[0]?.email).toBe(a.email);
    expect(redact({ email: 'eve@x.io' }).email).not.toBe(a.email);
    expect(JSON.stringify(a)).not.toContain('bob@x.io');
  });

  it('redacts e-mail addresses used as keys', () => {
    const out = redact({ grades: { 'bob@x.io': 'A' } }) as { grades: Record<string, string> };
    expect(out.grades).toEqual({ [token('bob@x.io')]: 'A' });
  });

  it('copies an own "__proto__" key as data instead of changing the prototype', () => {
    const input = JSON.parse('{"__proto__": {"password": "p"}, "ok": 1}') as Record<string, unknown>;
    const out = redact(input);
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(Object.keys(out)).toEqual(['__proto__', 'ok']);
    expect(JSON.stringify(out)).toBe(`{"__proto__":{"password":"${token('p')}"},"ok":1}`);
  });

  it('applies custom patterns and merges overlapping matches', () => {
    const rules: RedactionRules = {
      fields: [],
      patterns: [
        { name: 'card', regex: '\\b(?:\\d[ -]?){12,18}\\d\\b' },
        { name: 'digits', regex: '\\d{4} \\d{4}' },
      ],
    };
    expect(redact({ msg: 'card 4111 1111 1111 1111 ok' }, rules).msg).toBe(`card ${token('4111 1111 1111 1111')} ok`);
    expect(redactText('pin 1234 5678', rules)).toBe(`pin ${token('1234 5678')}`);
  });

  it('uses an HMAC when given a key', () => {
    const plain = redactionToken('bob@x.io');
    const keyed = redactionToken('bob@x.io', { key: 'k1' });
    expect(keyed).toMatch(TOKEN);
    expect(keyed).not.toBe(plain);
    expect(redactionToken('bob@x.io', { key: 'k1' })).toBe(keyed);
    expect(redact({ email: 'bob@x.io' }, DEFAULT_REDACTION, { key: 'k1' }).email).toBe(keyed);
  });

  it('rejects non-JSON values with the path (keys redacted), never the value', () => {
    expect(() => redact({ a: { when: new Date(0) } })).toThrow(RedactionError);
    expect(() => redact({ a: { when: new Date(0) } })).toThrow('at $.a.when');
    expect(() => redact({ 'bob@x.io': { f: () => 'secret-value' } })).toThrow(`at $.${token('bob@x.io')}.f`);
    const loop: Record<string, unknown> = { password: 'x' };
    loop.again = loop;
    expect(() => redact(loop)).toThrow('circular reference at $.again');
  });

  it('stays fast on long strings without an "@" (no catastrophic backtracking)', () => {
    const blob = 'ab12'.repeat(250_000);
    const started = Date.now();
    expect(redactText(`${blob}@`)).toBe(`${blob}@`);
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});

describe('argsDigest', () => {
  it('is the sha256 of the canonical JSON of the redacted arguments', () => {
    const args = { student: 'Bob', email: 'bob@x.io' };
    const expected = createHash('sha256').update(`{"email":"${token('bob@x.io')}","student":"Bob"}`).digest('hex');
    expect(argsDigest(args)).toBe(expected);
  });

  it('is equal for equal redacted arguments, whatever the key order', () => {
    expect(argsDigest({ a: 1, b: { c: 'x', password: 'p' } })).toBe(argsDigest({ b: { password: 'p', c: 'x' }, a: 1 }));
  });

  it('differs when a non-redacted field differs', () => {
    expect(argsDigest({ amount: 100, cardNumber: '4111' })).not.toBe(argsDigest({ amount: 101, cardNumber: '4111' }));
  });

  it('differs when a redacted value differs (its token differs)', () => {
    expect(argsDigest({ password: 'a' })).not.toBe(argsDigest({ password: 'b' }));
  });
});

describe('redaction rules', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'audit-rules-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  function rulesFile(content: string): string {
    const file = path.join(dir, 'rules.json');
    writeFileSync(file, content);
    return file;
  }

  it('ships examples/audit-redaction.json equal to DEFAULT_REDACTION', async () => {
    const rules = await loadRedactionRules(path.join(REPO_ROOT, 'examples/audit-redaction.json'));
    expect(rules).toEqual(DEFAULT_REDACTION);
    expect(JSON.parse(readFileSync(path.join(REPO_ROOT, 'examples/audit-redaction.json'), 'utf8'))).toEqual(DEFAULT_REDACTION);
  });

  it('covers the required fields by default', () => {
    for (const f of ['email', 'password', 'token', 'secret', 'authorization', 'cardNumber', 'card_number', 'cvv', 'iban', 'phone', 'ssn']) {
      expect(DEFAULT_REDACTION.fields).toContain(f);
    }
    expect(DEFAULT_REDACTION.patterns?.map((p) => p.name)).toContain('email');
    expect(Object.isFrozen(DEFAULT_REDACTION.fields)).toBe(true);
  });

  it('loads a valid custom file', async () => {
    const rules = await loadRedactionRules(rulesFile('{"fields":["studentId"],"patterns":[{"name":"ref","regex":"REF-\\\\d+","flags":"i"}]}'));
    expect(redact({ StudentID: 7, note: 'see ref-42' }, rules)).toEqual({ StudentID: token('7'), note: `see ${token('ref-42')}` });
  });

  it.each([
    ['not JSON', '{fields: []', /rules\.json is not valid JSON/],
    ['missing fields', '{}', /fields: /],
    ['fields of the wrong type', '{"fields": "email"}', /fields: /],
    ['an empty field name', '{"fields": ["ok", ""]}', /fields\[1\]: must be a non-empty string/],
    ['an unknown key (a typo)', '{"fields": [], "pattern": []}', /pattern/],
    ['an invalid regex', '{"fields": [], "patterns": [{"name": "x", "regex": "("}]}', /patterns\[0\]\.regex: is not a valid regular expression/],
    ['a regex matching ""', '{"fields": [], "patterns": [{"name": "x", "regex": "a*"}]}', /patterns\[0\]\.regex: must not match the empty string/],
    ['bad flags', '{"fields": [], "patterns": [{"name": "x", "regex": "a", "flags": "gy"}]}', /patterns\[0\]\.flags: may only contain/],
    ['a pattern without a name', '{"fields": [], "patterns": [{"regex": "a"}]}', /patterns\[0\]\.name/],
  ])('rejects a file with %s, naming the file and the field', async (_name, content, message) => {
    const file = rulesFile(content);
    const err = (await loadRedactionRules(file).catch((e: unknown) => e)) as Error;
    expect(err).toBeInstanceOf(RedactionRulesError);
    expect(err.message).toContain(file);
    expect(err.message).toMatch(message);
  });

  it('reports a missing file clearly', async () => {
    await expect(loadRedactionRules(path.join(dir, 'nope.json'))).rejects.toThrow(/cannot read redaction rules file .*nope\.json/);
  });

  it('validates rules passed as objects too', () => {
    expect(() => parseRedactionRules({ fields: [1] })).toThrow(/fields\[0\]/);
    expect(() => redact({}, { fields: [], patterns: [{ name: 'x', regex: '(' }] })).toThrow(RedactionRulesError);
  });
});
