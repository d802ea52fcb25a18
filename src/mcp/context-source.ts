/** Reads the context a turn asks for (resources and prompts), rendered as text for the LLM. */
export interface McpContextSource {
  readResource(server: string, uri: string, opts?: { signal?: AbortSignal }): Promise<string>;
  getPrompt(server: string, name: string, args?: Record<string, string>, opts?: { signal?: AbortSignal }): Promise<string>;
}
