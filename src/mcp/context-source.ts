import type { ListedResourceEntry } from './resources';

/** Reads the context a turn asks for (resources and prompts), rendered as text for the LLM. */
export interface McpContextSource {
  /** The resources `server` lists for the caller in `meta` (adaptive context); absent: the source lists none. */
  listResources?(server: string, opts?: { signal?: AbortSignal; meta?: Record<string, unknown> }): Promise<ListedResourceEntry[]>;
  /** `meta` goes into the request's `_meta` (the caller's context: servers scope what they return). */
  readResource(server: string, uri: string, opts?: { signal?: AbortSignal; meta?: Record<string, unknown> }): Promise<string>;
  getPrompt(
    server: string,
    name: string,
    args?: Record<string, string>,
    opts?: { signal?: AbortSignal; meta?: Record<string, unknown> },
  ): Promise<string>;
}
