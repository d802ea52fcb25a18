/**
 * The pool's session (session.ts) on the v2 client (`@modelcontextprotocol/client`), speaking MCP
 * 2026-07-28: no `initialize` handshake (`server/discover`, or a discovery the pool kept from an
 * earlier connection: `connect({ prior })`, no round trip at all), a per-request envelope, and the
 * `Mcp-Method`/`Mcp-Name` headers the SDK sends. Streamable HTTP and stdio; 2026-07-28 has no legacy
 * HTTP+SSE. Which servers get it is session-select.ts's choice (decision 0024).
 *
 * Two things are the pool's rather than the SDK's:
 *
 * - `input_required` runs in manual mode: a server's request for input is answered by the pool's
 *   handlers (input-required.ts), so a question for the user takes the path of decision 0011;
 * - errors are handed on in the v1 SDK's vocabulary (`McpError`, `StreamableHTTPError`), which
 *   failures.ts classifies: one classification for both revisions.
 *
 * MCP tasks on this revision are an extension (`io.modelcontextprotocol/tasks`), spoken when the
 * server's discovery offers it (tasks-v2.ts, decision 0038); a task an earlier attempt started on a
 * 2025 connection cannot be looked up on this one (the tool is then called again, with the same key).
 */
import type { Readable } from 'node:stream';
import {
  Client,
  ProtocolError,
  SdkError,
  SdkErrorCode,
  SdkHttpError,
  StreamableHTTPClientTransport,
  type ClientCapabilities as V2ClientCapabilities,
  type McpSubscription,
  type Transport,
} from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError, type GetPromptResult, type ListResourcesResult, type ListToolsResult, type ReadResourceResult, type ServerCapabilities } from '@modelcontextprotocol/sdk/types.js';
import { InputRefused, MAX_INPUT_ROUNDS, answerInputRequests, isInputRequired, type InputRequired, type InputRetry } from './input-required';
import type { McpSession, RequestLimits, SessionHooks, SessionTarget } from './session';
import { offersTasks, openV2Tasks, type V2Tasks } from './tasks-v2';
import { httpOptions, splitLines, stdioParams } from './transports';
import { callerContext } from './user-token';

export const MODERN_REVISION = '2026-07-28';

const noop = (): void => undefined;

export interface V2SessionOptions {
  /** How long the `server/discover` probe may take (default: the connect timeout). */
  probeMs?: number;
}

/** The connect failed because the server does not speak 2026-07-28 (its discovery did not offer it). */
export function isRevisionMismatch(error: unknown): boolean {
  return error instanceof SdkError && error.code === SdkErrorCode.EraNegotiationFailed;
}

/** The transport of a 2026-07-28 connection: a stdio child with only its configured environment, or Streamable HTTP. */
function createTransport(target: SessionTarget, onStderrLine: (line: string) => void): Transport {
  const cfg = target.cfg;
  if (cfg.kind === 'stdio') {
    const transport = new StdioClientTransport(stdioParams(cfg));
    if (transport.stderr) splitLines(transport.stderr as Readable, onStderrLine);
    return transport;
  }
  if (target.kind === 'sse') throw new Error('MCP 2026-07-28 has no legacy HTTP+SSE transport');
  return new StreamableHTTPClientTransport(new URL(cfg.url), httpOptions(cfg, target.authFetch));
}

/**
 * A v2 error in the words failures.ts knows: the server's JSON-RPC error as an `McpError`, an HTTP
 * status as a `StreamableHTTPError`, the SDK's own timeout and closed connection as the v1 SDK says them.
 */
export function toPoolError(error: unknown, timeoutMs?: number): unknown {
  if (error instanceof ProtocolError) return new McpError(error.code, error.message.replace(/^MCP error -?\d+: /, ''), error.data);
  if (error instanceof InputRefused) return new McpError(ErrorCode.InvalidRequest, error.message);
  if (error instanceof SdkHttpError) return new StreamableHTTPError(error.status, error.message);
  if (error instanceof SdkError) {
    if (error.code === SdkErrorCode.RequestTimeout) return new McpError(ErrorCode.RequestTimeout, 'Request timed out', { timeout: timeoutMs ?? 0 });
    if (error.code === SdkErrorCode.ConnectionClosed) return new McpError(ErrorCode.ConnectionClosed, 'Connection closed');
    if (error.code === SdkErrorCode.InvalidResult) return new McpError(ErrorCode.InvalidRequest, `the server sent a malformed result: ${error.message}`);
  }
  return error;
}

export function openV2Session(target: SessionTarget, hooks: SessionHooks, opts: V2SessionOptions = {}): McpSession {
  const { kind } = target;
  const transport = createTransport(target, (line) => hooks.onStderrLine(line));
  const client = new Client(target.clientInfo, {
    // The same capabilities as on 2025-11-25 (the spec's JSON; the two SDKs type it apart).
    capabilities: target.capabilities as V2ClientCapabilities,
    versionNegotiation: { mode: { pin: MODERN_REVISION }, ...(opts.probeMs !== undefined ? { probe: { timeoutMs: opts.probeMs } } : {}) },
    // Manual mode: the pool answers a server's requests for input itself (input-required.ts).
    inputRequired: { autoFulfill: false },
  });
  const subscriptions: McpSubscription[] = [];
  let closing = false;
  /** The tasks extension, once the server's discovery offered it. */
  let tasks: V2Tasks | undefined;

  transport.onerror = (error: Error) => hooks.onTransportError(toPoolError(error) as Error);
  client.onclose = () => hooks.onClose();
  client.onerror = (error: Error) => hooks.onProtocolError(error);
  client.setNotificationHandler('notifications/resources/updated', (notification) => hooks.onResourceUpdated(notification.params.uri));
  client.setNotificationHandler('notifications/tools/list_changed', () => hooks.onToolsChanged());

  /**
   * A request that may be answered with `input_required`: each round's requests are answered (or
   * the call aborted to ask the user), then the request goes again with the answers.
   */
  async function withInput<T>(limits: RequestLimits, send: (retry: InputRetry | undefined) => Promise<unknown>): Promise<T> {
    let retry: InputRetry | undefined;
    try {
      for (let round = 0; round <= MAX_INPUT_ROUNDS; round++) {
        const result = await send(retry);
        if (!isInputRequired(result)) return result as T;
        retry = await answerInput(result, limits.signal);
      }
      throw new InputRefused(`${hooks.serverRequests.server} kept asking for input (more than ${MAX_INPUT_ROUNDS} rounds)`);
    } catch (error) {
      throw toPoolError(error, limits.timeout);
    }
  }

  /** What a call or a task asks, answered for the call it came in (its async context) — or the user is asked. */
  function answerInput(asked: InputRequired, signal: AbortSignal | undefined): Promise<InputRetry> {
    const caller = callerContext.getStore();
    return answerInputRequests(asked, {
      serverRequests: hooks.serverRequests,
      roots: () => hooks.roots(),
      ...(caller ? { caller } : {}),
      ...(signal ? { signal } : {}),
    });
  }

  /** A task request in the pool's words (failures.ts); without the extension there is no task to ask about. */
  async function onTasks<T>(timeoutMs: number, run: (t: V2Tasks) => Promise<T>): Promise<T> {
    if (!tasks) throw new Error(`${hooks.serverRequests.server} offers no MCP tasks on 2026-07-28`);
    try {
      return await run(tasks);
    } catch (error) {
      throw toPoolError(error, timeoutMs);
    }
  }

  const manual = { allowInputRequired: true } as const;
  /**
   * The host keeps its own caches, per caller (decision 0039): the client's, keyed by neither caller
   * nor `_meta`, must never answer. Listings refresh it (callTool reads tool definitions from it).
   */
  const hostCaches = { list: { cacheMode: 'refresh' }, read: { cacheMode: 'bypass' } } as const;
  const retryParams = (retry: InputRetry | undefined): Record<string, unknown> => retry ?? {};

  /** Tool-list changes come on a `subscriptions/listen` stream in this revision: opened once, in the background. */
  function listenForToolChanges(): void {
    if (!client.getServerCapabilities()?.tools?.listChanged) return;
    client.listen({ toolsListChanged: true }).then(
      (subscription) => (closing ? void subscription.close().catch(noop) : subscriptions.push(subscription)),
      (error: unknown) => hooks.onProtocolError(error instanceof Error ? error : new Error(String(error))),
    );
  }

  return {
    kind,

    async connect(timeoutMs) {
      const prior = target.discovery?.get();
      try {
        await client.connect(transport, { timeout: timeoutMs, ...(prior?.kind === 'modern' ? { prior } : {}) });
      } catch (error) {
        throw toPoolError(error, timeoutMs);
      }
      const discover = client.getDiscoverResult();
      if (discover) target.discovery?.set({ kind: 'modern', discover });
      if (offersTasks(client.getServerCapabilities())) {
        tasks = openV2Tasks(client, transport, {
          endpointId: target.cfg.name,
          revision: MODERN_REVISION,
          clientInfo: target.clientInfo,
          clientCapabilities: target.capabilities as Record<string, unknown>,
          answer: answerInput,
        });
      }
      listenForToolChanges();
    },
    pid: () => (transport instanceof StdioClientTransport ? (transport.pid ?? undefined) : undefined),
    // 2026-07-28 has no sessions.
    sessionId: () => undefined,
    protocolVersion: () => MODERN_REVISION,
    serverCapabilities: () => client.getServerCapabilities() as ServerCapabilities | undefined,
    taskMode: () => (tasks ? 'per-call' : 'none'),

    callTool: (params, options) =>
      withInput(options, (retry) => client.callTool({ ...params, ...retryParams(retry) } as Parameters<Client['callTool']>[0], { ...options, ...manual })),
    // The call declares the tasks extension; the server answers with a result, a question, or a task.
    callToolAsTask: (params, options, task) =>
      withInput(options, (retry) => (tasks ? tasks.callRound({ ...params, ...retryParams(retry) }, options, task) : client.callTool({ ...params, ...retryParams(retry) } as Parameters<Client['callTool']>[0], { ...options, ...manual }))),
    rejoin: () => Promise.reject(new Error('MCP 2026-07-28 has no sessions to rejoin')),
    getTask: (taskId, limits) => onTasks(limits.timeout, (t) => t.getTask(taskId, limits)),
    getTaskResult: (taskId, limits) => onTasks(limits.timeout, (t) => t.getTaskResult(taskId, limits)),
    cancelTask: (taskId, limits) => onTasks(limits.timeout, (t) => t.cancelTask(taskId, limits)),

    async listTools(cursor, limits) {
      try {
        return (await client.listTools(cursor !== undefined ? { cursor } : undefined, { ...limits, ...hostCaches.list })) as unknown as ListToolsResult;
      } catch (error) {
        throw toPoolError(error, limits.timeout);
      }
    },
    async listResources(params, limits) {
      try {
        return (await client.listResources(params as Parameters<Client['listResources']>[0], { ...limits, ...hostCaches.read })) as unknown as ListResourcesResult;
      } catch (error) {
        throw toPoolError(error, limits.timeout);
      }
    },
    readResource: (params, limits) =>
      withInput<ReadResourceResult>(limits, (retry) => client.readResource({ ...params, ...retryParams(retry) } as Parameters<Client['readResource']>[0], { ...limits, ...manual, ...hostCaches.read })),
    getPrompt: (params, limits) =>
      withInput<GetPromptResult>(limits, (retry) => client.getPrompt({ ...params, ...retryParams(retry) } as Parameters<Client['getPrompt']>[0], { ...limits, ...manual })),

    async subscribeResource(uri) {
      const subscription = await client.listen({ resourceSubscriptions: [uri] });
      if (closing) await subscription.close().catch(noop);
      else subscriptions.push(subscription);
    },
    // 2026-07-28 has no `ping`: `server/discover` is its cheapest request, and it freshens the kept discovery.
    async ping(timeoutMs) {
      try {
        const discover = await client.discover({ timeout: timeoutMs });
        target.discovery?.set({ kind: 'modern', discover });
        return discover;
      } catch (error) {
        throw toPoolError(error, timeoutMs);
      }
    },
    // Roots are read afresh at each `input_required` round: there is nothing to announce.
    sendRootsListChanged: () => Promise.resolve(),

    terminateSession: () => Promise.resolve(),
    async close() {
      closing = true;
      await Promise.all(subscriptions.splice(0).map((s) => s.close().catch(noop)));
      await tasks?.close().catch(noop);
      await client.close();
    },
  };
}
