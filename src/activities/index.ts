import { hostname } from 'node:os';
import { Context } from '@temporalio/activity';
import { isReadOnly } from '../mcp/repeat-safety';
import { scrubSecrets } from '../security/secrets';
import type { ContextPiece } from '../core/host-loop';
import type { AuditRequest } from '../shared/audit';
import type { Catalog, CatalogRefs, CatalogTool } from '../shared/tool-types';
import type { ContextSpec, LlmRequest, LlmToolSpec } from '../shared/turn';
import type { UserContext } from '../shared/user';
import { createSessionLinkActivities } from './session-link';
import type { ActivityDeps } from './deps';
import { createLlmActivities } from './llm';
import { createToolSearch } from './tool-search';
import { createHostTools, hostToolSpec, withHostToolSpecs } from './host-tools';
import { errorMessage, heartbeatsEvery, userMeta } from './shared';
import { createToolCallActivity } from './tool-call';

export type { SummarizeInput } from './llm';
export type { ToolCallInput } from './tool-call';

export type { ActivityDeps, ArgumentCheck } from './deps';

export interface GatheredContext {
  pieces: ContextPiece[];
  failures: { server: string; ref: string; error: string }[];
}

/** Activities are closures over the worker's long-lived dependencies; the worker owns their lifetimes. */
export function createActivities(deps: ActivityDeps) {
  const withHeartbeats = heartbeatsEvery(deps.heartbeatEveryMs ?? 5_000);
  const workerId = deps.workerId ?? `${process.pid}@${hostname()}`;
  const scrub = (text: string) => scrubSecrets(text, deps.secrets);
  /** The catalog this worker listed last: what tool names in an LLM request resolve against. */
  let lastCatalog: Catalog | undefined;
  const catalog = async (): Promise<Catalog> => (lastCatalog = await deps.hub.catalog());

  const known = (c: Catalog | undefined) => new Map((c?.tools ?? []).map((t) => [t.name, t] as const));
  /** Searches a catalog too large to offer whole (docs/decisions/0032). */
  const search = createToolSearch(deps.toolSearch);
  /** The host's own tools (search, adaptive context's resource tools), answered without an MCP server. */
  const hostTools = createHostTools(deps, { search, userMeta, scrub });

  /**
   * The tool specs of an LLM request: sent in full (older turns), or by name and resolved here from the
   * catalog (listed again if a name is unknown, e.g. on a worker that has not listed it yet). A name
   * whose tool is gone is left out: the model cannot call what no server offers now.
   */
  async function toolSpecs(req: LlmRequest): Promise<LlmToolSpec[]> {
    if (!req.toolNames) return req.tools;
    const names = req.toolNames.filter((n) => !hostToolSpec(n));
    let byName = known(lastCatalog);
    if (names.some((n) => !byName.has(n))) byName = known(await catalog());
    return search.offer(req, withHostToolSpecs(byName)).specs;
  }

  return {
    ...createSessionLinkActivities(deps.sessions),
    ...createLlmActivities(deps, { specs: toolSpecs, withFound: (response, req) => search.withFound(response, req, known(lastCatalog)), withHeartbeats }),

    async recordAudit(entry: AuditRequest): Promise<void> {
      await deps.audit?.append(entry);
    },

    async listCatalog(): Promise<Catalog> {
      return await catalog();
    },

    /** The catalog as a turn records it: names and servers only (see CatalogRefs). */
    async listToolRefs(): Promise<CatalogRefs> {
      const c = await catalog();
      const readOnly = (t: CatalogTool) => isReadOnly(deps.hub.serverConfig?.(t.server), t);
      const tools = c.tools.map((t) => ({ name: t.name, server: t.server, tool: t.tool, ...(readOnly(t) ? { readOnly: true as const } : {}) }));
      // A catalog too large to offer whole carries the host's search tool (each LLM step decides for its caller);
      // adaptive context, its resource tools.
      return { tools: [...tools, ...hostTools.refs(c)], servers: c.servers };
    },

    async gatherContext(spec: ContextSpec, user?: UserContext): Promise<GatheredContext> {
      const signal = Context.current().cancellationSignal;
      const meta = user ? userMeta(user) : undefined;
      const jobs: Promise<ContextPiece>[] = [
        ...spec.resources.map(async (r): Promise<ContextPiece> => ({
          kind: 'resource',
          server: r.server,
          ref: r.uri,
          text: await deps.hub.readResource(r.server, r.uri, { signal, ...(meta ? { meta } : {}) }),
        })),
        ...spec.prompts.map(async (p): Promise<ContextPiece> => ({
          kind: 'prompt',
          server: p.server,
          ref: p.name,
          text: await deps.hub.getPrompt(p.server, p.name, p.arguments, { signal, ...(meta ? { meta } : {}) }),
        })),
      ];
      const refs = [
        ...spec.resources.map((r) => ({ server: r.server, ref: r.uri })),
        ...spec.prompts.map((p) => ({ server: p.server, ref: p.name })),
      ];
      // One unreadable resource must not cost the whole turn its context: report it and go on.
      const settled = await Promise.allSettled(jobs);
      const result: GatheredContext = { pieces: [], failures: [] };
      settled.forEach((s, i) => {
        const ref = refs[i] as { server: string; ref: string };
        if (s.status === 'fulfilled') result.pieces.push(s.value);
        else result.failures.push({ ...ref, error: scrub(errorMessage(s.reason)) });
      });
      return result;
    },

    ...createToolCallActivity(deps, { withHeartbeats, workerId, scrub, search, hostTools }),
  };
}

export type Activities = ReturnType<typeof createActivities>;
