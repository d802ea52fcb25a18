/**
 * 7. What the payload codec costs a turn (issue 24): every payload of a real 1-tool-step turn's
 * history (read back from Temporal and opened to clear), encoded and decoded once, as its writer and
 * its reader do, through the data converter of src/security/data-converter.ts: no codec, encryption,
 * the claim check alone, and both, interleaved; then one 1 MiB answer payload, which the claim check
 * stores by reference. Against Temporal's floor for the turn's shape, measured in the same run. The
 * figures are the codec's own time in this process (CPU-bound: AES-GCM, sha-256, the directory
 * store's writes and reads), which a worker and the API pay beside the floor.
 */
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { defaultPayloadConverter, type Payload, type PayloadCodec } from '@temporalio/common';
import type { TestSystem } from '../../tests/helpers/system';
import { directoryBlobStore } from '../../src/security/blob-store';
import { DEFAULT_CLAIM_CHECK_THRESHOLD } from '../../src/security/claim-check';
import { dataConverterFor } from '../../src/security/data-converter';
import { summarize, table, type Summary } from '../lib/stats';
import { log, type Options } from '../options';
import type { FloorShape } from '../floor/workflows';
import type { Paths } from '../paths';

const CONFIGS = ['none', 'encryption', 'claimCheck', 'both'] as const;
type Config = (typeof CONFIGS)[number];
const LABEL: Record<Config, string> = { none: 'no codec', encryption: 'encryption (AES-256-GCM)', claimCheck: 'claim check alone', both: 'encryption + claim check' };
const MiB = 1024 * 1024;

export interface CodecResult {
  turns: number;
  shape: FloorShape;
  floor: Summary;
  /** The turn's payloads: how many, and their bytes in clear. */
  payloads: { count: number; bytes: number };
  /** Milliseconds per turn: every payload encoded and decoded once. */
  perTurn: Record<Config, Summary>;
  /** Milliseconds per 1 MiB payload encoded and decoded (stored by reference with the claim check). */
  large: Record<Config, Summary>;
}

/** Every Payload (an object with `data` bytes) in a history, wherever it sits. */
function payloadsIn(value: unknown, out: Payload[] = []): Payload[] {
  if (value === null || typeof value !== 'object' || ArrayBuffer.isView(value)) return out;
  const v = value as Record<string, unknown>;
  if (v['data'] instanceof Uint8Array && (v['metadata'] === undefined || typeof v['metadata'] === 'object')) {
    out.push(value as Payload);
    return out;
  }
  for (const child of Object.values(v)) payloadsIn(child, out);
  return out;
}

async function roundTrip(codecs: readonly PayloadCodec[], payloads: Payload[]): Promise<number> {
  const t0 = performance.now();
  let encoded = payloads;
  for (const c of codecs) encoded = await c.encode(encoded);
  for (const c of [...codecs].reverse()) encoded = await c.decode(encoded);
  return performance.now() - t0;
}

export async function codecSection(sys: TestSystem, paths: Paths, opts: Options): Promise<CodecResult> {
  const turns = Math.min(opts.turns, 40);
  log(`codec: a 1-tool-step turn's payloads through each codec, ${opts.warmup} warm-up + ${turns} rounds, and the floor of its shape`);
  const turnId = await paths.durable(1);
  const shape = await paths.shapeOf(turnId);
  // The history as stored, opened with the system's own codecs (sealed when the bench runs with keys).
  const stored = payloadsIn(await sys.client.workflow.getHandle(turnId).fetchHistory());
  let clear = stored;
  for (const c of [...sys.client.options.loadedDataConverter.payloadCodecs].reverse()) clear = await c.decode(clear);
  const keyring = { keys: [{ id: 'bench', key: randomBytes(32) }] };
  const claimCheck = { store: directoryBlobStore(path.join(sys.dir, 'bench-claim-check')), thresholdBytes: DEFAULT_CLAIM_CHECK_THRESHOLD };
  const codecs: Record<Config, readonly PayloadCodec[]> = {
    none: [],
    encryption: dataConverterFor(keyring).payloadCodecs ?? [],
    claimCheck: dataConverterFor(undefined, claimCheck).payloadCodecs ?? [],
    both: dataConverterFor(keyring, claimCheck).payloadCodecs ?? [],
  };
  const answer = [defaultPayloadConverter.toPayload({ text: randomBytes(MiB / 2).toString('hex') })];
  const perTurn: Record<Config, number[]> = { none: [], encryption: [], claimCheck: [], both: [] };
  const large: Record<Config, number[]> = { none: [], encryption: [], claimCheck: [], both: [] };
  const floor: number[] = [];
  for (let i = 0; i < opts.warmup + turns; i++) {
    const measured = i >= opts.warmup;
    const t0 = performance.now();
    await paths.floor(shape);
    if (measured) floor.push(performance.now() - t0);
    for (let j = 0; j < CONFIGS.length; j++) {
      const config = CONFIGS[(i + j) % CONFIGS.length] as Config;
      const turnMs = await roundTrip(codecs[config], clear);
      const largeMs = await roundTrip(codecs[config], answer);
      if (measured) {
        perTurn[config].push(turnMs);
        large[config].push(largeMs);
      }
    }
  }
  const summaries = (s: Record<Config, number[]>) => Object.fromEntries(CONFIGS.map((c) => [c, summarize(s[c])])) as Record<Config, Summary>;
  return {
    turns,
    shape,
    floor: summarize(floor),
    payloads: { count: clear.length, bytes: clear.reduce((n, p) => n + (p.data?.length ?? 0), 0) },
    perTurn: summaries(perTurn),
    large: summaries(large),
  };
}

export function renderCodec(r: CodecResult): string {
  const f = (n: number) => (n >= 100 ? n.toFixed(0) : n >= 1 ? n.toFixed(2) : n.toFixed(3));
  const pct = (n: number) => `${((n / r.floor.p50) * 100).toFixed(1)}%`;
  const rows = CONFIGS.map((c) => [
    LABEL[c],
    f(r.perTurn[c].p50),
    f(r.perTurn[c].p99),
    pct(r.perTurn[c].p50 - r.perTurn.none.p50),
    f(r.large[c].p50),
    f(r.large[c].p99),
  ]);
  return [
    `7. What the payload codec costs: the ${r.payloads.count} payloads (${(r.payloads.bytes / 1024).toFixed(0)} KiB) of a 1-tool-step turn encoded and decoded once per round, ${r.turns} rounds, ` +
      `interleaved with Temporal's floor of the turn's shape (${r.shape.local} local + ${r.shape.regular}); a 1 MiB answer payload beside it (stored by reference with the claim check)`,
    table(['codec', 'turn p50 ms', 'turn p99 ms', 'added/floor p50', '1 MiB p50 ms', '1 MiB p99 ms'], rows),
    `Floor p50 ${f(r.floor.p50)} ms. Codec cost per turn over none: encryption +${f(r.perTurn.encryption.p50 - r.perTurn.none.p50)} ms, ` +
      `claim check +${f(r.perTurn.claimCheck.p50 - r.perTurn.none.p50)} ms, both +${f(r.perTurn.both.p50 - r.perTurn.none.p50)} ms p50.`,
  ].join('\n');
}
