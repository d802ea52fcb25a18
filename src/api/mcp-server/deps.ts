/** What the host's MCP server is built from, per request (./server.ts, ./resources.ts). */
import type { UserContext } from '../../shared/user';
import type { LiveTextHub } from '../../live/hub';
import type { Logger } from '../../logger';
import type { TurnGateway } from '../gateway';
import type { TurnService } from '../turns';

export interface HostMcpDeps {
  service: TurnService;
  gateway: Pick<TurnGateway, 'getTurn'>;
  live?: LiveTextHub;
  pollMs: number;
  maxMessageChars: number;
  stateKey: string;
  logger?: Pick<Logger, 'error'>;
  /** The verified caller of this request, and the bearer token it sent (sealed for servers that forward it). */
  user: UserContext;
  token: string;
  era: 'legacy' | 'modern';
}
