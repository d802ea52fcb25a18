/** What a span and the duration metric say of one request on a connection (src/telemetry/mcp-spans.ts). */
import type { McpOperation } from '../telemetry/mcp-spans';
import type { Connection, Slot } from './pool-state';

export function mcpOperation(slot: Slot, conn: Connection, op: Pick<McpOperation, 'method' | 'tool' | 'prompt' | 'resourceUri'>): McpOperation {
  const { cfg } = slot;
  const protocolVersion = conn.session.protocolVersion?.();
  const sessionId = conn.session.sessionId();
  return {
    ...op,
    server: cfg.name,
    transport: conn.kind === 'stdio' ? 'stdio' : conn.kind === 'sse' ? 'sse' : 'http',
    ...(cfg.kind === 'http' ? { url: cfg.url } : {}),
    ...(protocolVersion ? { protocolVersion } : {}),
    ...(sessionId ? { sessionId } : {}),
  };
}
