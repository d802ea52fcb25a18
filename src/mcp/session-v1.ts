/**
 * The pool's session (session.ts) on the v1 SDK: one `Client` over the transport transports.ts
 * builds, with the host's handlers for what the server sends on its own (roots, elicitation,
 * sampling, resource and tool-list notifications).
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  CallToolResultSchema,
  ErrorCode,
  ListRootsRequestSchema,
  McpError,
  ResourceUpdatedNotificationSchema,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { answerServerRequests } from './server-requests';
import type { McpSession, RejoinedSession, SessionHooks, SessionTarget, TaskReader } from './session';
import { createTransport, pidOf, sessionIdOf, terminateHttpSession } from './transports';

const noop = (): void => undefined;

/** The task requests of a v1 client: the connection's own, or a rejoined session's. */
function taskReader(client: Client): TaskReader {
  return {
    getTask: (taskId, limits) => client.experimental.tasks.getTask(taskId, limits),
    getTaskResult: (taskId, limits) => client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema, limits),
    cancelTask: (taskId, limits) => client.experimental.tasks.cancelTask(taskId, limits),
  };
}

export function openV1Session(target: SessionTarget, hooks: SessionHooks): McpSession {
  const { cfg, kind } = target;
  const transport: Transport = createTransport(cfg, kind, (line) => hooks.onStderrLine(line), target.authFetch);
  const client = new Client(target.clientInfo, { capabilities: target.capabilities });
  // The SDK hands the negotiated revision to a transport that takes it (Streamable HTTP keeps it for its
  // header); stdio's does not, so it is kept here.
  let negotiated: string | undefined;
  const versioned = transport as Transport & { setProtocolVersion?(version: string): void; readonly protocolVersion?: string };
  if (!versioned.setProtocolVersion) versioned.setProtocolVersion = (version) => void (negotiated = version);

  // Set before connect: the SDK chains its own handlers after these.
  transport.onerror = (error: Error) => hooks.onTransportError(error);
  client.onclose = () => hooks.onClose();
  client.onerror = (error: Error) => hooks.onProtocolError(error);
  client.setRequestHandler(ListRootsRequestSchema, () => ({ roots: hooks.roots() }));
  answerServerRequests(client, hooks.serverRequests);
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (notification) => hooks.onResourceUpdated(notification.params.uri));
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => hooks.onToolsChanged());

  return {
    kind,
    ...taskReader(client),

    async connect(timeoutMs) {
      try {
        await client.connect(transport, { timeout: timeoutMs });
      } catch (error) {
        if (kind === 'stdio' && error instanceof McpError && error.code === ErrorCode.ConnectionClosed) {
          throw new Error('server process exited before completing the MCP handshake (its stderr is in the debug log)');
        }
        throw error;
      }
    },
    pid: () => pidOf(transport),
    sessionId: () => sessionIdOf(transport),
    protocolVersion: () => versioned.protocolVersion ?? negotiated,
    serverCapabilities: () => client.getServerCapabilities(),
    taskMode: () => 'per-tool',

    callTool: (params, options) => client.callTool(params, CallToolResultSchema, options),

    async callToolAsTask(params, options, task) {
      const stream = client.experimental.tasks.callToolStream(params, CallToolResultSchema, { ...options, task: { ttl: task.ttlMs } });
      for await (const message of stream) {
        if (message.type === 'taskCreated') {
          task.onCreated(message.task.taskId);
        } else if (message.type === 'result') {
          return message.result;
        } else if (message.type === 'error') {
          throw message.error;
        }
      }
      throw new Error('the task ended without a result');
    },

    async rejoin(sessionId, connectMs): Promise<RejoinedSession> {
      const rejoined = new Client(target.clientInfo, { capabilities: target.capabilities });
      await rejoined.connect(createTransport(cfg, 'streamable-http', noop, target.authFetch, sessionId), { timeout: connectMs });
      return {
        ...taskReader(rejoined),
        // Leave the session to the server (its other tasks may still be wanted); only close our side.
        leave: async () => {
          await rejoined.transport?.close().catch(noop);
        },
      };
    },

    listTools: (cursor, limits) => client.listTools(cursor !== undefined ? { cursor } : undefined, limits),
    listResources: (params, limits) => client.listResources(params, limits),
    readResource: (params, limits) => client.readResource(params, limits),
    getPrompt: (params, limits) => client.getPrompt(params, limits),
    subscribeResource: (uri) => client.subscribeResource({ uri }),
    ping: (timeoutMs) => client.ping({ timeout: timeoutMs }),
    sendRootsListChanged: () => client.sendRootsListChanged(),

    terminateSession: () => terminateHttpSession(transport),
    close: () => client.close(),
  };
}
