import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Payload } from '@temporalio/common';
import { staysInClear } from '../../src/security/payload-codec';

/**
 * The codec leaves short one-line strings in clear because our summaries are such strings and no
 * other payload of ours is. This holds it to that over every committed history (real runs): each
 * payload that would stay in clear sits in a summary (user metadata). Search attributes and headers
 * never reach a codec and are not counted.
 */
const HISTORIES = path.resolve(__dirname, '..', 'histories');

function* clearPayloads(node: unknown, at: string): Generator<{ at: string; text: string }> {
  if (Array.isArray(node)) {
    for (const item of node) yield* clearPayloads(item, at);
    return;
  }
  if (!node || typeof node !== 'object') return;
  const o = node as Record<string, unknown>;
  const metadata = o.metadata as Record<string, string> | undefined;
  if (metadata && typeof metadata.encoding === 'string' && typeof o.data === 'string') {
    const payload: Payload = {
      metadata: Object.fromEntries(Object.entries(metadata).map(([k, v]) => [k, new Uint8Array(Buffer.from(v, 'base64'))])),
      data: new Uint8Array(Buffer.from(o.data, 'base64')),
    };
    if (staysInClear(payload)) yield { at, text: Buffer.from(payload.data!).toString('utf8') };
    return;
  }
  for (const [key, value] of Object.entries(o)) {
    if (key === 'searchAttributes' || key === 'header') continue;
    yield* clearPayloads(value, `${at}.${key}`);
  }
}

test('in every committed history, the payloads the codec would leave in clear are summaries', () => {
  const files = readdirSync(HISTORIES).filter((f) => f.endsWith('.json'));
  expect(files.length).toBeGreaterThan(10);
  const found: Array<{ file: string; at: string; text: string }> = [];
  for (const file of files) {
    for (const p of clearPayloads(JSON.parse(readFileSync(path.join(HISTORIES, file), 'utf8')), '')) found.push({ file, ...p });
  }
  expect(found.length).toBeGreaterThan(0);
  expect(found.filter((p) => !p.at.endsWith('.userMetadata.summary'))).toEqual([]);
});
