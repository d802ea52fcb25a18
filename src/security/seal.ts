import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

/**
 * Sealing a user's bearer token for the trip through workflow history: AES-256-GCM under a key only
 * the API and the workers hold (TOKEN_SEAL_KEY). History (and anyone reading it in the Temporal UI)
 * sees ciphertext; a tampered or foreign value fails to open.
 */
const VERSION = 'v1';

function keyOf(secret: string): Buffer {
  if (secret.length < 32) throw new Error('TOKEN_SEAL_KEY must be at least 32 characters');
  return createHash('sha256').update(secret).digest();
}

export function sealToken(token: string, secret: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', keyOf(secret), iv);
  const body = Buffer.concat([cipher.update(token, 'utf8'), cipher.final()]);
  return `${VERSION}.${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url')}`;
}

/** The token, or undefined when the value was not sealed with this key (or was altered). */
export function unsealToken(sealed: string, secret: string): string | undefined {
  const [version, data] = sealed.split('.');
  if (version !== VERSION || !data) return undefined;
  const raw = Buffer.from(data, 'base64url');
  if (raw.length < 29) return undefined;
  try {
    const decipher = createDecipheriv('aes-256-gcm', keyOf(secret), raw.subarray(0, 12));
    decipher.setAuthTag(raw.subarray(12, 28));
    return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
  } catch {
    return undefined;
  }
}
