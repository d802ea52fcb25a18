/**
 * Resource subscriptions: a resource the pool read is subscribed to where the server supports it, and
 * `notifications/resources/updated` drops it from the resilient hub's cache, so the next turn reads it
 * afresh instead of waiting out the TTL. Against `server-everything`, whose toggle tool starts sending
 * updates for subscribed resources (every 5 s).
 */
import { parseMcpConfig } from '../../src/mcp/config';
import { McpServerHub } from '../../src/mcp/pool';
import { ResilientHub } from '../../src/mcp/resilience';
import { EVERYTHING_SERVER } from '../helpers/system';

const URI = 'demo://resource/dynamic/text/1';

test('a read resource is subscribed to; its update reaches the callback', async () => {
  const updates: Array<[string, string]> = [];
  const hub = new McpServerHub(parseMcpConfig({ mcpServers: { everything: { command: process.execPath, args: [EVERYTHING_SERVER, 'stdio'] } } }, {}, process.cwd(), 'test'), {
    onResourceUpdated: (server, uri) => updates.push([server, uri]),
  });
  try {
    expect(await hub.readResource('everything', URI)).toContain('Resource 1');
    await hub.callTool({ server: 'everything', tool: 'toggle-subscriber-updates', arguments: {} });
    const deadline = Date.now() + 15_000;
    while (updates.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(updates[0]).toEqual(['everything', URI]);
  } finally {
    await hub.close();
  }
}, 30_000);

test('an update drops that resource from the cache, and only that one', async () => {
  const reads: string[] = [];
  const inner = {
    catalog: () => Promise.resolve({ tools: [], servers: [] }),
    callTool: () => Promise.resolve({ isError: false, text: '' }),
    status: () => Promise.resolve([]),
    close: () => Promise.resolve(),
    getPrompt: () => Promise.resolve(''),
    readResource: (server: string, uri: string) => {
      reads.push(uri);
      return Promise.resolve(`${server} ${uri} #${reads.length}`);
    },
  };
  const hub = new ResilientHub(inner, { breaker: { failureThreshold: 5, cooldownMs: 1_000 }, cache: { ttlMs: 60_000, maxStaleMs: 60_000 } });
  await hub.readResource('s', 'a://1');
  await hub.readResource('s', 'a://2');
  await hub.readResource('s', 'a://1');
  expect(reads).toEqual(['a://1', 'a://2']);
  hub.invalidateResource('s', 'a://1');
  expect(await hub.readResource('s', 'a://1')).toBe('s a://1 #3');
  await hub.readResource('s', 'a://2');
  expect(reads).toEqual(['a://1', 'a://2', 'a://1']);
});
