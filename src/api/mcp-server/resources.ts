/**
 * The caller's transcripts and turn records as resources of the host's MCP server, and, in a 2025
 * session, subscriptions to a running turn's record: the session's server follows the turn (the one
 * follower SSE and the WebSocket use) and sends `notifications/resources/updated` at each of its
 * events, until the turn ends or the client unsubscribes or goes away.
 */
import { type McpServer, ProtocolError, ProtocolErrorCode, ResourceTemplate } from '@modelcontextprotocol/server';
import { SessionId, TurnId } from '../contract';
import { followTurn } from '../turn-follower';
import type { HostMcpDeps } from './deps';

export const SCHEME = 'durable-host';
const TURN_URI = new RegExp(`^${SCHEME}://turns/([^/?#]+)$`);

export function registerResources(server: McpServer, deps: HostMcpDeps): void {
  const { service, user } = deps;
  const json = (uri: URL, value: unknown) => ({ contents: [{ uri: uri.href, mimeType: 'application/json', text: JSON.stringify(value, null, 2) }] });
  server.registerResource(
    'transcript',
    new ResourceTemplate(`${SCHEME}://sessions/{sessionId}`, {
      list: async () => ({
        resources: (await service.sessions(user, 100)).sessions.map((s) => ({
          uri: `${SCHEME}://sessions/${s.sessionId}`,
          name: `session ${s.sessionId}`,
          mimeType: 'application/json',
        })),
      }),
    }),
    { title: 'Session transcript', description: 'One of your sessions: its messages and what it is doing now.', mimeType: 'application/json' },
    async (uri, { sessionId }) => json(uri, await service.session(user, SessionId.parse(String(sessionId)))),
  );
  server.registerResource(
    'turn',
    new ResourceTemplate(`${SCHEME}://turns/{turnId}`, { list: undefined }),
    {
      title: 'Turn record',
      description: 'One of your turns: status, answer, tool calls, pending approvals. Subscribe (2025 sessions) to hear of each change while it runs.',
      mimeType: 'application/json',
    },
    async (uri, { turnId }) => json(uri, await service.view(user, TurnId.parse(String(turnId)))),
  );
  if (deps.era === 'legacy') registerTurnSubscriptions(server, deps);
}

function registerTurnSubscriptions(server: McpServer, deps: HostMcpDeps): void {
  const following = new Map<string, () => void>();
  const stopAll = () => {
    for (const stop of following.values()) stop();
    following.clear();
  };
  const previousOnClose = server.server.onclose;
  server.server.onclose = () => {
    stopAll();
    previousOnClose?.();
  };

  server.server.setRequestHandler('resources/subscribe', async (request) => {
    const uri = request.params.uri;
    const match = TURN_URI.exec(uri);
    const turnId = match ? TurnId.safeParse(decodeURIComponent(match[1] ?? '')) : undefined;
    if (!turnId?.success) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Only turn records (${SCHEME}://turns/{turnId}) can be subscribed to.`);
    // The caller's own turn (or one they approve for), or a 404 as for reading it.
    const first = await deps.service.turn(deps.user, turnId.data).catch(() => {
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Resource not found: ${uri}`);
    });
    if (following.has(uri)) return {};
    const feed = followTurn({ gateway: deps.gateway, ...(deps.live ? { live: deps.live } : {}) }, { turnId: turnId.data, first, after: first.events.at(-1)?.id ?? 0, pollMs: deps.pollMs });
    following.set(uri, () => feed.stop());
    const updated = () => server.server.notification({ method: 'notifications/resources/updated', params: { uri } }).catch(() => undefined);
    void (async () => {
      try {
        for await (const item of feed) {
          if (item.type === 'event') await updated();
          if (item.type === 'end') break;
        }
      } finally {
        feed.stop();
        following.delete(uri);
      }
    })();
    return {};
  });

  server.server.setRequestHandler('resources/unsubscribe', async (request) => {
    following.get(request.params.uri)?.();
    following.delete(request.params.uri);
    return {};
  });
}
