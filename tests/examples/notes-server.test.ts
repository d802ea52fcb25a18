/**
 * The notes example server as the compose stack runs it: one stdio copy per worker, all on one data
 * file. Concurrent add_note calls through two processes lose no note (the file's lock holds between
 * processes of one host).
 */
import { readFileSync } from 'node:fs';
import { compileExamples } from '../helpers/compile-examples';
import { callTool, connectStdio, tempDir } from '../school/helpers';

jest.setTimeout(90_000);

const tmp = tempDir('notes-test-');
let script: string;

beforeAll(async () => {
  [script] = (await compileExamples(['examples/servers/notes-server.ts'], 'notes-server')) as [string];
}, 180_000);

afterAll(() => tmp.remove());

test('two processes on one file, 40 parallel add_note calls: every note is kept', async () => {
  const file = tmp.file('notes.json');
  const a = await connectStdio(script, file);
  const b = await connectStdio(script, file);
  try {
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) => callTool(i % 2 === 0 ? a.client : b.client, 'add_note', { text: `note ${i}` }, { key: `turn-notes/step-1/call-${i}` })),
    );
    expect(results.every((r) => !r.isError)).toBe(true);
    const stored = JSON.parse(readFileSync(file, 'utf8')) as { notes: Array<{ text: string }>; idempotency: Record<string, unknown> };
    expect(stored.notes.map((n) => n.text).sort()).toEqual(Array.from({ length: 40 }, (_, i) => `note ${i}`).sort());
    expect(Object.keys(stored.idempotency)).toHaveLength(40);
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
});
