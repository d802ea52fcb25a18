/**
 * A school server on MCP 2026-07-28, served by the v2 server package (`@modelcontextprotocol/server`):
 * the same SDK-neutral tools and resources (core.ts) registered on a v2 `McpServer`, over Streamable
 * HTTP (`createMcpHandler`, one instance per request, no session) or stdio (`serveStdio`). Only the new
 * revision is served: a 2025 request (`initialize`, or a request without the per-request `_meta`
 * envelope) is refused and logged (`refused: …`), so every call a client gets answered spoke 2026-07-28.
 * Each tool call's log line names the revision its own request carried (`protocol=2026-07-28`).
 */
import { toNodeHandler } from '@modelcontextprotocol/node';
import { createMcpHandler, McpServer, PROTOCOL_VERSION_META_KEY, type ServerContext } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { z } from 'zod';
import { listenHttp, type Serve } from './common';
import type { CallContext, Registrar, Runtime } from './core';

/** A request as the v2 package hands it over: the revision from its envelope. */
function modernCall(ctx: ServerContext): CallContext {
  const revision = (ctx.mcpReq.envelope as Record<string, unknown> | undefined)?.[PROTOCOL_VERSION_META_KEY];
  return {
    meta: ctx.mcpReq._meta as Record<string, unknown> | undefined,
    signal: ctx.mcpReq.signal,
    progress: (params) => ctx.mcpReq.notify({ method: 'notifications/progress', params }),
    ...(typeof revision === 'string' ? { protocol: revision } : {}),
  };
}

/** Registers the SDK-neutral tools and resources on a v2 `McpServer`. */
export function modernRegistrar(server: McpServer): Registrar {
  return {
    tool: (name, config, run) => {
      const inputSchema = z.object(config.inputSchema);
      server.registerTool(name, { ...config, inputSchema }, ((args: never, ctx: ServerContext) => run(args, modernCall(ctx))) as never);
    },
    resource: (name, uri, config, read) => {
      server.registerResource(name, uri, config, (url, ctx) => read(url, modernCall(ctx)));
    },
  };
}

export interface ModernDefinition {
  info: { name: string; version: string };
  register: (rt: Runtime, registrar: Registrar) => void;
}

/** What `runServer` calls for `--protocol 2026-07-28`: the server of `def`, over HTTP or stdio. */
export function modernServe(def: ModernDefinition): Serve {
  return async (opts, rt, urlVariable) => {
    const create = (): McpServer => {
      const server = new McpServer(def.info);
      def.register(rt, modernRegistrar(server));
      return server;
    };
    const onerror = (error: Error): void => rt.log(`refused: ${error.message}`);
    if (opts.mode === 'stdio') {
      const handle = serveStdio(create, { legacy: 'reject', onerror });
      return () => handle.close();
    }
    const handler = createMcpHandler(create, { legacy: 'reject', onerror });
    const close = await listenHttp(opts, rt, urlVariable, toNodeHandler(handler));
    return async () => {
      await handler.close();
      await close();
    };
  };
}
