/**
 * MCP servers that misbehave (issue 26 §2), through the tool-call activity with the real hub: each
 * gives a clear outcome within the call's timeout, and the worker's memory and connections stay
 * bounded. The server is tests/fixtures/misbehaving-server.ts, over stdio and over Streamable HTTP.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import type { createActivities } from '../../src/activities';
import { parseMcpConfig } from '../../src/mcp/config';
import type { McpServerHub } from '../../src/mcp/pool';
import { Failure } from '../../src/shared/failures';
import type { ToolOutcome } from '../../src/shared/tool-types';
import { waitFor } from '../helpers/http';
import { MISBEHAVING_SERVER, peakRssGrowthMb, startMisbehavingHttp, type MisbehavingHttp } from '../helpers/misbehaving';
import { requireBuild } from '../helpers/system';
import { toolActivities } from '../helpers/tool-activities';

const CALL_MS = 3_000;
const TOTAL_MS = 6_000;
const MAX_BYTES = 1024 * 1024;
/** Generous slack over a limit on a loaded machine: a bound, not a measurement. */
const SLACK_MS = 20_000;

let dir: string;
let http: MisbehavingHttp;
let hub: McpServerHub;
let acts: ReturnType<typeof createActivities>;

beforeAll(async () => {
  requireBuild();
  dir = mkdtempSync(path.join(tmpdir(), 'dmh-misbehave-'));
  http = await startMisbehavingHttp();
  const limits = { timeouts: { callMs: CALL_MS, callTotalMs: TOTAL_MS }, maxMessageBytes: MAX_BYTES };
  const config = parseMcpConfig(
    {
      mcpServers: {
        stdio: { command: process.execPath, args: [MISBEHAVING_SERVER, '--stdio', '--effects', path.join(dir, 'effects.txt')], ...limits },
        http: { url: http.url, transport: 'streamable-http', ...limits },
        legacy: { url: new URL('/sse', http.url).href, transport: 'sse', ...limits },
        // For the flood, which takes seconds on a loaded machine: no total limit of a few seconds.
        'stdio-flood': { command: process.execPath, args: [MISBEHAVING_SERVER, '--stdio'], timeouts: { callMs: CALL_MS }, maxMessageBytes: MAX_BYTES },
        'http-flood': { url: http.url, transport: 'streamable-http', timeouts: { callMs: CALL_MS }, maxMessageBytes: MAX_BYTES },
      },
    },
    {},
    dir,
  );
  ({ hub, acts } = toolActivities(config));
  await hub.catalog();
}, 60_000);

afterAll(async () => {
  await hub?.close();
  await http?.proc.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const input = (server: string, tool: string) => ({
  turnId: 'turn-m-1',
  server,
  tool,
  llmName: `${server}__${tool}`,
  arguments: {},
  idempotencyKey: `k-${Math.random()}`,
});

/** Runs the call in an attempt of `startToCloseTimeoutMs`; its outcome (a result or the activity's failure) and how long it took. */
async function run(server: string, tool: string, startToCloseTimeoutMs = 120_000): Promise<{ out?: ToolOutcome; err?: ApplicationFailure; ms: number }> {
  const started = Date.now();
  try {
    const out = (await new MockActivityEnvironment({ startToCloseTimeoutMs }).run(acts.callTool, input(server, tool))) as ToolOutcome;
    return { out, ms: Date.now() - started };
  } catch (err) {
    expect(err).toBeInstanceOf(ApplicationFailure);
    return { err: err as ApplicationFailure, ms: Date.now() - started };
  }
}

/** A call that must fail as "outcome unknown" (the fixture's tools are writes nothing vouches for), saying `why`. */
async function failsClearly(server: string, tool: string, why: RegExp): Promise<number> {
  const { out, err, ms } = await run(server, tool);
  expect(out).toBeUndefined();
  expect(err?.type).toBe(Failure.McpOutcomeUnknown);
  expect(err?.nonRetryable).toBe(true);
  expect(err?.message).toMatch(why);
  return ms;
}

async function answersOk(server: string): Promise<void> {
  expect((await run(server, 'ok')).out).toEqual({ isError: false, text: 'ok' });
}

describe.each(['stdio', 'http'])('over %s', (server) => {
  test('a server that never answers a call: a timeout within the call timeout, and the server stays usable', async () => {
    const ms = await failsClearly(server, 'hang', new RegExp(`request timed out after ${CALL_MS} ms`));
    expect(ms).toBeGreaterThanOrEqual(CALL_MS);
    expect(ms).toBeLessThan(CALL_MS + SLACK_MS);
    await answersOk(server);
    // Over HTTP the request we gave up on is not left open: the server sees its response closed.
    if (server === 'http') await waitFor(async () => ((await http.stats()).openResponses === 0 ? true : undefined), 30_000);
  }, 60_000);

  test('five calls that never answer hold nothing up: another call answers meanwhile, and all five end at their timeout', async () => {
    const hanging = Array.from({ length: 5 }, () => failsClearly(server, 'hang', new RegExp(`request timed out after ${CALL_MS} ms`)));
    await answersOk(server);
    const times = await Promise.all(hanging);
    for (const ms of times) expect(ms).toBeLessThan(CALL_MS + SLACK_MS);
    if (server === 'http') await waitFor(async () => ((await http.stats()).openResponses === 0 ? true : undefined), 30_000);
  }, 60_000);

  test('a 50 MB answer: refused at the size limit without holding it in memory, and the server stays usable', async () => {
    const { value: ms, growthMb } = await peakRssGrowthMb(() => failsClearly(server, 'huge', new RegExp(`larger than ${MAX_BYTES} bytes \\(maxMessageBytes\\)`)));
    expect(ms).toBeLessThan(CALL_MS + SLACK_MS);
    // The whole answer would take over 100 MB (the bytes, then the string); reading stops at 1 MB.
    expect(growthMb).toBeLessThan(40);
    if (server === 'http') {
      const { hugeBytesWritten } = await http.stats();
      expect(hugeBytesWritten).toBeLessThan(25 * 1024 * 1024);
    }
    await answersOk(server);
  }, 60_000);

  test('10,000 notifications during a call: the call completes, memory stays bounded', async () => {
    const { value, growthMb } = await peakRssGrowthMb(() => run(`${server}-flood`, 'flood'));
    expect(value.err?.message).toBeUndefined();
    expect(value.out).toEqual({ isError: false, text: 'sent 10000 notifications' });
    expect(value.ms).toBeLessThan(SLACK_MS);
    expect(growthMb).toBeLessThan(100);
  }, 60_000);

  test('progress forever: the call ends at its total limit (progress does not extend it), and the server hears it was cancelled', async () => {
    const ms = await failsClearly(server, 'progress_forever', new RegExp(`total time limit of ${TOTAL_MS} ms \\(callTotalMs`));
    expect(ms).toBeGreaterThanOrEqual(TOTAL_MS);
    expect(ms).toBeLessThan(TOTAL_MS + SLACK_MS);
    if (server === 'http') {
      await waitFor(async () => {
        const stats = await http.stats();
        return stats.openResponses === 0 && stats.cancelled > 0 ? true : undefined;
      }, 30_000);
    }
    await answersOk(server);
  }, 60_000);
});

test('progress forever in an attempt shorter than callTotalMs: the call ends before the attempt times out, saying why', async () => {
  const { err } = await run('stdio', 'progress_forever', 7_000);
  expect(err?.type).toBe(Failure.McpOutcomeUnknown);
  // The attempt's 7 s, less what went before the call and a 2 s margin; never below the idle timeout.
  const limit = Number(/total time limit of (\d+) ms \(callTotalMs, or the time the tool activity had left\)/.exec(err?.message ?? '')?.[1]);
  expect(limit).toBeGreaterThanOrEqual(CALL_MS);
  expect(limit).toBeLessThanOrEqual(5_000);
  await answersOk('stdio');
}, 60_000);

describe('over legacy HTTP+SSE (every answer on one stream)', () => {
  test('a call that never answers: a timeout within the call timeout, and the server stays usable', async () => {
    const ms = await failsClearly('legacy', 'hang', new RegExp(`request timed out after ${CALL_MS} ms`));
    expect(ms).toBeLessThan(CALL_MS + SLACK_MS);
    await answersOk('legacy');
  }, 60_000);

  test('a 50 MB event on the stream: refused at the size limit without holding it in memory, and the server stays usable', async () => {
    const { value: ms, growthMb } = await peakRssGrowthMb(() => failsClearly('legacy', 'huge', new RegExp(`larger than ${MAX_BYTES} bytes \\(maxMessageBytes\\)`)));
    expect(ms).toBeLessThan(CALL_MS + SLACK_MS);
    expect(growthMb).toBeLessThan(40);
    await answersOk('legacy');
  }, 60_000);
});

test('garbage on stdout: a clear error naming it, and the connection is restarted', async () => {
  await answersOk('stdio');
  const pid = hub.serverPid('stdio');
  const ms = await failsClearly('stdio', 'garbage', /lines in a row to stdout that are not JSON-RPC/);
  expect(ms).toBeLessThan(CALL_MS + SLACK_MS);
  await answersOk('stdio');
  expect(hub.serverPid('stdio')).not.toBe(pid);
}, 60_000);

test('a log line on stdout now and then is tolerated: the call answers on the same connection', async () => {
  await answersOk('stdio');
  const pid = hub.serverPid('stdio');
  expect((await run('stdio', 'noisy')).out).toEqual({ isError: false, text: 'noisy but fine' });
  expect(hub.serverPid('stdio')).toBe(pid);
}, 60_000);

test('an HTTP server that trickles a byte a second: a timeout within the call timeout, and the connection is closed', async () => {
  const ms = await failsClearly('http', 'trickle', new RegExp(`request timed out after ${CALL_MS} ms`));
  expect(ms).toBeLessThan(CALL_MS + SLACK_MS);
  await waitFor(async () => ((await http.stats()).trickling === 0 ? true : undefined), 30_000);
  await answersOk('http');
}, 60_000);

test('a server that crashes after the side effect and before the answer: outcome unknown, applied once, the next call respawns it', async () => {
  const ms = await failsClearly('stdio', 'crash', /^outcome unknown: the request was sent and the answer was lost \(.*\).*stdio\/crash may or may not have taken effect/);
  expect(ms).toBeLessThan(CALL_MS + SLACK_MS);
  expect(readFileSync(path.join(dir, 'effects.txt'), 'utf8')).toBe('crash applied\n');
  await answersOk('stdio');
}, 60_000);

// Last: the fixture's tool list stays changed for the rest of its life.
test.each(['stdio', 'http'])('a tool that leaves the list between two calls of a turn (%s): the second call is a clear tool result', async (server) => {
  expect((await run(server, 'vanish')).out).toEqual({ isError: false, text: 'vanished' });
  const { out } = await run(server, 'vanish');
  // With `tools/list_changed` (stdio) the worker knows before calling; without it (stateless HTTP) the server says so.
  expect(out?.isError).toBe(true);
  expect(out?.text).toMatch(server === 'stdio' ? /^Tool vanish no longer exists on server stdio\.$/ : /^Tool "vanish" on server "http" failed: .*Unknown tool: vanish/);
}, 60_000);
