/**
 * A small MCP 2026-07-28 server on the v2 server package, for tests of the host's client on that
 * revision (decision 0024): a plain tool, a tool that asks the user through `input_required` before it
 * acts (and acts once per idempotency key), a resource, and two resources with caching hints (one
 * per user, `private`; one for everyone, `public`). Served over Streamable HTTP in the test's
 * own process (`startModernServer`), or over stdio as a child (`node dist/tests/helpers/modern-server.js --stdio`).
 *
 * It records the revision each request came on (`eras`), so a test can tell a 2026 client from a 2025 one.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { McpServer, type Server as LowLevelServer, acceptedContent, createMcpHandler, inputRequired } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { z } from 'zod';
import { IDEMPOTENCY_KEY_META_KEY, USER_CONTEXT_META_KEY } from '../../src/shared/meta';

export const MENU_URI = 'menu://today';
export const MENU_TEXT = "Today's menu: lentil soup, apple pie.";
/** A resource per user, with a caching hint `private` for a minute; and one the same for everyone, `public`. */
export const ACCOUNT_URI = 'account://mine';
export const NOTICE_URI = 'notice://today';
export const CACHE_HINT_TTL_MS = 60_000;
const SIZE_KEY = 'size';

export interface ModernServerState {
  /** The revision of every request the server answered (`modern` for 2026-07-28). */
  eras: string[];
  /** Orders placed, by idempotency key: the side effect a test counts. */
  orders: Map<string, { item: string; size: string }>;
  /** `order` calls that arrived, answered or not. */
  orderCalls: number;
  /** Drinks brewed, by idempotency key (the side effect of the slow tool), its calls, and how long each takes. */
  brews: Map<string, string>;
  brewCalls: number;
  brewMs: number;
  /** Reads of the two hinted resources that reached the server. */
  accountReads: number;
  noticeReads: number;
  /** The `_meta` of each `greet` call and `menu` read, as it arrived (a test reads the trace context in it). */
  metas: Array<{ method: 'tools/call' | 'resources/read'; meta: Record<string, unknown> | undefined }>;
}

export function createModernServer(state: ModernServerState, era = 'modern'): McpServer {
  const server = new McpServer({ name: 'modern-test-server', version: '1.0.0' }, { capabilities: { tools: {}, resources: {} } });
  server.registerTool(
    'greet',
    { description: 'Greets someone by name.', inputSchema: z.object({ name: z.string() }), annotations: { readOnlyHint: true } },
    async ({ name }, ctx) => {
      state.metas.push({ method: 'tools/call', meta: ctx.mcpReq._meta as Record<string, unknown> | undefined });
      return { content: [{ type: 'text', text: `Hello, ${name}, from a 2026-07-28 server.` }] };
    },
  );
  server.registerTool(
    'order',
    {
      description: 'Orders an item of the menu; asks the user which size first.',
      inputSchema: z.object({ item: z.string() }),
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true },
    },
    async ({ item }, ctx) => {
      state.orderCalls += 1;
      const answer = acceptedContent<{ size?: string }>(ctx.mcpReq.inputResponses, SIZE_KEY);
      const declined = ctx.mcpReq.inputResponses?.[SIZE_KEY] !== undefined && answer === undefined;
      if (declined) return { content: [{ type: 'text', text: `No ${item} ordered: the user did not choose a size.` }] };
      if (!answer?.size) {
        return inputRequired({
          inputRequests: {
            [SIZE_KEY]: inputRequired.elicit({
              mode: 'form',
              message: `Which size of ${item}?`,
              requestedSchema: { type: 'object', properties: { size: { type: 'string', enum: ['small', 'large'], title: 'Size' } }, required: ['size'] },
            }),
          },
          requestState: JSON.stringify({ item }),
        });
      }
      if (ctx.mcpReq.requestState() !== JSON.stringify({ item })) {
        return { content: [{ type: 'text', text: 'The requestState did not come back as it was sent.' }], isError: true };
      }
      const key = String((ctx.mcpReq._meta as Record<string, unknown> | undefined)?.[IDEMPOTENCY_KEY_META_KEY] ?? `anonymous-${state.orders.size}`);
      if (!state.orders.has(key)) state.orders.set(key, { item, size: answer.size });
      const order = state.orders.get(key);
      return { content: [{ type: 'text', text: `Ordered a ${order?.size} ${order?.item} (order ${state.orders.size}).` }] };
    },
  );
  server.registerTool(
    'brew',
    {
      description: 'Brews a drink, slowly; brewed once per idempotency key however often it is called.',
      inputSchema: z.object({ drink: z.string() }),
      annotations: { readOnlyHint: false, idempotentHint: false },
    },
    async ({ drink }, ctx) => {
      state.brewCalls += 1;
      await new Promise((resolve) => setTimeout(resolve, state.brewMs));
      const key = String((ctx.mcpReq._meta as Record<string, unknown> | undefined)?.[IDEMPOTENCY_KEY_META_KEY] ?? `anonymous-${state.brews.size}`);
      if (!state.brews.has(key)) state.brews.set(key, drink);
      return { content: [{ type: 'text', text: `Brewed ${state.brews.get(key)}.` }] };
    },
  );
  server.registerResource('menu', MENU_URI, { title: 'Menu', mimeType: 'text/plain' }, async (uri, ctx) => {
    state.eras.push(`${era}:resources/read`);
    state.metas.push({ method: 'resources/read', meta: ctx.mcpReq._meta as Record<string, unknown> | undefined });
    return { contents: [{ uri: uri.href, mimeType: 'text/plain', text: MENU_TEXT }] };
  });
  server.registerResource('account', ACCOUNT_URI, { title: 'My account', mimeType: 'text/plain', cacheHint: { ttlMs: CACHE_HINT_TTL_MS, cacheScope: 'private' } }, async (uri, ctx) => {
    state.accountReads += 1;
    const user = (ctx.mcpReq._meta as Record<string, { id?: string } | undefined> | undefined)?.[USER_CONTEXT_META_KEY]?.id ?? 'nobody';
    return { contents: [{ uri: uri.href, mimeType: 'text/plain', text: `Account of ${user} (read ${state.accountReads}).` }] };
  });
  server.registerResource('notice', NOTICE_URI, { title: 'Notice', mimeType: 'text/plain', cacheHint: { ttlMs: CACHE_HINT_TTL_MS, cacheScope: 'public' } }, async (uri) => {
    state.noticeReads += 1;
    return { contents: [{ uri: uri.href, mimeType: 'text/plain', text: `The kitchen closes at nine (read ${state.noticeReads}).` }] };
  });
  return server;
}

export const newModernState = (): ModernServerState => ({ eras: [], orders: new Map(), orderCalls: 0, brews: new Map(), brewCalls: 0, brewMs: 0, accountReads: 0, noticeReads: 0, metas: [] });

/** Serves the test server over Streamable HTTP on a free loopback port. */
export async function startModernServer(state: ModernServerState = newModernState(), port = 0): Promise<{ url: string; state: ModernServerState; close(): Promise<void> }> {
  return await serveModern(state, (era) => {
    state.eras.push(era);
    return createModernServer(state, era);
  }, port);
}

/** Serves a server made per request (`create`, given the request's era) over Streamable HTTP on loopback. */
export async function serveModern<S>(state: S, create: (era: string) => McpServer | LowLevelServer, port = 0): Promise<{ url: string; state: S; close(): Promise<void> }> {
  const handler = createMcpHandler((ctx) => create(ctx.era));
  const serve = toNodeHandler(handler);
  const http: Server = createServer((req, res) => void serve(req, res));
  await new Promise<void>((resolve) => http.listen(port, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`,
    state,
    close: async () => {
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
      await handler.close();
    },
  };
}

// Over stdio it speaks 2026-07-28 only: a 2025 opening (`initialize`) is refused, so a client that
// gets its tools spoke the new revision.
if (require.main === module && process.argv.includes('--stdio')) {
  const state = newModernState();
  serveStdio((ctx) => createModernServer(state, ctx.era), { legacy: 'reject' });
}
