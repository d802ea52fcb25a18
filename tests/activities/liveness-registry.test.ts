import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ActivityNotFoundError } from '@temporalio/client';
import type { ApplicationFailure } from '@temporalio/common';
import { spawnManaged, type ManagedProcess } from '../../src/cli/processes';
import { fileLivenessRegistry } from '../../src/liveness/file-registry';
import { postgresLivenessRegistry } from '../../src/liveness/pg-registry';
import { reapOnce } from '../../src/liveness/reaper';
import type { LivenessRegistry, Orphan } from '../../src/liveness/registry';
import { usePostgres } from '../helpers/postgres';
import { quietLogger } from '../helpers/quiet-logger';
import { DIST, requireBuild } from '../helpers/system';

/**
 * Both liveness backends (src/liveness): a member process that is SIGKILLed leaves its recorded
 * calls to the reapers at once; one whose event loop is blocked (alive, too busy to answer anything)
 * is never taken for dead; a member that closes leaves nothing behind.
 */
jest.setTimeout(120_000);

const pg = usePostgres();
const dirs: string[] = [];
const procs: ManagedProcess[] = [];
afterAll(async () => {
  for (const p of procs) await p.kill().catch(() => undefined);
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function member(backend: string[], token: string, busy = false): Promise<ManagedProcess> {
  const { proc } = await spawnManaged('member', process.execPath, [path.join(DIST, 'tests/helpers/liveness-member.js'), ...backend, '--token', token, ...(busy ? ['--busy'] : [])], {
    readyLine: /^JOINED \S+$/,
    readyTimeoutMs: 60_000,
  });
  procs.push(proc);
  return proc;
}

const tokens = (orphans: readonly Orphan[]) => orphans.map((o) => Buffer.from(o.taskToken).toString('hex')).sort();

/** Polls orphans() until `until` holds of them (a generous deadline, no fixed sleep). */
async function orphansUntil(registry: LivenessRegistry, until: (o: Orphan[]) => boolean): Promise<Orphan[]> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const found = await registry.orphans();
    if (until(found) || Date.now() > deadline) return found;
    await new Promise((r) => setTimeout(r, 50));
  }
}

const backends: Array<[string, () => { args: string[]; registry: () => Promise<LivenessRegistry> }]> = [
  ['files (one host)', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'dmh-liveness-'));
    dirs.push(dir);
    return { args: ['--file', dir], registry: async () => fileLivenessRegistry(dir) };
  }],
  ['PostgreSQL (advisory locks)', () => ({ args: ['--pg', pg.url()], registry: async () => await postgresLivenessRegistry(pg.pool(), pg.url()) })],
];

describe.each(backends)('liveness registry on %s', (_name, open) => {
  test('a killed member\'s call is an orphan at once; a blocked member\'s and a closed member\'s never are', async () => {
    requireBuild();
    const { args, registry: openRegistry } = open();
    const registry = await openRegistry();
    const dead = await member(args, 'dead01');
    const busy = await member(args, 'b05901', true);
    // This process is a member too: it closes, as a worker that stops by itself does.
    const self = await registry.join();
    const selfKey = await self.add({ taskToken: new Uint8Array([0xce]), workflowId: 'wf-self', activityId: '1', attempt: 2 });
    expect(tokens(await registry.orphans())).toEqual([]);

    const killedAt = Date.now();
    await dead.kill();
    const found = await orphansUntil(registry, (o) => tokens(o).includes('dead01'));
    process.stderr.write(`liveness (${_name}): kill → orphan seen ${Date.now() - killedAt} ms\n`);
    // The blocked member is alive all along: only the killed one's call.
    expect(tokens(found)).toEqual(['dead01']);
    expect(found[0]).toMatchObject({ workflowId: 'wf-dead01', activityId: '1', attempt: 1 });

    await registry.forget(found);
    expect(tokens(await registry.orphans())).toEqual([]);

    await self.remove(selfKey);
    await self.add({ taskToken: new Uint8Array([0xcf]), workflowId: 'wf-self', activityId: '2', attempt: 1 });
    await self.close();
    expect(tokens(await registry.orphans())).toEqual([]);
    await busy.kill();
    expect(tokens(await orphansUntil(registry, (o) => o.length > 0))).toEqual(['b05901']);
    await registry.close();
  });
});

test('files: another host\'s members are never judged (their pids mean nothing here)', async () => {
  requireBuild();
  const dir = mkdtempSync(path.join(tmpdir(), 'dmh-liveness-'));
  dirs.push(dir);
  const here = fileLivenessRegistry(dir);
  const elsewhere = fileLivenessRegistry(dir, { host: 'another-host.example' });
  const dead = await member(['--file', dir], 'a1');
  await dead.kill();
  expect(tokens(await orphansUntil(here, (o) => o.length > 0))).toEqual(['a1']);
  expect(await elsewhere.orphans()).toEqual([]);
});

test('reapOnce fails each orphan by its task token; an attempt already ended counts as done, an unreachable Temporal keeps it', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'dmh-liveness-'));
  dirs.push(dir);
  // Members that "died": their pid is never a running process.
  const registry = fileLivenessRegistry(dir, { exists: () => false });
  const m = await registry.join();
  for (const t of [1, 2, 3]) await m.add({ taskToken: new Uint8Array([t]), workflowId: `wf-${t}`, activityId: String(t), attempt: t });
  const failed: Array<{ token: number; failure: ApplicationFailure }> = [];
  const fail = async (token: Uint8Array, failure: ApplicationFailure) => {
    if (token[0] === 2) throw new ActivityNotFoundError('Not found');
    if (token[0] === 3) throw new Error('connection refused');
    failed.push({ token: token[0] as number, failure });
  };
  const resets: string[] = [];
  const resetSticky = async (workflowId: string) => void resets.push(workflowId);
  expect(await reapOnce(registry, { fail, resetSticky }, quietLogger)).toBe(2);
  expect(failed.map((f) => f.token)).toEqual([1]);
  // The failed attempt's workflow goes on from the shared queue, not the dead worker's sticky one.
  expect(resets).toEqual(['wf-1']);
  expect(failed[0]?.failure).toMatchObject({ type: 'WorkerLost', nonRetryable: false });
  expect(failed[0]?.failure.message).toMatch(/^the worker running attempt 1 died \(.+\); the call is retried on a live worker$/);
  // Only the attempt Temporal could not be told about is left, for the next round.
  expect(tokens(await registry.orphans())).toEqual(['03']);
});
