/**
 * The school servers' tools, independent of the MCP SDK that serves them: the caller's tenant and
 * user from `_meta`, the exactly-once effect transaction keyed by the idempotency key, the
 * fault-injection delay hook (progress, cancellation), and small result helpers. A server registers
 * its tools and resources on a `Registrar`; common.ts makes one for the v1 SDK (2025-11-25),
 * modern.ts one for the v2 server package (2026-07-28), so both revisions run the same code.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { produce } from 'immer';
import { z } from 'zod';
import { IDEMPOTENCY_KEY_META_KEY, TRACE_META_KEY, USER_CONTEXT_META_KEY } from '../../../src/shared/meta';
import { SchoolStore, type SchoolData, type StoredToolResult } from './store';

export type ServerName = 'admin' | 'payments' | 'comms' | 'student' | 'teacher';

export function makeLogger(server: ServerName): (message: string) => void {
  return (message) => process.stderr.write(`school-${server}[${process.pid}]: ${message}\n`);
}

// ------------------------------------------------------------------ results

/** A refusal the model should read (unknown id, already paid, …): becomes an `isError` result. */
export class DomainError extends Error {}

/** Success: the body as compact JSON text (hosts and the demo model parse it) and as structuredContent. */
export function ok(body: Record<string, unknown>): StoredToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(body) }], structuredContent: body };
}

export function fail(message: string): StoredToolResult {
  return { content: [{ type: 'text', text: message }], isError: true };
}

// Type aliases, not interfaces: both SDKs' result types have index signatures.
export type JsonResourceResult = {
  contents: Array<{ uri: string; mimeType: string; text: string }>;
};

export function jsonResource(uri: URL, value: unknown): JsonResourceResult {
  return { contents: [{ uri: uri.href, mimeType: 'application/json', text: JSON.stringify(value, null, 2) }] };
}

/** Money is compared in cents: 250, 250.0 and 250.001 are the same amount, 249.99 is not. */
export function cents(amount: number): number {
  return Math.round(amount * 100);
}

export function money(amount: number, currency: string): string {
  return `${amount.toFixed(2)} ${currency}`;
}

/** "YYYY-MM-DD" that is a real calendar date. */
export function isIsoDate(value: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(value)) return false;
  const date = new Date(`${value}T00:00:00Z`);
  return !Number.isNaN(date.getTime()) && date.toISOString().startsWith(value);
}

/** The records of one tenant. */
export function ofTenant<T extends { tenantId: string }>(records: readonly T[], tenantId: string): T[] {
  return records.filter((r) => r.tenantId === tenantId);
}

// ------------------------------------------------------------------ one request, as either SDK hands it over

export type ProgressParams = {
  progressToken: string | number;
  progress: number;
  total: number;
  message: string;
};

/** What a tool or resource needs of the request it answers, whichever SDK received it. */
export interface CallContext {
  /** The request's `_meta` (on 2026-07-28 without the protocol's own envelope keys). */
  meta: Record<string, unknown> | undefined;
  signal: AbortSignal;
  /** Sends `notifications/progress` related to this request. */
  progress(params: ProgressParams): Promise<void>;
  /** The protocol revision the request itself names, when it names one (logged with each call). */
  protocol?: string;
}

export interface ToolAnnotations {
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

export type ToolArgs<Shape extends z.ZodRawShape> = z.output<z.ZodObject<Shape>>;

export interface ToolConfig<Shape extends z.ZodRawShape> {
  title: string;
  description: string;
  inputSchema: Shape;
  annotations: ToolAnnotations;
}

export interface ResourceConfig {
  title: string;
  description: string;
  mimeType: string;
}

/** Where a server puts its tools and resources: one implementation per SDK. */
export interface Registrar {
  tool<Shape extends z.ZodRawShape>(name: string, config: ToolConfig<Shape>, run: (args: ToolArgs<Shape>, call: CallContext) => Promise<StoredToolResult>): void;
  resource(name: string, uri: string, config: ResourceConfig, read: (uri: URL, call: CallContext) => Promise<JsonResourceResult>): void;
}

// ------------------------------------------------------------------ who is calling

export interface Caller {
  tenantId: string;
  /** The user context's `id`, when the host sent one. */
  userId?: string;
  role?: string;
  scopes: string[];
  traceId?: string;
  /** W3C trace context of the host's span for this request (`_meta.traceparent`, MCP 2026-07-28). */
  traceparent?: string;
  /** The host's idempotency key for this tools/call, when it sent one. */
  idempotencyKey?: string;
}

const TENANT_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/;

/**
 * Reads `_meta[USER_CONTEXT_META_KEY]` (`{ id, role, tenant, scopes }`, every field optional) and the
 * other host keys. No user context, or one without `tenant`, means the default tenant; a malformed
 * one is refused rather than silently widened to the default.
 */
export function callerOf(meta: Record<string, unknown> | undefined, defaultTenant: string): Caller {
  const rawUser = meta?.[USER_CONTEXT_META_KEY];
  let user: Record<string, unknown> = {};
  if (rawUser !== undefined && rawUser !== null) {
    if (typeof rawUser !== 'object' || Array.isArray(rawUser)) throw new DomainError('invalid user context: expected an object');
    user = rawUser as Record<string, unknown>;
  }
  let tenantId = defaultTenant;
  if (user.tenant !== undefined && user.tenant !== null) {
    if (typeof user.tenant !== 'string' || !TENANT_PATTERN.test(user.tenant)) {
      throw new DomainError('invalid user context: tenant must be 1-64 letters, digits, "_", "." or "-"');
    }
    tenantId = user.tenant;
  }
  const caller: Caller = { tenantId, scopes: [] };
  if (typeof user.id === 'string' && user.id !== '') caller.userId = user.id;
  if (typeof user.role === 'string' && user.role !== '') caller.role = user.role;
  if (Array.isArray(user.scopes)) caller.scopes = user.scopes.filter((s): s is string => typeof s === 'string');
  const trace = meta?.[TRACE_META_KEY];
  if (typeof trace === 'string' && trace !== '') caller.traceId = trace;
  const traceparent = meta?.['traceparent'];
  if (typeof traceparent === 'string' && /^[\da-f]{2}-[\da-f]{32}-[\da-f]{16}-[\da-f]{2}$/.test(traceparent)) caller.traceparent = traceparent;
  const key = meta?.[IDEMPOTENCY_KEY_META_KEY];
  if (typeof key === 'string' && key !== '') caller.idempotencyKey = key;
  return caller;
}

// ------------------------------------------------------------------ runtime

export interface Runtime {
  server: ServerName;
  store: SchoolStore;
  defaultTenant: string;
  delays: Map<string, number>;
  /** SCHOOL_TOOL_HOLD_MS: how long a side-effecting tool holds its result after applying its effect. */
  holds: Map<string, number>;
  env: NodeJS.ProcessEnv;
  log: (message: string) => void;
}

export function createRuntime(server: ServerName, dataFile: string, env: NodeJS.ProcessEnv = process.env): Runtime {
  const log = makeLogger(server);
  const defaultTenant = env.SCHOOL_DEFAULT_TENANT || 'demo';
  if (!TENANT_PATTERN.test(defaultTenant)) throw new Error('SCHOOL_DEFAULT_TENANT must be 1-64 letters, digits, "_", "." or "-"');
  const delays = parseDelays(env.SCHOOL_TOOL_DELAY_MS);
  const holds = parseDelays(env.SCHOOL_TOOL_HOLD_MS, 'SCHOOL_TOOL_HOLD_MS');
  return { server, store: new SchoolStore(dataFile, log), defaultTenant, delays, holds, env, log };
}

// ------------------------------------------------------------------ fault hook

/**
 * SCHOOL_TOOL_DELAY_MS="process_payment=3000,send_bulk=500": those tools wait that long before doing
 * anything, sending notifications/progress every 200 ms (when the request has a progressToken) and
 * stopping early, with no effect, when the request is cancelled. SCHOOL_TOOL_HOLD_MS (same syntax):
 * those side-effecting tools, after applying their effect (not when replaying or refusing), hold the
 * result that long or until the request is cancelled, with progress: a test can lose the answer of an
 * applied effect (a long hold lasts until the client is gone). Off unless set. For chaos tests.
 */
export function parseDelays(spec: string | undefined, variable = 'SCHOOL_TOOL_DELAY_MS'): Map<string, number> {
  const delays = new Map<string, number>();
  if (!spec || spec.trim() === '') return delays;
  for (const part of spec.split(',')) {
    const match = /^\s*([A-Za-z0-9_-]+)\s*=\s*(\d+)\s*$/.exec(part);
    if (!match?.[1] || !match[2]) throw new Error(`${variable}: "${part}" is not tool=milliseconds`);
    delays.set(match[1], Number(match[2]));
  }
  return delays;
}

const PROGRESS_EVERY_MS = 200;

/** Resolves after `ms`, or at once when `signal` aborts. */
const sleep = (ms: number, signal: AbortSignal): Promise<void> => delay(ms, undefined, { signal }).catch(() => undefined);

/** Waits `totalMs` with progress every 200 ms (when the request asked for it); returns the progress sent, early when cancelled. */
async function waitWithProgress(tool: string, totalMs: number, call: CallContext): Promise<number> {
  const progressToken = call.meta?.progressToken;
  const started = Date.now();
  let ticks = 0;
  while (!call.signal.aborted && Date.now() - started < totalMs) {
    await sleep(Math.min(PROGRESS_EVERY_MS, totalMs - (Date.now() - started)), call.signal);
    if (call.signal.aborted) break;
    ticks += 1;
    if (typeof progressToken === 'string' || typeof progressToken === 'number') {
      const elapsed = Math.min(Date.now() - started, totalMs);
      await call.progress({ progressToken, progress: elapsed, total: totalMs, message: `${tool}: waiting (${elapsed}/${totalMs} ms)` }).catch(() => undefined);
    }
  }
  return ticks;
}

/** Waits the configured delay for `tool`, if any. Resolves false when the request was cancelled. */
async function delayHook(rt: Runtime, tool: string, call: CallContext, what: string): Promise<boolean> {
  const totalMs = rt.delays.get(tool);
  if (totalMs === undefined || totalMs <= 0) return !call.signal.aborted;
  rt.log(`${what}: fault hook delaying ${totalMs} ms before the effect`);
  const ticks = await waitWithProgress(tool, totalMs, call);
  if (call.signal.aborted) {
    // Tests look for this line to prove the cancellation reached the server.
    rt.log(`${tool}: cancelled after ${ticks} progress notifications; no effect applied`);
    return false;
  }
  return true;
}

/** Holds the result of `tool`'s just-applied effect for the configured time, if any, or until the request is cancelled. */
async function holdHook(rt: Runtime, tool: string, call: CallContext, what: string): Promise<void> {
  const totalMs = rt.holds.get(tool);
  if (totalMs === undefined || totalMs <= 0) return;
  rt.log(`${what}: fault hook holding the result ${totalMs} ms`);
  await waitWithProgress(tool, totalMs, call);
  if (call.signal.aborted) rt.log(`${tool}: cancelled while its result was held; the effect stays applied`);
}

// ------------------------------------------------------------------ tools and resources

export interface ReadContext {
  caller: Caller;
  data: SchoolData;
}

function describeCall(tool: string, caller: Caller, call: CallContext): string {
  return `${tool} tenant=${caller.tenantId} user=${caller.userId ?? '-'} key=${caller.idempotencyKey ?? '-'} trace=${caller.traceId ?? '-'} traceparent=${caller.traceparent ?? '-'} protocol=${call.protocol ?? '-'}`;
}

/** A deep copy: the SDK must never hold a reference into the store's data. */
const detached = (result: StoredToolResult): StoredToolResult => structuredClone(result);

/** A tool that only reads: no lock, no idempotency record. DomainError → isError result. */
export function readTool<Shape extends z.ZodRawShape>(
  rt: Runtime,
  registrar: Registrar,
  name: string,
  config: ToolConfig<Shape>,
  handler: (args: ToolArgs<Shape>, ctx: ReadContext) => StoredToolResult,
): void {
  registrar.tool(name, config, async (args, call) => {
    try {
      const caller = callerOf(call.meta, rt.defaultTenant);
      if (!(await delayHook(rt, name, call, describeCall(name, caller, call)))) return fail(`${name} was cancelled`);
      return detached(handler(args, { caller, data: await rt.store.read() }));
    } catch (error) {
      if (error instanceof DomainError) return fail(error.message);
      throw error;
    }
  });
}

/**
 * A tool with a side effect, applied exactly once per idempotency key:
 * in ONE locked transaction it looks the key up (namespaced `${server}/${tool}/${tenant}/${key}`);
 * a known key returns the first result and writes nothing; otherwise `effect` runs on a copy of the
 * data, and the changed data plus the result under the key are written together. A DomainError from
 * `effect` discards its changes and records the refusal as the key's result. Without a key (a client
 * other than the host) the effect simply runs.
 */
export function effectTool<Shape extends z.ZodRawShape>(
  rt: Runtime,
  registrar: Registrar,
  name: string,
  config: ToolConfig<Shape>,
  effect: (draft: SchoolData, args: ToolArgs<Shape>, caller: Caller, now: string) => StoredToolResult,
): void {
  registrar.tool(name, config, async (args, call) => {
    let caller: Caller;
    try {
      caller = callerOf(call.meta, rt.defaultTenant);
    } catch (error) {
      if (error instanceof DomainError) return fail(error.message);
      throw error;
    }
    const what = describeCall(name, caller, call);
    if (!(await delayHook(rt, name, call, what))) return fail(`${name} was cancelled before it changed anything`);
    const rawKey = caller.idempotencyKey;
    const slot = rawKey === undefined ? undefined : `${rt.server}/${name}/${caller.tenantId}/${rawKey}`;
    const { result, replayed } = await rt.store.transact((data) => {
      const previous = slot === undefined ? undefined : data.idempotency[slot];
      if (previous) return { value: { result: previous.result, replayed: true } };
      const now = new Date().toISOString();
      let result: StoredToolResult = fail(`${name} did not run`);
      // On a draft (immer): the records the effect does not touch stay the objects read, so the store's log holds only its changes.
      let next = produce(data, (draft) => {
        try {
          result = effect(draft, args, caller, now);
        } catch (error) {
          if (!(error instanceof DomainError)) throw error;
          result = fail(error.message);
        }
        // Copied out while the draft lives: the result may hold records of it.
        result = JSON.parse(JSON.stringify(result)) as StoredToolResult;
      });
      if (result.isError) next = data; // a refusal changes nothing but its own record
      if (slot !== undefined && rawKey !== undefined) {
        const record = { server: rt.server, tool: name, tenantId: caller.tenantId, key: rawKey, result, recordedAt: now };
        next = produce(next, (draft) => {
          draft.idempotency[slot] = record;
        });
      }
      return { value: { result, replayed: false }, ...(next !== data ? { next } : {}) };
    });
    if (replayed) rt.log(`${what}: idempotency key seen before, returning the first result unchanged`);
    else rt.log(`${what}: ${result.isError ? `refused: ${result.content[0]?.text ?? ''}` : 'applied'}`);
    if (!replayed && !result.isError) await holdHook(rt, name, call, what);
    return detached(result);
  });
}

/** A read-only JSON resource scoped to the caller's tenant. */
export function jsonResourceOf(
  rt: Runtime,
  registrar: Registrar,
  name: string,
  uri: string,
  meta: { title: string; description: string },
  read: (data: SchoolData, caller: Caller) => unknown,
): void {
  registrar.resource(name, uri, { ...meta, mimeType: 'application/json' }, async (url, call) => {
    const caller = callerOf(call.meta, rt.defaultTenant);
    return jsonResource(url, read(await rt.store.read(), caller));
  });
}
