import { readFileSync } from 'node:fs';
import type { PayloadKey, PayloadKeyring } from '../security/payload-codec';

/**
 * The payload keys of the data converter (src/security/payload-codec.ts), from PAYLOAD_KEYS or the
 * file PAYLOAD_KEY_FILE names: `id:base64key` entries, comma- or newline-separated, the first one
 * encrypting and all of them decrypting. A key is 32 random bytes (`openssl rand -base64 32`).
 * Errors name the variable and the key id, never a key.
 */

const KEY_ID = /^[A-Za-z0-9._-]{1,64}$/;

export class PayloadKeyError extends Error {
  override name = 'PayloadKeyError';
}

/** Parses `id:base64key` entries; `source` names where they came from in error messages. */
export function parsePayloadKeys(text: string, source: string): PayloadKey[] {
  const entries = text
    .split('\n')
    .filter((line) => !line.trim().startsWith('#'))
    .flatMap((line) => line.split(','))
    .map((e) => e.trim())
    .filter((e) => e !== '');
  if (!entries.length) throw new PayloadKeyError(`${source}: no keys (expected id:base64key entries, the first one encrypting)`);
  const keys: PayloadKey[] = [];
  entries.forEach((entry, i) => {
    const colon = entry.indexOf(':');
    const id = colon > 0 ? entry.slice(0, colon) : '';
    if (!KEY_ID.test(id)) {
      throw new PayloadKeyError(`${source}: entry ${i + 1}: expected id:base64key with an id of letters, digits, '.', '_' or '-' (at most 64)`);
    }
    const encoded = entry.slice(colon + 1);
    const key = Buffer.from(encoded, 'base64');
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded) || key.length !== 32) {
      throw new PayloadKeyError(`${source}: key "${id}": must be 32 bytes in base64 (44 characters; e.g. openssl rand -base64 32)`);
    }
    if (keys.some((k) => k.id === id)) throw new PayloadKeyError(`${source}: key id "${id}" appears twice`);
    keys.push({ id, key });
  });
  return keys;
}

/** The keyring the environment configures, or undefined: payloads then travel as the SDK sends them. */
export function payloadKeyringFrom(env: { PAYLOAD_KEYS?: string | undefined; PAYLOAD_KEY_FILE?: string | undefined }): PayloadKeyring | undefined {
  if (env.PAYLOAD_KEYS && env.PAYLOAD_KEY_FILE) {
    throw new PayloadKeyError('environment: set PAYLOAD_KEYS or PAYLOAD_KEY_FILE, not both');
  }
  if (env.PAYLOAD_KEYS) return { keys: parsePayloadKeys(env.PAYLOAD_KEYS, 'PAYLOAD_KEYS') };
  if (env.PAYLOAD_KEY_FILE) {
    let text: string;
    try {
      text = readFileSync(env.PAYLOAD_KEY_FILE, 'utf8');
    } catch (err) {
      throw new PayloadKeyError(`PAYLOAD_KEY_FILE: cannot read ${env.PAYLOAD_KEY_FILE}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`);
    }
    return { keys: parsePayloadKeys(text, `PAYLOAD_KEY_FILE (${env.PAYLOAD_KEY_FILE})`) };
  }
  return undefined;
}
