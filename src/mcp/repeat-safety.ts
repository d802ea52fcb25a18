/**
 * May a tools/call be sent again when its answer was lost? Activities run at least once, and our
 * idempotency key in `_meta` protects only servers that dedupe on it; a third-party server that does
 * not would apply a retried write twice. So a call is repeatable only when something vouches for it:
 * the server's config says it honours the key, the config lists the tool as read-only, or the tool's
 * annotations say it is read-only or idempotent (hints from the server, which the config can widen
 * but the host never narrows into a retry of a write). Everything else is sent again only when the
 * request provably never reached the server (src/mcp/failures.ts, `requestSent`).
 */
import type { CatalogTool } from '../shared/tool-types';
import type { McpServerConfig } from './config';

export interface RepeatSafety {
  repeatable: boolean;
  /** Why, in words for logs and the model. */
  because: string;
}

type ServerProfile = Pick<McpServerConfig, 'honoursIdempotencyKey' | 'readOnlyTools'> | undefined;
type ToolProfile = Pick<CatalogTool, 'tool' | 'annotations'>;

/** Read-only by the config's word or the tool's own annotation: it changes nothing, however often it runs. */
export function isReadOnly(server: ServerProfile, tool: ToolProfile): boolean {
  if (server?.readOnlyTools?.some((p) => (p.endsWith('*') ? tool.tool.startsWith(p.slice(0, -1)) : p === tool.tool))) return true;
  return tool.annotations?.readOnlyHint === true;
}

export function repeatSafety(server: ServerProfile, tool: ToolProfile): RepeatSafety {
  if (server?.honoursIdempotencyKey) return { repeatable: true, because: 'the server honours the idempotency key' };
  if (isReadOnly(server, tool)) return { repeatable: true, because: 'the tool is read-only (its annotation or the config)' };
  if (tool.annotations?.idempotentHint === true) return { repeatable: true, because: 'the tool is annotated idempotent' };
  return { repeatable: false, because: 'the tool is not known to be read-only or idempotent, and the server is not known to honour the idempotency key' };
}
