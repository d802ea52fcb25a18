/**
 * The tool catalog the LLM sees: every enabled server's tools under stable, collision-free names
 * (`server__tool`, see src/shared/tool-names.ts), with the annotations the policy and the UI use, plus
 * each server's status.
 */
import { ErrorCode, McpError, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { buildToolIndex } from '../shared/tool-names';
import type { Catalog, CatalogTool, ServerStatus } from '../shared/tool-types';
import { cacheHintOf, combineHints, type CacheHint } from './cache-hints';
import type { McpSession } from './session';

/** One server's listing as the pool found it (no tools when it is disabled or unavailable). */
export interface ServerListing {
  server: string;
  tools: readonly Tool[];
  status: ServerStatus;
}

const MAX_LIST_PAGES = 100;

export function buildCatalog(listings: readonly ServerListing[]): Catalog {
  const index = buildToolIndex(listings.flatMap(({ server, tools }) => tools.map((t) => ({ server, tool: t.name }))));
  const nameOf = new Map<string, string>();
  for (const [name, ref] of index) nameOf.set(`${ref.server}\u0000${ref.tool}`, name);

  const tools: CatalogTool[] = [];
  for (const { server, tools: serverTools } of listings) {
    const seen = new Set<string>();
    for (const tool of serverTools) {
      // A server listing one name twice would otherwise give the LLM two tools with one name.
      if (seen.has(tool.name)) continue;
      seen.add(tool.name);
      const name = nameOf.get(`${server}\u0000${tool.name}`);
      if (name === undefined) continue;
      const annotations = pickAnnotations(tool);
      tools.push({
        name,
        server,
        tool: tool.name,
        ...(tool.description !== undefined ? { description: tool.description } : {}),
        inputSchema: tool.inputSchema as Record<string, unknown>,
        ...(annotations ? { annotations } : {}),
      });
    }
  }
  return { tools, servers: listings.map((l) => l.status) };
}

/**
 * Every page of `tools/list` within `listMs` in all. A server without the tools capability (resources
 * or prompts only) simply has none. `truncated` is set when the server kept paging past the limit;
 * `cache` is the pages' caching hint as one, where the revision has them (cache-hints.ts).
 */
export async function listAllTools(
  session: Pick<McpSession, 'listTools' | 'serverCapabilities' | 'protocolVersion'>,
  listMs: number,
): Promise<{ tools: Tool[]; truncated: boolean; cache?: CacheHint }> {
  if (!session.serverCapabilities()?.tools) return { tools: [], truncated: false };
  const deadline = Date.now() + listMs;
  const tools: Tool[] = [];
  const seenCursors = new Set<string>();
  let cursor: string | undefined;
  let cache: CacheHint | undefined;
  const withHint = (truncated: boolean) => ({ tools, truncated, ...(cache ? { cache } : {}) });
  for (let page = 0; page < MAX_LIST_PAGES; page++) {
    const remaining = deadline - Date.now();
    if (remaining <= 0) throw new McpError(ErrorCode.RequestTimeout, `listing tools took longer than ${listMs} ms`);
    const result = await session.listTools(cursor, { timeout: remaining });
    tools.push(...result.tools);
    const hint = cacheHintOf(result, session.protocolVersion?.());
    cache = page === 0 ? hint : combineHints(cache, hint);
    cursor = result.nextCursor;
    // A repeated cursor would loop forever; treat it as the end.
    if (cursor === undefined || seenCursors.has(cursor)) return withHint(false);
    seenCursors.add(cursor);
  }
  return withHint(true);
}

function pickAnnotations(tool: Tool): CatalogTool['annotations'] {
  const source = (tool.annotations ?? {}) as Record<string, unknown>;
  const out: NonNullable<CatalogTool['annotations']> = {};
  const title = typeof source['title'] === 'string' ? source['title'] : tool.title;
  if (typeof title === 'string') out.title = title;
  for (const key of ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint'] as const) {
    const value = source[key];
    if (typeof value === 'boolean') out[key] = value;
  }
  return Object.keys(out).length > 0 ? out : undefined;
}
