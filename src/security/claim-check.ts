import { createHash } from 'node:crypto';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { deserializePayload, encodingOf, serializePayload } from './payload-codec';
import type { BlobStore } from './blob-store';

/**
 * The claim check of the data converter (docs/decisions/0022-claim-check.md): a payload larger than
 * the threshold is stored outside Temporal's history, under the sha-256 digest of its bytes, and the
 * history holds a small reference payload instead. It runs after the encryption codec when keys are
 * configured (`payloadCodecs: [encryption, claimCheck]`), so what it stores is the sealed payload:
 * the store holds ciphertext, the history holds a digest and a size.
 *
 * Decoding a reference reads the blob back and checks its digest; a blob that is gone (collected
 * after the retention, or written to another store) fails the decode with a ClaimCheckError that says
 * so, which fails the workflow task or activity (retried by Temporal) rather than the worker.
 */

/** The encoding of a reference payload, and its metadata: the blob's digest and size in bytes. */
export const CLAIM_CHECK_ENCODING = 'binary/claim-check';
export const CLAIM_CHECK_DIGEST_METADATA = 'claim-check-digest';
export const CLAIM_CHECK_SIZE_METADATA = 'claim-check-size';

/** 128 KiB: payloads above it are stored by reference. */
export const DEFAULT_CLAIM_CHECK_THRESHOLD = 128 * 1024;

export interface ClaimCheckOptions {
  store: BlobStore;
  /** Payloads whose serialized size (metadata and data) exceeds this many bytes are stored by reference. */
  thresholdBytes: number;
}

export class ClaimCheckError extends Error {
  override name = 'ClaimCheckError';
}

const textEncoder = new TextEncoder();
const DIGEST = /^sha256:[0-9a-f]{64}$/;

export function digestOf(bytes: Uint8Array): string {
  return `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
}

function metadataText(payload: Payload, key: string): string {
  const raw = payload.metadata?.[key];
  return raw ? Buffer.from(raw).toString('utf8') : '';
}

/** The reference a history holds: legible in the Temporal UI as it is (a digest and a size, no content). */
function referenceTo(digest: string, size: number): Payload {
  return {
    metadata: {
      encoding: textEncoder.encode(CLAIM_CHECK_ENCODING),
      [CLAIM_CHECK_DIGEST_METADATA]: textEncoder.encode(digest),
      [CLAIM_CHECK_SIZE_METADATA]: textEncoder.encode(String(size)),
    },
    data: textEncoder.encode(JSON.stringify({ claimCheck: digest, size })),
  };
}

export function isClaimCheckReference(payload: Payload): boolean {
  return encodingOf(payload) === CLAIM_CHECK_ENCODING;
}

export function createClaimCheckCodec(options: ClaimCheckOptions): PayloadCodec {
  const { store, thresholdBytes } = options;
  if (!Number.isInteger(thresholdBytes) || thresholdBytes < 1) throw new ClaimCheckError('claim check: the threshold must be a positive number of bytes');

  const checkIn = async (payload: Payload): Promise<Payload> => {
    // A reference is never stored again (a client re-encoding what it decoded only in part).
    if (isClaimCheckReference(payload)) return payload;
    const bytes = serializePayload(payload);
    if (bytes.length <= thresholdBytes) return payload;
    const digest = digestOf(bytes);
    await store.put(digest, bytes);
    return referenceTo(digest, bytes.length);
  };

  const checkOut = async (payload: Payload): Promise<Payload> => {
    if (!isClaimCheckReference(payload)) return payload;
    const digest = metadataText(payload, CLAIM_CHECK_DIGEST_METADATA);
    const size = metadataText(payload, CLAIM_CHECK_SIZE_METADATA);
    if (!DIGEST.test(digest)) throw new ClaimCheckError('a claim-check reference without a valid sha256 digest');
    const bytes = await store.get(digest);
    if (!bytes) {
      throw new ClaimCheckError(
        `payload stored by reference (${digest}, ${size} bytes) is missing from ${store.where}: removed after the retention, or written to another store (the worker and the API must share CLAIM_CHECK_DIR, or POSTGRES_URL)`,
      );
    }
    if (digestOf(bytes) !== digest) throw new ClaimCheckError(`payload stored by reference (${digest}) in ${store.where} does not match its digest (altered)`);
    return deserializePayload(Buffer.from(bytes));
  };

  return {
    // One at a time: a batch of large payloads is written in order, never several MiB in flight at once.
    encode: async (payloads) => {
      const out: Payload[] = [];
      for (const p of payloads) out.push(await checkIn(p));
      return out;
    },
    decode: async (payloads) => {
      const out: Payload[] = [];
      for (const p of payloads) out.push(await checkOut(p));
      return out;
    },
  };
}
