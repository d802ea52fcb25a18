import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { defaultPayloadConverter, type Payload, type PayloadCodec } from '@temporalio/common';
import { ConfigError, loadEnvConfig } from '../../src/config';
import { directoryBlobStore } from '../../src/security/blob-store';
import { CLAIM_CHECK_ENCODING, createClaimCheckCodec, isClaimCheckReference } from '../../src/security/claim-check';
import { namespaceRetentionMs, startClaimCheckSweeper } from '../../src/security/claim-check-sweep';
import { dataConverterFor } from '../../src/security/data-converter';
import { ENCRYPTED_ENCODING, serializePayload } from '../../src/security/payload-codec';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'dmh-claim-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const encodingOf = (p: Payload) => Buffer.from(p.metadata?.['encoding'] ?? new Uint8Array()).toString('utf8');
/** Every file the directory store holds, concatenated. */
function blobsOnDisk(root: string): Buffer {
  const files = readdirSync(root, { recursive: true, withFileTypes: true }).filter((e) => e.isFile());
  return Buffer.concat(files.map((e) => readFileSync(path.join(e.parentPath, e.name))));
}
/** What the SDK does with `payloadCodecs`: encode in order, decode in reverse. */
async function encodeAll(codecs: PayloadCodec[], payloads: Payload[]): Promise<Payload[]> {
  for (const c of codecs) payloads = await c.encode(payloads);
  return payloads;
}
async function decodeAll(codecs: PayloadCodec[], payloads: Payload[]): Promise<Payload[]> {
  for (const c of [...codecs].reverse()) payloads = await c.decode(payloads);
  return payloads;
}

describe('claim-check codec', () => {
  test('a large payload goes to the store and comes back whole; the history holds a small reference; a small one stays', async () => {
    const codec = createClaimCheckCodec({ store: directoryBlobStore(dir), thresholdBytes: 1024 });
    const big = defaultPayloadConverter.toPayload({ text: `marker-${'x'.repeat(5_000)}` });
    const small = defaultPayloadConverter.toPayload({ text: 'hi' });
    const [ref, kept] = await codec.encode([big, small]);
    expect(isClaimCheckReference(ref!)).toBe(true);
    expect(encodingOf(ref!)).toBe(CLAIM_CHECK_ENCODING);
    expect(Buffer.from(ref!.data!).toString('utf8')).toMatch(/^\{"claimCheck":"sha256:[0-9a-f]{64}","size":\d+\}$/);
    expect(serializePayload(ref!).length).toBeLessThan(300);
    expect(kept).toBe(small);
    const [back, same] = await codec.decode([ref!, kept!]);
    expect(defaultPayloadConverter.fromPayload(back!)).toEqual({ text: `marker-${'x'.repeat(5_000)}` });
    expect(encodingOf(back!)).toBe('json/plain');
    expect(same).toBe(small);
    // Content-addressed: the same bytes twice are one blob.
    await codec.encode([big]);
    expect(readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile())).toHaveLength(1);
  });

  test('the threshold: a payload of exactly the threshold stays in the history, one byte more does not', async () => {
    const probe = defaultPayloadConverter.toPayload('');
    const overhead = serializePayload(probe).length;
    const threshold = 2_000;
    const atThreshold = defaultPayloadConverter.toPayload('a'.repeat(threshold - overhead));
    const overThreshold = defaultPayloadConverter.toPayload('a'.repeat(threshold - overhead + 1));
    expect(serializePayload(atThreshold).length).toBe(threshold);
    const codec = createClaimCheckCodec({ store: directoryBlobStore(dir), thresholdBytes: threshold });
    const [a, b] = await codec.encode([atThreshold, overThreshold]);
    expect(a).toBe(atThreshold);
    expect(isClaimCheckReference(b!)).toBe(true);
  });

  test('a reference whose blob is missing fails with a clear error; an altered blob too', async () => {
    const codec = createClaimCheckCodec({ store: directoryBlobStore(dir), thresholdBytes: 1024 });
    const [ref] = await codec.encode([defaultPayloadConverter.toPayload('y'.repeat(4_096))]);
    const [file] = readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile());
    const blob = path.join(file!.parentPath, file!.name);
    writeFileSync(blob, Buffer.concat([readFileSync(blob), Buffer.from('!')]));
    await expect(codec.decode([ref!])).rejects.toThrow(/does not match its digest \(altered\)/);
    rmSync(blob);
    await expect(codec.decode([ref!])).rejects.toThrow(/payload stored by reference \(sha256:[0-9a-f]{64}, \d+ bytes\) is missing from the directory .*: removed after the retention, or written to another store/);
  });

  test('with keys, the blob is the sealed payload: the clear text is neither in the history nor on disk', async () => {
    const converter = dataConverterFor({ keys: [{ id: 'k1', key: randomBytes(32) }] }, { store: directoryBlobStore(dir), thresholdBytes: 1024 });
    const codecs = converter.payloadCodecs ?? [];
    expect(codecs).toHaveLength(2);
    const secret = `vault-code-${randomBytes(4).toString('hex')}`;
    const [ref] = await encodeAll(codecs, [defaultPayloadConverter.toPayload(`${secret} ${'z'.repeat(10_000)}`)]);
    expect(isClaimCheckReference(ref!)).toBe(true);
    expect(JSON.stringify(ref)).not.toContain(secret);
    const disk = blobsOnDisk(dir);
    expect(disk.includes(secret)).toBe(false);
    // What the store holds is the sealed payload.
    const [stored] = await codecs[1]!.decode([ref!]);
    expect(encodingOf(stored!)).toBe(ENCRYPTED_ENCODING);
    const [back] = await decodeAll(codecs, [ref!]);
    expect(defaultPayloadConverter.fromPayload(back!)).toBe(`${secret} ${'z'.repeat(10_000)}`);
    // Without keys, the same payload is stored in clear: the control.
    const clear = dataConverterFor(undefined, { store: directoryBlobStore(path.join(dir, 'clear')), thresholdBytes: 1024 });
    await encodeAll(clear.payloadCodecs ?? [], [defaultPayloadConverter.toPayload(`${secret} ${'z'.repeat(10_000)}`)]);
    expect(blobsOnDisk(path.join(dir, 'clear')).includes(secret)).toBe(true);
  });
});

describe('garbage collection', () => {
  const old = (file: string, ageMs: number) => {
    const t = new Date(Date.now() - ageMs);
    utimesSync(file, t, t);
  };
  const files = () => readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => path.join(e.parentPath, e.name));

  test('the directory store removes blobs unused since the cutoff, and keeps the others and those written again', async () => {
    const store = directoryBlobStore(dir);
    const codec = createClaimCheckCodec({ store, thresholdBytes: 1024 });
    const [stale, fresh, rewritten] = await codec.encode(['a', 'b', 'c'].map((c) => defaultPayloadConverter.toPayload(c.repeat(2_000))));
    const [staleFile, freshFile, rewrittenFile] = await Promise.all([stale, fresh, rewritten].map(async (r) => files().find((f) => f.endsWith(Buffer.from(r!.metadata!['claim-check-digest']!).toString().slice(7)))!));
    old(staleFile!, 40 * 86_400_000);
    old(rewrittenFile!, 40 * 86_400_000);
    old(freshFile!, 2 * 86_400_000);
    await codec.encode([defaultPayloadConverter.toPayload('c'.repeat(2_000))]);
    expect(await store.deleteUnusedSince(new Date(Date.now() - 30 * 86_400_000))).toBe(1);
    await expect(codec.decode([stale!])).rejects.toThrow(/is missing/);
    await expect(codec.decode([fresh!, rewritten!])).resolves.toHaveLength(2);
  });

  test('the worker\'s sweeper runs on its own every interval, with the retention it is given', async () => {
    const store = directoryBlobStore(dir);
    const codec = createClaimCheckCodec({ store, thresholdBytes: 1024 });
    await codec.encode(['d', 'e'].map((c) => defaultPayloadConverter.toPayload(c.repeat(2_000))));
    const [first] = files();
    old(first!, 3 * 3_600_000);
    const logged: string[] = [];
    const sweeper = startClaimCheckSweeper({
      store,
      retentionMs: async () => 2 * 3_600_000,
      everyMs: 50,
      logger: { info: (_o, msg) => logged.push(msg), warn: (_o, msg) => logged.push(msg) },
    });
    try {
      const deadline = Date.now() + 30_000;
      while (files().length !== 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(files()).toHaveLength(1);
      expect(logged).toContain('claim check: removed blobs past the retention');
      expect(await sweeper.sweepNow()).toBe(0);
    } finally {
      sweeper.stop();
    }
  });

  test('the retention is the namespace\'s unless configured', async () => {
    const client = { workflowService: { describeNamespace: async () => ({ config: { workflowExecutionRetentionTtl: { seconds: 259_200, nanos: 0 } } }) } };
    expect(await namespaceRetentionMs(client as never, 'default')).toBe(72 * 3_600_000);
    const none = { workflowService: { describeNamespace: async () => ({ config: {} }) } };
    await expect(namespaceRetentionMs(none as never, 'default')).rejects.toThrow(/reports no workflow retention/);
  });
});

describe('settings', () => {
  test('the threshold is validated; the defaults are 128 KiB and .data/claim-check', () => {
    const env = loadEnvConfig({});
    expect(env.CLAIM_CHECK_THRESHOLD_BYTES).toBe(131_072);
    expect(env.CLAIM_CHECK_DIR).toBe('.data/claim-check');
    expect(env.CLAIM_CHECK_RETENTION_HOURS).toBeUndefined();
    expect(() => loadEnvConfig({ CLAIM_CHECK_THRESHOLD_BYTES: '4194304' })).toThrow(ConfigError);
    expect(() => loadEnvConfig({ CLAIM_CHECK_THRESHOLD_BYTES: '4194304' })).toThrow(/CLAIM_CHECK_THRESHOLD_BYTES: must be at most 1572864/);
    expect(() => loadEnvConfig({ CLAIM_CHECK_THRESHOLD_BYTES: 'lots' })).toThrow(/CLAIM_CHECK_THRESHOLD_BYTES/);
    expect(() => loadEnvConfig({ CLAIM_CHECK_RETENTION_HOURS: '0' })).toThrow(/CLAIM_CHECK_RETENTION_HOURS: must be at least 1/);
  });
});
