import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freshServersMb, stdioServersOf } from '../../soak/fresh';
import { SCHOOL } from '../helpers/school';

/**
 * The soak's measure of what a worker's stdio servers need for their data alone: the servers of an
 * MCP config, started afresh on a store and read a few times. More records, more memory.
 */
let dir: string;
beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'soak-fresh-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("the stdio servers of an MCP config are started on their store, read, and measured; a larger store needs more", async () => {
  const config = (data: string) => {
    const file = path.join(dir, `mcp-${path.basename(data)}.json`);
    const stdio = (name: string) => ({ command: process.execPath, args: [SCHOOL(name), '--stdio', '--data', data] });
    writeFileSync(file, JSON.stringify({ mcpServers: { admin: stdio('admin'), comms: stdio('comms'), payments: { url: 'http://127.0.0.1:1/mcp' } } }));
    return file;
  };
  const small = path.join(dir, 'small.json');
  const servers = stdioServersOf(config(small));
  expect(servers).toHaveLength(2);
  const seeded = await freshServersMb(servers);
  expect(seeded).toBeGreaterThan(10);

  // The same servers on a store with 20,000 more mails: each read parses all of it.
  const { readStore } = await import('../../examples/servers/school/store');
  const data = readStore(small);
  const mail = (i: number) => ({ id: `m-${i}`, tenantId: 'demo', to: `s${i}@school.example`, subject: 'Receipt', body: 'x'.repeat(200), idempotencyKey: `k-${i}`, sentAt: new Date(0).toISOString() });
  const large = path.join(dir, 'large.json');
  writeFileSync(large, JSON.stringify({ ...data, outbox: Array.from({ length: 20_000 }, (_, i) => mail(i)) }));
  expect(await freshServersMb(stdioServersOf(config(large)))).toBeGreaterThan(seeded + 5);
}, 60_000);
