import type { DataConverter } from '@temporalio/common';
import { createClaimCheckCodec, type ClaimCheckOptions } from './claim-check';
import { createPayloadCodec, type PayloadKeyring } from './payload-codec';

/**
 * The data converter of every worker and Temporal client of the project (worker, API, test system,
 * bench, replay): the one place its codecs are chained. Encoding runs them in array order, decoding
 * in reverse: a payload is sealed first (with keys), then, if it is still larger than the threshold,
 * stored by reference, so the claim-check store holds the sealed bytes and the history a digest
 * (docs/decisions/0019-payload-encryption.md, 0022-claim-check.md).
 */
export function dataConverterFor(keyring: PayloadKeyring | undefined, claimCheck?: ClaimCheckOptions): DataConverter {
  const payloadCodecs = [...(keyring ? [createPayloadCodec(keyring)] : []), ...(claimCheck ? [createClaimCheckCodec(claimCheck)] : [])];
  return payloadCodecs.length ? { payloadCodecs } : {};
}
