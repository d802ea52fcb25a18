import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { Payload, PayloadCodec } from '@temporalio/common';

/**
 * Temporal's data converter codec for this project: every payload a worker or client hands the
 * Temporal service (workflow inputs and results, activity arguments and results, signals, updates,
 * queries, memos) is sealed with AES-256-GCM before it leaves the process, so the service's database
 * and anyone reading it see ciphertext and a key id. Search attributes never reach a codec (they are
 * indexes), and short one-line strings stay in clear: those are the activity and child-workflow
 * summaries that make histories legible (docs/decisions/0019-payload-encryption.md), and no payload of
 * ours is a bare string of that size otherwise (tests/unit/payload-codec-clear.test.ts guards it).
 *
 * Several keys decrypt; the first encrypts. Rotating adds a new key in front and keeps the old ones
 * until no history a worker might replay (or an operator might read) still uses them.
 */

/** The encoding of a sealed payload, and the metadata key naming the key that sealed it. */
export const ENCRYPTED_ENCODING = 'binary/encrypted';
export const KEY_ID_METADATA = 'encryption-key-id';

export interface PayloadKey {
  /** Short, stable, not secret: it is stored in clear beside every payload sealed with this key. */
  id: string;
  /** 32 bytes. */
  key: Buffer;
}

/** The keys in force: `keys[0]` seals, every one of them opens. */
export interface PayloadKeyring {
  keys: readonly PayloadKey[];
}

/** Strings this short, on one line, stay in clear: our summaries; user text never travels bare (see above). */
const CLEAR_STRING_MAX_BYTES = 200;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const textEncoder = new TextEncoder();

export class PayloadCodecError extends Error {
  override name = 'PayloadCodecError';
}

export function encodingOf(payload: Payload): string | undefined {
  const raw = payload.metadata?.encoding;
  return raw ? Buffer.from(raw).toString('utf8') : undefined;
}

/** A summary-sized JSON string: kept legible in the UI without the codec server. */
export function staysInClear(payload: Payload): boolean {
  const data = payload.data;
  if (encodingOf(payload) !== 'json/plain' || !data || data.length > CLEAR_STRING_MAX_BYTES) return false;
  const text = Buffer.from(data).toString('utf8');
  return text.startsWith('"') && !/[\n\r]|\\n|\\r/.test(text);
}

/**
 * The sealed plaintext is the whole payload, metadata included (an encoding such as `json/plain`
 * tells what the data is): [u32 length of the metadata JSON][metadata JSON][data].
 */
export function serializePayload(payload: Payload): Buffer {
  const metadata = Object.fromEntries(Object.entries(payload.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')]));
  const head = Buffer.from(JSON.stringify(metadata), 'utf8');
  const length = Buffer.alloc(4);
  length.writeUInt32BE(head.length);
  return Buffer.concat([length, head, Buffer.from(payload.data ?? new Uint8Array())]);
}

export function deserializePayload(plain: Buffer): Payload {
  const length = plain.readUInt32BE(0);
  const metadata = JSON.parse(plain.subarray(4, 4 + length).toString('utf8')) as Record<string, string>;
  return {
    metadata: Object.fromEntries(Object.entries(metadata).map(([k, v]) => [k, new Uint8Array(Buffer.from(v, 'base64'))])),
    data: new Uint8Array(plain.subarray(4 + length)),
  };
}

export function createPayloadCodec(keyring: PayloadKeyring): PayloadCodec {
  const [primary] = keyring.keys;
  if (!primary) throw new PayloadCodecError('payload codec: at least one key is required');
  for (const k of keyring.keys) {
    if (k.key.length !== 32) throw new PayloadCodecError(`payload codec: key ${k.id} must be 32 bytes`);
  }
  const byId = new Map(keyring.keys.map((k) => [k.id, k.key]));

  const seal = (payload: Payload): Payload => {
    if (staysInClear(payload)) return payload;
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', primary.key, iv);
    // The key id is authenticated: a payload cannot be relabelled to another key.
    cipher.setAAD(Buffer.from(primary.id, 'utf8'));
    const body = Buffer.concat([cipher.update(serializePayload(payload)), cipher.final()]);
    return {
      metadata: { encoding: textEncoder.encode(ENCRYPTED_ENCODING), [KEY_ID_METADATA]: textEncoder.encode(primary.id) },
      data: new Uint8Array(Buffer.concat([iv, body, cipher.getAuthTag()])),
    };
  };

  const open = (payload: Payload): Payload => {
    if (encodingOf(payload) !== ENCRYPTED_ENCODING) return payload;
    const rawId = payload.metadata?.[KEY_ID_METADATA];
    const id = rawId ? Buffer.from(rawId).toString('utf8') : '';
    const key = byId.get(id);
    if (!key) {
      throw new PayloadCodecError(`payload sealed with key "${id}", which is not among the configured payload keys (PAYLOAD_KEYS or PAYLOAD_KEY_FILE)`);
    }
    const raw = Buffer.from(payload.data ?? new Uint8Array());
    if (raw.length < IV_BYTES + TAG_BYTES) throw new PayloadCodecError(`payload sealed with key "${id}" is truncated`);
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, IV_BYTES));
      decipher.setAAD(Buffer.from(id, 'utf8'));
      decipher.setAuthTag(raw.subarray(raw.length - TAG_BYTES));
      return deserializePayload(Buffer.concat([decipher.update(raw.subarray(IV_BYTES, raw.length - TAG_BYTES)), decipher.final()]));
    } catch {
      throw new PayloadCodecError(`payload sealed with key "${id}" does not open with the configured key of that id (altered, or a different key under the same id)`);
    }
  };

  return {
    encode: async (payloads) => payloads.map(seal),
    decode: async (payloads) => payloads.map(open),
  };
}
