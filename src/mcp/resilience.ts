import type { Logger } from '../logger';
import type { Catalog, ServerStatus, ToolOutcome } from '../shared/tool-types';
import type { McpServerConfig } from './config';
import type { McpContextSource } from './context-source';
import type { ListedResourceEntry } from './resources';
import { isMcpFailure, McpTransientError, saysServerUnwell } from './failures';
import { ResourceCache, perCallerAuthorization, type HintedRead, type ResourceCacheOptions } from './resource-cache';
import { callerContext } from './user-token';
import type { CallToolRequest, CatalogOptions, McpHub } from './types';

/**
 * Seed 000 §9.6–9.7 and seed 004's circuit breaker, in the worker's MCP layer: a server that keeps
 * failing is left alone for a cool-down (calls fail fast, retries back off in Temporal), and resources
 * are cached with a TTL (or a 2026-07-28 server's caching hint: resource-cache.ts), with the last known
 * value kept as a fallback while a server is down.
 */

export interface BreakerOptions {
  /** Consecutive failures saying the server is unwell (src/mcp/failures.ts `saysServerUnwell`) that open the circuit. */
  failureThreshold: number;
  /** How long an open circuit refuses calls before one trial call is let through. */
  cooldownMs: number;
}

export type CircuitState = 'closed' | 'open' | 'half_open';

interface BreakerEntry {
  failures: number;
  openedAt?: number;
  trialInFlight: boolean;
}

export class CircuitBreaker {
  private readonly entries = new Map<string, BreakerEntry>();

  constructor(
    private readonly opts: BreakerOptions,
    private readonly now: () => number = Date.now,
  ) {}

  private entry(server: string): BreakerEntry {
    let e = this.entries.get(server);
    if (!e) {
      e = { failures: 0, trialInFlight: false };
      this.entries.set(server, e);
    }
    return e;
  }

  state(server: string): CircuitState {
    const e = this.entries.get(server);
    if (!e || e.openedAt === undefined) return 'closed';
    return this.now() - e.openedAt >= this.opts.cooldownMs ? 'half_open' : 'open';
  }

  /** Throws a transient error when the circuit refuses the call; otherwise lets it through. */
  admit(server: string): void {
    const e = this.entry(server);
    const state = this.state(server);
    if (state === 'closed') return;
    if (state === 'half_open' && !e.trialInFlight) {
      e.trialInFlight = true;
      return;
    }
    throw new McpTransientError(
      server,
      `circuit open after ${e.failures} consecutive failures; next attempt after ${this.retryAt(server)}`,
    );
  }

  success(server: string): void {
    this.entries.set(server, { failures: 0, trialInFlight: false });
  }

  failure(server: string): void {
    const e = this.entry(server);
    e.failures += 1;
    e.trialInFlight = false;
    // A failed trial re-opens the circuit for another full cool-down.
    if (e.failures >= this.opts.failureThreshold) e.openedAt = this.now();
  }

  retryAt(server: string): string | undefined {
    const e = this.entries.get(server);
    return e?.openedAt === undefined ? undefined : new Date(e.openedAt + this.opts.cooldownMs).toISOString();
  }

  snapshot(server: string): NonNullable<ServerStatus['circuit']> {
    const state = this.state(server);
    const retryAt = state === 'open' ? this.retryAt(server) : undefined;
    return { state, consecutiveFailures: this.entries.get(server)?.failures ?? 0, ...(retryAt ? { retryAt } : {}) };
  }
}

export type { ResourceCacheOptions } from './resource-cache';

const isTransient = (err: unknown) => isMcpFailure(err, 'transient');

export class ResilientHub implements McpHub, McpContextSource {
  readonly breaker: CircuitBreaker;
  private readonly resources: ResourceCache;

  constructor(
    private readonly inner: McpHub & McpContextSource,
    private readonly opts: { breaker: BreakerOptions; cache: ResourceCacheOptions; logger?: Logger; now?: () => number },
  ) {
    this.breaker = new CircuitBreaker(opts.breaker, opts.now);
    this.resources = new ResourceCache(opts.cache, () => this.now());
  }

  private now(): number {
    return (this.opts.now ?? Date.now)();
  }

  private async guarded<T>(server: string, call: () => Promise<T>): Promise<T> {
    this.breaker.admit(server);
    try {
      const result = await call();
      this.breaker.success(server);
      return result;
    } catch (err) {
      if (saysServerUnwell(err)) {
        this.breaker.failure(server);
        if (this.breaker.state(server) === 'open') {
          this.opts.logger?.warn({ server, circuit: this.breaker.snapshot(server) }, 'MCP circuit open');
        }
      } else {
        // Not the server's health: cancelled, refused, or the server answered with an error about
        // this request (one caller's). The server is up: count it as alive and release a trial slot.
        this.breaker.success(server);
      }
      throw err;
    }
  }

  async catalog(opts?: CatalogOptions): Promise<Catalog> {
    const catalog = await this.inner.catalog(opts);
    const servers = catalog.servers.map((s) => this.withCircuit(s));
    const open = new Set(servers.filter((s) => s.circuit?.state === 'open').map((s) => s.server));
    // The model is not offered tools of a server whose circuit is open.
    return { tools: catalog.tools.filter((t) => !open.has(t.server)), servers };
  }

  /** The server's status with its circuit; an open circuit makes it unavailable, and says until when. */
  private withCircuit(s: ServerStatus): ServerStatus {
    const circuit = this.breaker.snapshot(s.server);
    if (circuit.state !== 'open') return { ...s, circuit };
    return {
      ...s,
      state: 'unavailable',
      circuit,
      error: `circuit open after ${circuit.consecutiveFailures} consecutive failures; next attempt after ${circuit.retryAt}`,
    };
  }

  serverConfig(server: string): McpServerConfig | undefined {
    return this.inner.serverConfig?.(server);
  }

  async callTool(req: CallToolRequest): Promise<ToolOutcome> {
    const outcome = await this.guarded(req.server, () => this.inner.callTool(req));
    // A call may have changed what the server's resources say: do not serve them from cache.
    if (!outcome.isError) this.invalidate(req.server);
    return outcome;
  }

  /** Drops the server's cached resources (after a successful call, or when its config changed). */
  invalidate(server: string): void {
    this.resources.dropServer(server);
  }

  /** Drops the cached reads of one resource (the server said it changed). */
  invalidateResource(server: string, uri: string): void {
    this.resources.dropResource(server, uri);
  }

  async listResources(server: string, opts?: { signal?: AbortSignal; meta?: Record<string, unknown> }): Promise<ListedResourceEntry[]> {
    const inner = this.inner;
    if (!inner.listResources) return [];
    return await this.guarded(server, () => inner.listResources?.(server, opts) ?? Promise.resolve([]));
  }

  async readResource(server: string, uri: string, opts?: { signal?: AbortSignal; meta?: Record<string, unknown> }): Promise<string> {
    // What a resource says depends on who asks (tenant, user): cached per caller, shared only when
    // the server says it is the same for everyone (`cacheScope: public`, decision 0039).
    const caller = JSON.stringify({ principal: callerContext.getStore()?.principal ?? null, meta: opts?.meta ?? null });
    const cached = this.resources.find(server, uri, caller);
    if (cached?.fresh) return cached.text;
    try {
      const read = await this.guarded(server, () => this.readInner(server, uri, opts));
      this.resources.put(server, uri, caller, read, !perCallerAuthorization(this.serverConfig(server)));
      return read.text;
    } catch (err) {
      if (cached && isTransient(err) && cached.age < this.opts.cache.maxStaleMs) {
        const asOf = new Date(cached.at).toISOString();
        return `${cached.text}\n[last known data from ${asOf}: server ${server} is unavailable now]`;
      }
      throw err;
    }
  }

  /** The inner source's read with its caching hint, where it gives one. */
  private async readInner(server: string, uri: string, opts?: { signal?: AbortSignal; meta?: Record<string, unknown> }): Promise<HintedRead> {
    if (this.inner.readResourceHinted) return await this.inner.readResourceHinted(server, uri, opts);
    return { text: await this.inner.readResource(server, uri, opts) };
  }

  async getPrompt(
    server: string,
    name: string,
    args?: Record<string, string>,
    opts?: { signal?: AbortSignal; meta?: Record<string, unknown> },
  ): Promise<string> {
    return await this.guarded(server, () => this.inner.getPrompt(server, name, args, opts));
  }

  async status(): Promise<ServerStatus[]> {
    return (await this.inner.status()).map((s) => this.withCircuit(s));
  }

  async close(): Promise<void> {
    await this.inner.close();
  }
}
