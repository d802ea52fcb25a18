/**
 * The liveness registry without PostgreSQL: workers on one host, a directory they share
 * (WORKER_LIVENESS_DIR, by default .data/workers). Each worker has a folder holding `worker.json`
 * (its pid and host name) and one file per running attempt. A worker is dead when its host is this
 * host and no process has its pid (`kill(pid, 0)` answers ESRCH): the kernel says so the moment the
 * process ends, however slow a living one is. Folders of other hosts (a volume shared across
 * machines or containers) are never judged: their calls fall back to the heartbeat timeout.
 *
 * A pid the system hands to a new process before the reaper looked keeps the dead worker "alive":
 * also the heartbeat timeout then, never a live worker's call failed.
 *
 * A call's own file is written and removed with synchronous calls: a few syscalls on a local disk
 * take microseconds, where each asynchronous one waits for a thread-pool trip and a turn of the
 * worker's event loop, and these are on every tool call's path (docs/decisions/0048).
 */
import { randomBytes } from 'node:crypto';
import { renameSync, rmSync, writeFileSync } from 'node:fs';
import { mkdir, readdir, readFile, rm } from 'node:fs/promises';
import { hostname } from 'node:os';
import path from 'node:path';
import { type InFlight, type LivenessRegistry, type Membership, type Orphan, tokenKey } from './registry';

const SELF = 'worker.json';

interface WorkerFile {
  pid: number;
  host: string;
  startedAt: string;
}

interface EntryFile {
  taskToken: string;
  workflowId: string;
  activityId: string;
  attempt: number;
}

/** Whether a process with this pid exists on this host (EPERM: it does, under another user). */
export function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Written whole or not at all: a reader never sees half a file. */
function writeAtomically(file: string, value: unknown): void {
  const tmp = `${file}.${randomBytes(4).toString('hex')}.tmp`;
  writeFileSync(tmp, JSON.stringify(value), { mode: 0o600 });
  renameSync(tmp, file);
}

async function readJson<T>(file: string): Promise<T | undefined> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as T;
  } catch {
    // Gone (reaped, finished) or being replaced: looked at again on the next round.
    return undefined;
  }
}

export function fileLivenessRegistry(dir: string, opts: { host?: string; exists?: (pid: number) => boolean } = {}): LivenessRegistry {
  const host = opts.host ?? hostname();
  const exists = opts.exists ?? processExists;

  async function deadWorkers(): Promise<string[]> {
    const names = await readdir(dir).catch(() => [] as string[]);
    const dead: string[] = [];
    for (const name of names) {
      const self = await readJson<WorkerFile>(path.join(dir, name, SELF));
      if (self && self.host === host && Number.isInteger(self.pid) && !exists(self.pid)) dead.push(name);
    }
    return dead;
  }

  return {
    async join(): Promise<Membership> {
      const worker = `${host}-${process.pid}-${randomBytes(3).toString('hex')}`;
      const own = path.join(dir, worker);
      await mkdir(own, { recursive: true, mode: 0o700 });
      writeAtomically(path.join(own, SELF), { pid: process.pid, host, startedAt: new Date().toISOString() } satisfies WorkerFile);
      return {
        worker,
        async add(entry: InFlight) {
          const key = tokenKey(entry.taskToken);
          const file: EntryFile = { taskToken: Buffer.from(entry.taskToken).toString('base64'), workflowId: entry.workflowId, activityId: entry.activityId, attempt: entry.attempt };
          writeAtomically(path.join(own, `${key}.json`), file);
          return key;
        },
        async remove(key: string) {
          rmSync(path.join(own, `${key}.json`), { force: true });
        },
        async close() {
          // A worker that stops by itself has finished its calls: nothing of it is left to reap.
          await rm(own, { recursive: true, force: true });
        },
      };
    },

    async orphans(): Promise<Orphan[]> {
      const found: Orphan[] = [];
      for (const worker of await deadWorkers()) {
        const files = await readdir(path.join(dir, worker)).catch(() => [] as string[]);
        for (const name of files) {
          if (name === SELF || !name.endsWith('.json')) continue;
          const e = await readJson<EntryFile>(path.join(dir, worker, name));
          if (!e || typeof e.taskToken !== 'string') continue;
          found.push({ worker, key: name.slice(0, -'.json'.length), taskToken: new Uint8Array(Buffer.from(e.taskToken, 'base64')), workflowId: e.workflowId, activityId: e.activityId, attempt: e.attempt });
        }
        // A dead worker with nothing running leaves nothing behind.
        if (!files.some((n) => n !== SELF && n.endsWith('.json'))) await rm(path.join(dir, worker), { recursive: true, force: true });
      }
      return found;
    },

    async forget(orphans: readonly Orphan[]) {
      for (const o of orphans) await rm(path.join(dir, o.worker, `${o.key}.json`), { force: true });
    },

    async close() {
      // Nothing held open.
    },
  };
}
