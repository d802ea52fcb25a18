import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { ConfigError, loadEnvConfig, loadPayloadKeyring } from '../../src/config';
import { parsePayloadKeys } from '../../src/config/payload-keys';
import { createPayloadCodec, ENCRYPTED_ENCODING, KEY_ID_METADATA, type PayloadKey } from '../../src/security/payload-codec';

const key = (id: string): PayloadKey => ({ id, key: randomBytes(32) });
const text = (p: Payload, field: string) => Buffer.from(p.metadata?.[field] ?? new Uint8Array()).toString('utf8');
const USER_TEXT = { text: 'Process payment for student Bob, card 4111 1111 1111 1111' };

describe('payload codec', () => {
  test('seals a payload under the first key and opens it to the same payload', async () => {
    const codec = createPayloadCodec({ keys: [key('k2'), key('k1')] });
    const plain = defaultPayloadConverter.toPayload(USER_TEXT);
    const [sealed] = await codec.encode([plain]);
    expect(text(sealed!, 'encoding')).toBe(ENCRYPTED_ENCODING);
    expect(text(sealed!, KEY_ID_METADATA)).toBe('k2');
    expect(Buffer.from(sealed!.data!).toString('latin1')).not.toContain('Bob');
    const [opened] = await codec.decode([sealed!]);
    expect(defaultPayloadConverter.fromPayload(opened!)).toEqual(USER_TEXT);
    expect(text(opened!, 'encoding')).toBe('json/plain');
  });

  test('after rotation, payloads sealed under the old key open while the old key is listed, and not once it is dropped', async () => {
    const old = key('2026-01');
    const next = key('2026-07');
    const [sealedOld] = await createPayloadCodec({ keys: [old] }).encode([defaultPayloadConverter.toPayload(USER_TEXT)]);
    const rotated = createPayloadCodec({ keys: [next, old] });
    expect(defaultPayloadConverter.fromPayload((await rotated.decode([sealedOld!]))[0]!)).toEqual(USER_TEXT);
    // New payloads go under the new key.
    expect(text((await rotated.encode([defaultPayloadConverter.toPayload(USER_TEXT)]))[0]!, KEY_ID_METADATA)).toBe('2026-07');
    await expect(createPayloadCodec({ keys: [next] }).decode([sealedOld!])).rejects.toThrow(/key "2026-01", which is not among the configured payload keys/);
  });

  test('an altered payload, a payload relabelled to another key id, or a different key under the same id does not open', async () => {
    const a = key('a');
    const b = key('b');
    const codec = createPayloadCodec({ keys: [a, b] });
    const [sealed] = await codec.encode([defaultPayloadConverter.toPayload(USER_TEXT)]);
    const flipped = new Uint8Array(sealed!.data!);
    flipped[20] = flipped[20]! ^ 1;
    await expect(codec.decode([{ ...sealed!, data: flipped }])).rejects.toThrow(/does not open/);
    const relabelled = { ...sealed!, metadata: { ...sealed!.metadata, [KEY_ID_METADATA]: new TextEncoder().encode('b') } };
    await expect(codec.decode([relabelled])).rejects.toThrow(/does not open/);
    await expect(createPayloadCodec({ keys: [key('a')] }).decode([sealed!])).rejects.toThrow(/does not open/);
  });

  test('summaries (short one-line strings) stay in clear; long or multi-line strings and other payloads are sealed; clear payloads pass decode', async () => {
    const codec = createPayloadCodec({ keys: [key('k')] });
    const summary = defaultPayloadConverter.toPayload('notes: add_note');
    const [long, multiLine, number, nothing] = await codec.encode([
      defaultPayloadConverter.toPayload('x'.repeat(300)),
      defaultPayloadConverter.toPayload('two\nlines'),
      defaultPayloadConverter.toPayload(42),
      defaultPayloadConverter.toPayload(undefined),
    ]);
    expect((await codec.encode([summary]))[0]).toBe(summary);
    for (const p of [long, multiLine, number, nothing]) expect(text(p!, 'encoding')).toBe(ENCRYPTED_ENCODING);
    expect(defaultPayloadConverter.fromPayload((await codec.decode([nothing!]))[0]!)).toBeUndefined();
    expect((await codec.decode([summary]))[0]).toBe(summary);
  });
});

describe('payload keys in the environment', () => {
  const k = () => randomBytes(32).toString('base64');

  test('PAYLOAD_KEYS: the first entry encrypts, every entry decrypts', () => {
    const ring = loadPayloadKeyring(loadEnvConfig({ PAYLOAD_KEYS: `new:${k()}, old:${k()}` }));
    expect(ring?.keys.map((x) => x.id)).toEqual(['new', 'old']);
    expect(loadPayloadKeyring(loadEnvConfig({}))).toBeUndefined();
  });

  test('PAYLOAD_KEY_FILE: one entry a line, comments skipped', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'dmh-keys-'));
    try {
      const file = path.join(dir, 'keys');
      writeFileSync(file, `# rotated 2026-07, a: kept for old histories\nb:${k()}\na:${k()}\n`);
      expect(loadPayloadKeyring(loadEnvConfig({ PAYLOAD_KEY_FILE: file }))?.keys.map((x) => x.id)).toEqual(['b', 'a']);
      expect(() => loadPayloadKeyring({ PAYLOAD_KEY_FILE: path.join(dir, 'missing') })).toThrow(ConfigError);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('bad entries fail with the variable and the key id named, never the key', () => {
    const short = randomBytes(16).toString('base64');
    const cases: Array<[string, RegExp]> = [
      [`k1:${short}`, /PAYLOAD_KEYS: key "k1": must be 32 bytes in base64/],
      [k(), /PAYLOAD_KEYS: entry 1: expected id:base64key/],
      [`a:${k()},a:${k()}`, /key id "a" appears twice/],
      [`a:not base64!${'x'.repeat(40)}`, /key "a": must be 32 bytes/],
    ];
    for (const [value, message] of cases) {
      let error: unknown;
      try {
        loadEnvConfig({ PAYLOAD_KEYS: value });
      } catch (err) {
        error = err;
      }
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as Error).message).toMatch(message);
      // The key material (after the id, or the whole entry without one) is never echoed.
      const secret = value.includes(':') ? value.slice(value.indexOf(':') + 1) : value;
      expect((error as Error).message).not.toContain(secret.slice(0, 12));
    }
    expect(() => loadEnvConfig({ PAYLOAD_KEYS: `a:${k()}`, PAYLOAD_KEY_FILE: '/tmp/x' })).toThrow(/not both/);
    expect(() => parsePayloadKeys(' , ', 'PAYLOAD_KEYS')).toThrow(/no keys/);
  });
});
