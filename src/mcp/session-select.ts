/**
 * Which MCP revision speaks for a server (decision 0024): its config's `protocol` pins one
 * (`2025-11-25`: session-v1.ts; `2026-07-28`: session-v2.ts), and without one (`auto`) an HTTP server
 * is discovered: `server/discover` first, and a server that does not offer 2026-07-28 is spoken to
 * exactly as before, on the v1 SDK. Legacy HTTP+SSE is 2025 only; so is a stdio server under `auto`.
 *
 * Discovery happens once per slot, not per connection: the verdict is kept with the slot (one per
 * server, or per user of a per-user server, so never shared across authorization contexts), and the
 * next connection adopts it: a modern server with no round trip (`connect({ prior })`), a legacy one
 * with its `initialize` only. The pool's first use of a server is its catalog listing (at worker
 * start), so calls find the verdict there.
 */
import type { PriorDiscovery } from '@modelcontextprotocol/client';
import { isHttp4xx } from './failures';
import { isAuthorizationError, noop } from './pool-state';
import type { DiscoveryCache, McpSession, OpenSession, SessionHooks, SessionTarget } from './session';
import { openV1Session } from './session-v1';
import { isRevisionMismatch, openV2Session } from './session-v2';

/** A legacy verdict is trusted this long (an upgraded server still answers `initialize`, so it would never be found out). */
const LEGACY_VERDICT_MS = 60 * 60_000;
/** The longest the `server/discover` probe may take, leaving the rest of the connect timeout to a 2025 handshake. */
const PROBE_MS = 3_000;

/** A slot's discovery verdict (session.ts `DiscoveryCache`). */
export class SlotDiscovery implements DiscoveryCache {
  private verdict?: { value: PriorDiscovery; at: number };

  constructor(private readonly now: () => number = Date.now) {}

  get(): PriorDiscovery | undefined {
    const verdict = this.verdict;
    if (verdict?.value.kind === 'legacy' && this.now() - verdict.at > LEGACY_VERDICT_MS) this.verdict = undefined;
    return this.verdict?.value;
  }

  set(value: PriorDiscovery): void {
    this.verdict = { value, at: this.now() };
  }

  forget(): void {
    this.verdict = undefined;
  }
}

/** The session for `target`'s server, by its configured `protocol`. */
export const openSessionFor: OpenSession = (target, hooks) => {
  const protocol = target.cfg.protocol;
  // A stdio server is discovered only when pinned: the SDK probes on a second child process, which at a
  // worker's start doubles its spawns (measured: the chaos suite's payments server then missed its 2 s
  // connect deadline). Under `auto` a stdio server is spoken to in 2025-11-25, as before.
  // An OAuth-protected server likewise: its probe would run an authorization of its own beside the
  // connection's (the official suite's auth/scope-retry-limit counted 4 attempts where 3 are allowed).
  if (protocol === '2025-11-25' || target.kind === 'sse' || (protocol === undefined && (target.kind === 'stdio' || target.authFetch !== undefined))) {
    return openV1Session(target, hooks);
  }
  if (protocol === '2026-07-28') return openV2Session(target, hooks);
  return openAutoSession(target, hooks);
};

/** An authorization the user has to give, wherever the SDK wrapped it. */
function authorizationIn(error: unknown): unknown {
  for (let current = error, depth = 0; current instanceof Error && depth < 5; current = current.cause, depth++) {
    if (isAuthorizationError(current)) return current;
  }
  return undefined;
}

/**
 * `protocol: auto`: a session that is the v2 one when the server speaks 2026-07-28 and the v1 one
 * otherwise, decided at connect by the slot's verdict or by discovering it.
 */
function openAutoSession(target: SessionTarget, hooks: SessionHooks): McpSession {
  let session: McpSession | undefined;
  // A connection adopted from a kept modern verdict proves it with its first answer; a failure
  // before that sends the next connection to discover again (the server may have changed).
  let unproven = false;
  // Closed by the pool while connecting (a connect timeout): whatever the connect opens later is closed too.
  let closed = false;
  const current = (): McpSession => {
    if (!session) throw new Error('not connected');
    return session;
  };
  const proving = async <T>(request: () => Promise<T>): Promise<T> => {
    try {
      const result = await request();
      unproven = false;
      return result;
    } catch (error) {
      if (unproven) target.discovery?.forget();
      throw error;
    }
  };

  async function connect(timeoutMs: number): Promise<void> {
    const started = Date.now();
    const known = target.discovery?.get();
    let saidLegacy = false;
    if (known?.kind !== 'legacy') {
      // The probe's session must not report its own end to the pool when it is dropped.
      let dropped = false;
      const probeHooks: SessionHooks = {
        ...hooks,
        onClose: () => (dropped ? undefined : hooks.onClose()),
        onTransportError: (error) => (dropped ? undefined : hooks.onTransportError(error)),
      };
      let modern: McpSession | undefined;
      try {
        modern = openV2Session(target, probeHooks, { probeMs: Math.min(PROBE_MS, Math.floor(target.cfg.timeouts.connectMs / 3)) });
        session = modern;
        await modern.connect(timeoutMs);
        unproven = known?.kind === 'modern';
        return;
      } catch (error) {
        dropped = true;
        session = undefined;
        await modern?.close().catch(noop);
        if (closed) throw error;
        const authorization = authorizationIn(error);
        if (authorization) throw authorization;
        if (known) target.discovery?.forget();
        // Only the server's own answer makes it a 2025 server; after a timeout or a network error the
        // next connection asks again.
        saidLegacy = isRevisionMismatch(error) || isHttp4xx(error);
        if (!saidLegacy) hooks.onProtocolError(new Error(`server/discover failed; trying MCP 2025-11-25: ${String(error)}`));
      }
    }
    const legacy = openV1Session(target, hooks);
    session = legacy;
    if (closed) {
      await legacy.close().catch(noop);
      throw new Error('the connection was closed while it was being opened');
    }
    await legacy.connect(Math.max(1, timeoutMs - (Date.now() - started)));
    if (saidLegacy) target.discovery?.set({ kind: 'legacy' });
  }

  return {
    kind: target.kind,
    connect,
    pid: () => session?.pid(),
    sessionId: () => session?.sessionId(),
    protocolVersion: () => session?.protocolVersion?.(),
    serverCapabilities: () => session?.serverCapabilities(),
    taskMode: () => session?.taskMode() ?? 'none',
    callTool: (params, options) => proving(() => current().callTool(params, options)),
    callToolAsTask: (params, options, task) => proving(() => current().callToolAsTask(params, options, task)),
    rejoin: (sessionId, connectMs) => current().rejoin(sessionId, connectMs),
    getTask: (taskId, limits) => current().getTask(taskId, limits),
    getTaskResult: (taskId, limits) => current().getTaskResult(taskId, limits),
    cancelTask: (taskId, limits) => current().cancelTask(taskId, limits),
    listTools: (cursor, limits) => proving(() => current().listTools(cursor, limits)),
    listResources: (params, limits) => proving(() => current().listResources(params, limits)),
    readResource: (params, limits) => proving(() => current().readResource(params, limits)),
    getPrompt: (params, limits) => proving(() => current().getPrompt(params, limits)),
    subscribeResource: (uri) => current().subscribeResource(uri),
    ping: (timeoutMs) => proving(() => current().ping(timeoutMs)),
    sendRootsListChanged: () => current().sendRootsListChanged(),
    terminateSession: () => session?.terminateSession() ?? Promise.resolve(),
    close: () => {
      closed = true;
      return session?.close() ?? Promise.resolve();
    },
  };
}
