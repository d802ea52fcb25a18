/**
 * Issue 27 §4, "say a repeated failure once with a back-off": a server that cannot start (a wrong
 * command) is warned about once, and the health reports' checks (status(), every WORKER_REPORT_MS)
 * try it again with a back-off instead of at every report. The hub runs on the test's clock: ten
 * minutes of reports every 5 s take moments. The connects are real (the command is not found).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseMcpConfig } from '../../src/mcp/config';
import { McpServerHub, type HubLogger } from '../../src/mcp/pool';

interface Logged {
  level: string;
  msg: string;
  obj: Record<string, unknown>;
  /** The test clock when it was logged. */
  at: number;
}

let dir: string;
beforeAll(() => (dir = mkdtempSync(path.join(tmpdir(), 'dmh-backoff-'))));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const START = 1_000_000;
const REPORT_EVERY_MS = 5_000;

function hubOnTestClock() {
  const clock = { now: START };
  const lines: Logged[] = [];
  const record = (level: string) => (obj: object, msg = '') => void lines.push({ level, msg, obj: obj as Record<string, unknown>, at: clock.now });
  const logger: HubLogger = { debug: record('debug'), info: record('info'), warn: record('warn'), error: record('error') };
  const config = parseMcpConfig({ mcpServers: { nocmd: { command: 'definitely-not-a-command-4711' } } }, {}, dir);
  const hub = new McpServerHub(config, { logger, now: () => clock.now });
  /** Every connect that was made and failed: said at warn (the first, a reminder) or at debug. */
  const attempts = () => lines.filter((l) => /^MCP server (still )?unavailable/.test(l.msg) && l.obj['server'] === 'nocmd');
  const warnings = () => attempts().filter((l) => l.level === 'warn');
  return { clock, hub, attempts, warnings };
}

test('reports every 5 s for ten minutes: the connects back off to one a minute, two warnings in all', async () => {
  const { clock, hub, attempts, warnings } = hubOnTestClock();
  try {
    for (let report = 0; report < 120; report++) {
      clock.now += REPORT_EVERY_MS;
      const [status] = await hub.status();
      // Every report says the server is down and why, tried or not.
      expect(status).toMatchObject({ server: 'nocmd', state: 'unavailable' });
      expect(status?.error).toMatch(/ENOENT|not found|definitely-not-a-command-4711/);
    }
    const at = attempts().map((l) => (l.at - START) / 1000);
    const gaps = at.slice(1).map((t, i) => t - (at[i] as number));
    // 0.5 s after the first failure, doubling: the reports 5 s apart meet it until it passes 5 s,
    // then it grows (10, 20, 35) until its cap of a minute. Without the back-off: 120 connects.
    expect(at[0]).toBe(5);
    expect(gaps.slice(0, 7)).toEqual([5, 5, 5, 5, 10, 20, 35]);
    expect(gaps.slice(7).every((g) => g === 60)).toBe(true);
    expect(at).toHaveLength(16);
    // Said at warn once, and once more as a reminder after five minutes with the count in between.
    expect(warnings().map((l) => (l.at - START) / 1000)).toEqual([5, 330]);
    expect(warnings()[1]?.obj).toMatchObject({ failedConnectsSinceLastWarning: 10 });
    expect(attempts().filter((l) => l.level === 'debug')).toHaveLength(14);
  } finally {
    await hub.close();
  }
});

test("a turn's catalog is not held back by the reports' back-off: it tries at once", async () => {
  const { clock, hub, attempts } = hubOnTestClock();
  try {
    // Ten failed connects in a row: the reports' back-off is a minute by now.
    for (let i = 0; i < 10; i++) {
      clock.now += 60_000;
      await hub.status();
    }
    expect(attempts()).toHaveLength(10);
    clock.now += 1_000;
    await hub.status();
    expect(attempts()).toHaveLength(10);
    // A turn's listing past the fail-fast window (half a second) connects again...
    const catalog = await hub.catalog();
    expect(catalog.servers).toEqual([expect.objectContaining({ server: 'nocmd', state: 'unavailable' })]);
    expect(attempts()).toHaveLength(11);
    // ...and a report right after it does not.
    clock.now += 1_000;
    await hub.status();
    expect(attempts()).toHaveLength(11);
  } finally {
    await hub.close();
  }
});
