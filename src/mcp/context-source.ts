import type { HintedRead } from './resource-cache';
import type { ListedResourceEntry } from './resources';

/** Reads the context a turn asks for (resources and prompts), rendered as text for the LLM. */
export interface McpContextSource {
  /** The resources `server` lists for the caller in `meta` (adaptive context); absent: the source lists none. */
  listResources?(server: string, opts?: { signal?: AbortSignal; meta?: Record<string, unknown> }): Promise<ListedResourceEntry[]>;
  /** `meta` goes into the request's `_meta` (the caller's context: servers scope what they return). */
  readResource(server: string, uri: string, opts?: { signal?: AbortSignal; meta?: Record<string, unknown> }): Promise<string>;
  /** The same read with the server's caching hint (MCP 2026-07-28), for a cache above the source; absent: no hints. */
  readResourceHinted?(server: string, uri: string, opts?: { signal?: AbortSignal; meta?: Record<string, unknown> }): Promise<HintedRead>;
  getPrompt(
    server: string,
    name: string,
    args?: Record<string, string>,
    opts?: { signal?: AbortSignal; meta?: Record<string, unknown> },
  ): Promise<string>;
}
