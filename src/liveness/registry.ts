/**
 * Worker liveness: which tool calls each worker is running, and whether that worker is still alive
 * (docs/decisions/0028-worker-liveness.md).
 *
 * A worker that dies mid call says nothing to Temporal; the heartbeat timeout (10 s) is the only
 * thing that notices. Instead, every worker records its running tool-call activities in a registry
 * shared with its peers, and proves it is alive in a way that ends the moment its process does: a
 * PostgreSQL session-level advisory lock on a connection of its own (./pg-registry.ts), or, on one
 * host without PostgreSQL, a file with its pid checked with `kill(pid, 0)` (./file-registry.ts). A
 * reaper in every worker (./reaper.ts) fails a dead worker's recorded calls at once, and their next
 * attempt starts on a live worker.
 *
 * Neither proof depends on timing: a slow or blocked event loop keeps its lock and its pid, so no
 * live worker is ever taken for dead for being busy. A machine that is lost (power, network) keeps
 * neither answer honest and is left to the heartbeat timeout.
 */
import { createHash } from 'node:crypto';

/** One running attempt of an activity, as its worker recorded it. */
export interface InFlight {
  /** The attempt's task token: completing by it reaches this attempt only, never a later one. */
  taskToken: Uint8Array;
  workflowId: string;
  activityId: string;
  attempt: number;
}

/** An attempt recorded by a worker that is provably gone. */
export interface Orphan extends InFlight {
  /** The dead worker's registry name. */
  worker: string;
  /** The backend's key of the entry, for forget(). */
  key: string;
}

/** A worker's own part of the registry: open as long as the worker runs. */
export interface Membership {
  /** This worker's name in the registry (also in the reaper's failure messages). */
  readonly worker: string;
  /** Records a running attempt; resolves with the key remove() takes. */
  add(entry: InFlight): Promise<string>;
  remove(key: string): Promise<void>;
  /** Ends the proof of life: the entries still recorded become orphans. */
  close(): Promise<void>;
}

export interface LivenessRegistry {
  /** Joins as a worker: from now on alive until close() or the process ends. */
  join(): Promise<Membership>;
  /** Attempts recorded by workers that are gone. */
  orphans(): Promise<Orphan[]>;
  /** Drops reaped entries (and what is left of their workers). */
  forget(orphans: readonly Orphan[]): Promise<void>;
  close(): Promise<void>;
}

/** A stable text key for a task token (file names, log lines): its SHA-256 in hex. */
export function tokenKey(taskToken: Uint8Array): string {
  return createHash('sha256').update(taskToken).digest('hex');
}
