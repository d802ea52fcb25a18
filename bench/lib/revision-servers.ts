/**
 * The servers of the bench's MCP revisions section (bench/sections/revisions.ts), in a process of
 * their own so that the bench's CPU is the client's alone: a 2025-11-25 server on the v1 SDK (with
 * sessions, tests/helpers/legacy-server.ts) and a 2026-07-28 server on the v2 server package
 * (tests/helpers/modern-server.ts), both with a `greet` tool whose answers are the same size.
 * Prints `REVISION_SERVERS {"legacy":url,"modern":url}` when both listen; stops on SIGTERM.
 */
import { z } from 'zod';
import { startLegacyServer } from '../../tests/helpers/legacy-server';
import { startModernServer } from '../../tests/helpers/modern-server';

export const READY_LINE = /^REVISION_SERVERS (\{.*\})$/;

async function main(): Promise<void> {
  const legacy = await startLegacyServer((mcp) => {
    mcp.registerTool('greet', { description: 'Greets someone by name.', inputSchema: { name: z.string() } }, ({ name }) => ({
      content: [{ type: 'text', text: `Hello, ${name}, from a 2025-11-25 server.` }],
    }));
  });
  const modern = await startModernServer();
  process.once('SIGTERM', () => {
    void Promise.allSettled([legacy.close(), modern.close()]).then(() => process.exit(0));
  });
  process.stdout.write(`REVISION_SERVERS ${JSON.stringify({ legacy: legacy.url, modern: modern.url })}\n`);
}

if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`revision servers: ${String(err)}\n`);
    process.exit(1);
  });
}
